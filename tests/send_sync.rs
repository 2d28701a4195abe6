//! Handles and futures can cross threads: checked at compile time.

use mcp_subscriptions::{Event, Filter, Hub, HubStats, Listener, NextItem, SourceHandle};

fn assert_send_sync<T: Send + Sync>() {}

fn assert_send_future<F: std::future::Future + Send>(_: F) {}

#[test]
fn handles_and_futures_are_send_and_sync() {
    assert_send_sync::<Hub>();
    assert_send_sync::<Listener>();
    assert_send_sync::<NextItem<'static>>();
    assert_send_sync::<Event>();
    assert_send_sync::<Filter>();
    assert_send_sync::<HubStats>();

    let hub = Hub::new();
    let mut listener = hub.listen(&Filter::new()).unwrap();
    assert_send_future(listener.next());
    assert_send_future(SourceHandle::next(&mut listener));
}
