//! `Listener::refilter`: a listener's filter changed in place, as an older
//! revision's session grows and shrinks with its subscribe calls.

use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::hub::{InterestChange, InterestKey};
use mcp_subscriptions::{Filter, Hub, Next};

use crate::support::{drain, event, uri};

fn uris(next: &[Next]) -> Vec<&str> {
    next.iter()
        .map(|next| match next {
            Next::Event(event) => uri(event),
            other => panic!("expected an event, got {other:?}"),
        })
        .collect()
}

#[test]
fn a_refiltered_listener_gets_what_its_new_filter_matches_and_nothing_else() {
    let hub = Hub::new();
    let mut listener = hub
        .listen(&Filter::new().with_resource("a").with_resource("b"))
        .unwrap();
    listener
        .refilter(&Filter::new().with_resource("b").with_resource("c"))
        .unwrap();
    assert_eq!(
        listener
            .filter()
            .resource_subscriptions()
            .collect::<Vec<_>>(),
        ["b", "c"]
    );
    for published in ["a", "b", "c"] {
        hub.notify_resource_updated(published);
    }
    assert_eq!(uris(&drain(&mut listener)), ["b", "c"]);
    assert_eq!(hub.listeners()[0].filter, *listener.filter());
    assert!(hub.stats().events.is_balanced());
}

#[test]
fn what_a_listener_held_stays_queued_across_a_refilter() {
    let hub = Hub::new();
    let mut listener = hub.listen(&Filter::new().with_resource("a")).unwrap();
    hub.notify_resource_updated("a");
    listener
        .refilter(&Filter::new().with_resource("b"))
        .unwrap();
    hub.notify_resource_updated("b");
    assert_eq!(uris(&drain(&mut listener)), ["a", "b"]);
}

#[test]
fn a_listener_refiltered_out_of_a_lane_keeps_its_unread_events_and_its_lane_mates_theirs() {
    let hub = Hub::new();
    let alike = Filter::new().with_tools_list_changed();
    // Two listeners alike share a lane.
    let mut stays = hub.listen(&alike).unwrap();
    let mut leaves = hub.listen(&alike).unwrap();
    hub.notify_tools_list_changed();
    leaves
        .refilter(&alike.clone().with_resource("file:///x"))
        .unwrap();
    hub.notify_tools_list_changed();
    hub.notify_resource_updated("file:///x");
    let methods = |next: Vec<Next>| -> Vec<String> {
        next.into_iter()
            .map(|next| event(Some(next)).method().to_owned())
            .collect()
    };
    assert_eq!(
        methods(drain(&mut leaves)),
        [
            "notifications/tools/list_changed",
            "notifications/tools/list_changed",
            "notifications/resources/updated"
        ]
    );
    assert_eq!(
        methods(drain(&mut stays)),
        [
            "notifications/tools/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    drop((stays, leaves));
    let stats = hub.stats();
    assert!(stats.events.is_balanced());
    assert_eq!(stats.listeners_active, 0);
}

#[test]
fn a_refilter_over_the_uri_limit_is_refused_and_changes_nothing() {
    let hub = Hub::builder().max_uris(2).build();
    let mut listener = hub.listen(&Filter::new().with_resource("a")).unwrap();
    let three = Filter::new()
        .with_resource("a")
        .with_resource("b")
        .with_resource("c");
    let err = listener.refilter(&three).unwrap_err();
    assert!(matches!(err, OpenError::InvalidParams(_)), "{err:?}");
    assert_eq!(
        listener
            .filter()
            .resource_subscriptions()
            .collect::<Vec<_>>(),
        ["a"]
    );
    hub.notify_resource_updated("a");
    assert_eq!(uris(&drain(&mut listener)), ["a"]);
}

#[test]
fn a_refilter_after_the_hub_completed_is_refused() {
    let hub = Hub::new();
    let mut listener = hub.listen(&Filter::new().with_resource("a")).unwrap();
    hub.complete();
    let err = listener
        .refilter(&Filter::new().with_resource("b"))
        .unwrap_err();
    assert!(matches!(err, OpenError::Completed), "{err:?}");
}

#[test]
fn interest_changes_only_for_the_keys_that_came_or_went() {
    let hub = Hub::new();
    let watch = hub.watch_interest();
    let mut listener = hub
        .listen(&Filter::new().with_resource("kept").with_resource("gone"))
        .unwrap();
    let _ = std::iter::from_fn(|| watch.try_next()).count();
    listener
        .refilter(&Filter::new().with_resource("kept").with_resource("new"))
        .unwrap();
    let mut changes: Vec<_> = std::iter::from_fn(|| watch.try_next()).collect();
    changes.sort_by_key(|change| format!("{change:?}"));
    assert_eq!(
        changes,
        [
            InterestChange::Unwatched(InterestKey::Resource("gone".into())),
            InterestChange::Watched(InterestKey::Resource("new".into())),
        ]
    );
}
