//! Waiting on a hub's listeners, with deadlines that name what timed out:
//! for tests where events cross a broker.

#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use mcp_subscriptions::{Event, Listener, Next};

/// How long anything may take to cross a broker.
const DEADLINE: Duration = Duration::from_secs(10);

/// Waits until `condition` holds, or panics naming `what`.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The next event `listener` receives.
pub async fn next_event(listener: &mut Listener) -> Event {
    match tokio::time::timeout(DEADLINE, listener.next()).await {
        Ok(Next::Event(event)) => event,
        Ok(other) => panic!("expected an event, got {other:?}"),
        Err(_) => panic!("no event within {DEADLINE:?}"),
    }
}

/// Nothing arrives within `wait`.
pub async fn quiet(listener: &mut Listener, wait: Duration) {
    if let Ok(next) = tokio::time::timeout(wait, listener.next()).await {
        panic!("expected nothing, got {next:?}");
    }
}
