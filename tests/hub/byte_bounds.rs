//! Memory bounded in bytes: a stalled listener on a stream of 100 KB
//! resource updates holds at most its byte bound, and a hub-wide bound
//! holds across listeners; everything stays accounted for.

use mcp_subscriptions::queue::Settings;
use mcp_subscriptions::{Event, Filter, Hub, OpenContext, Overflow};
use serde_json::json;

const KB_100: usize = 100 * 1024;

/// A `notifications/resources/updated` for `uri` carrying about 100 KB.
fn big_update(uri: &str) -> Event {
    let params = json!({"uri": uri, "_meta": {"blob": "x".repeat(KB_100)}});
    Event::extension(
        "notifications/resources/updated",
        params.as_object().unwrap().clone(),
        None,
    )
}

#[test]
fn smoke_a_stalled_listener_holds_at_most_its_byte_bound() {
    let bound = 1024 * 1024;
    let hub = Hub::builder()
        .capacity(10_000)
        .max_queued_bytes(bound)
        .build();
    let stalled = hub
        .listen(&Filter::new().with_resource("file:///big"))
        .unwrap();
    let event = big_update("file:///big");
    for _ in 0..1_000 {
        hub.publish(event.clone());
    }
    let stats = stalled.stats();
    assert!(stats.queued_bytes <= bound as u64, "{stats:?}");
    assert_eq!(
        stats.queued_bytes,
        stats.events.queued * event.rendered_len() as u64
    );
    assert_eq!(stats.events.queued, (bound / event.rendered_len()) as u64);
    assert_eq!(stats.events.dropped, 1_000 - stats.events.queued);
    assert!(stats.events.is_balanced());
    assert_eq!(hub.stats().queued_bytes, stats.queued_bytes);
}

#[test]
fn a_listener_may_ask_for_its_own_byte_bound() {
    let hub = Hub::new();
    let small = hub
        .listen_with(
            &Filter::new().with_resource("file:///big"),
            &OpenContext::default().with_queue(Settings::default().with_max_bytes(3 * KB_100)),
        )
        .unwrap();
    let default = hub
        .listen(&Filter::new().with_resource("file:///big"))
        .unwrap();
    for _ in 0..10 {
        hub.publish(big_update("file:///big"));
    }
    assert_eq!(small.stats().events.queued, 2, "two fit in 300 KB");
    assert_eq!(default.stats().events.queued, 10, "16 MiB by default");
}

#[test]
fn a_hub_wide_bound_holds_across_listeners() {
    let bound = 1024 * 1024;
    let hub = Hub::builder().max_hub_queued_bytes(bound).build();
    let listeners: Vec<_> = (0..4)
        .map(|_| {
            hub.listen(&Filter::new().with_resource("file:///big"))
                .unwrap()
        })
        .collect();
    let event = big_update("file:///big");
    for _ in 0..100 {
        hub.publish(event.clone());
    }
    let stats = hub.stats();
    assert!(
        stats.queued_bytes <= bound as u64,
        "one publisher: never over the bound, {}",
        stats.queued_bytes
    );
    assert!(stats.events.dropped > 0);
    assert!(stats.events.is_balanced());
    drop(listeners);
    assert_eq!(hub.stats().queued_bytes, 0);
}

#[test]
fn a_strict_listener_over_its_byte_bound_is_disconnected() {
    let hub = Hub::builder()
        .overflow(Overflow::Disconnect)
        .max_queued_bytes(3 * KB_100)
        .build();
    let mut strict = hub
        .listen(&Filter::new().with_resource("file:///big"))
        .unwrap();
    for _ in 0..5 {
        hub.publish(big_update("file:///big"));
    }
    assert_eq!(hub.stats().listeners_closed.overflow, 1);
    let ends: Vec<_> = std::iter::from_fn(|| strict.try_next()).take(4).collect();
    assert!(
        matches!(
            ends.first(),
            Some(mcp_subscriptions::Next::Failed(
                mcp_subscriptions::error::StreamError::Overflow { .. }
            ))
        ),
        "{ends:?}"
    );
}
