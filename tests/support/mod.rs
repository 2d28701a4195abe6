//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use mcp_subscriptions::{Event, EventKind, Filter, Hub, Listener, Next};

/// The event inside `next`, or a panic saying what came instead.
pub fn event(next: Option<Next>) -> Event {
    match next {
        Some(Next::Event(event)) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// The URI of a `notifications/resources/updated` event.
pub fn uri(event: &Event) -> &str {
    match event.kind() {
        EventKind::ResourceUpdated { uri } => uri,
        other => panic!("expected a resource update, got {other:?}"),
    }
}

/// A listener for `notifications/tools/list_changed`.
pub fn tools_listener(hub: &Hub) -> Listener {
    hub.listen(&Filter::new().with_tools_list_changed())
        .unwrap()
}

/// Reads every item that is ready now.
pub fn drain(listener: &mut Listener) -> Vec<Next> {
    std::iter::from_fn(|| listener.try_next())
        .take_while(|next| !matches!(next, Next::Closed))
        .collect()
}

#[cfg(all(
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]
pub mod example;

#[cfg(all(feature = "http", feature = "tasks"))]
pub mod http;

#[cfg(target_os = "linux")]
pub mod netns;

#[cfg(feature = "stdio")]
pub mod stdio;

#[cfg(all(feature = "http", feature = "stdio", feature = "channel"))]
pub mod scoped;

#[cfg(feature = "channel")]
pub mod channel;

#[cfg(all(feature = "client", feature = "stdio", feature = "http"))]
pub mod interop;

#[cfg(all(feature = "client", feature = "http"))]
pub mod catalog_server;

#[cfg(feature = "tls")]
pub mod tls;
