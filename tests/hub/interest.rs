//! `Hub::watch_interest`: the keys listeners watch, pushed as they change.

use std::time::Duration;

use mcp_subscriptions::hub::InterestChange;
use mcp_subscriptions::hub::InterestKey;
use mcp_subscriptions::{Filter, Hub, Overflow};
use serde_json::json;

fn uri(uri: &str) -> InterestKey {
    InterestKey::Resource(uri.to_owned())
}

fn drain(watch: &mcp_subscriptions::hub::InterestWatch) -> Vec<InterestChange> {
    std::iter::from_fn(|| watch.try_next()).collect()
}

#[test]
fn smoke_first_arrival_and_last_departure() {
    let hub = Hub::new();
    let watch = hub.watch_interest();
    let one = hub.listen(&Filter::new().with_resource("a")).unwrap();
    let two = hub
        .listen(&Filter::new().with_resource("a").with_resource("b"))
        .unwrap();
    assert_eq!(
        drain(&watch),
        [
            InterestChange::Watched(uri("a")),
            InterestChange::Watched(uri("b"))
        ]
    );
    drop(one);
    assert_eq!(drain(&watch), [], "b still watches a");
    drop(two);
    let mut left = drain(&watch);
    left.sort_by_key(|c| format!("{c:?}"));
    assert_eq!(
        left,
        [
            InterestChange::Unwatched(uri("a")),
            InterestChange::Unwatched(uri("b"))
        ]
    );
}

#[test]
fn a_late_watch_starts_with_what_is_watched_and_extension_keys_count() {
    let hub = Hub::builder()
        .capabilities(mcp_subscriptions::Capabilities::default().with_extension(
            mcp_subscriptions::Extension::new("x/tasks").with_id_list("taskIds", 10),
        ))
        .build();
    let _listener = hub
        .listen(
            &Filter::new()
                .with_resource("a")
                .with_extension("taskIds", json!(["t1"])),
        )
        .unwrap();
    let _everything = hub.listen(&Filter::everything()).unwrap();
    let watch = hub.watch_interest();
    assert_eq!(
        drain(&watch),
        [
            InterestChange::Watched(uri("a")),
            InterestChange::Watched(InterestKey::Extension {
                field: "taskIds".into(),
                key: "t1".into()
            })
        ]
    );
}

#[test]
fn a_listener_its_policy_disconnects_is_unwatched() {
    let hub = Hub::builder()
        .capacity(1)
        .overflow(Overflow::Disconnect)
        .build();
    let watch = hub.watch_interest();
    let _listener = hub.listen(&Filter::new().with_resource("a")).unwrap();
    hub.notify_resource_updated("a");
    hub.notify_resource_updated("a");
    assert_eq!(
        drain(&watch),
        [],
        "watched and unwatched before the watch read either"
    );
}

#[tokio::test]
async fn next_wakes_on_a_change_and_ends_with_the_hub() {
    let hub = Hub::new();
    let watch = hub.watch_interest();
    let opener = hub.clone();
    let open = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        opener.listen(&Filter::new().with_resource("a")).unwrap()
    });
    let change = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap();
    assert_eq!(change, Some(InterestChange::Watched(uri("a"))));
    let listener = open.await.unwrap();
    hub.complete();
    assert_eq!(watch.next().await, None);
    assert!(watch.is_ended());
    drop(listener);
    assert_eq!(watch.try_next(), None);
}
