//! Handles and futures can cross threads: checked at compile time.

use mcp_subscriptions::hub::HubStats;
use mcp_subscriptions::hub::NextItem;
use mcp_subscriptions::{Event, Filter, Hub, Listener, SourceHandle};

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

/// The client's handles, its items and the futures that open and read a
/// subscription (built, never awaited: no server is needed to check them).
#[cfg(feature = "client")]
#[tokio::test]
async fn client_handles_and_futures_are_send_and_sync() {
    use mcp_subscriptions_client::{
        BufferPolicy, BufferStats, End, Item, ProtocolError, Relisten, Relistening, StdioClient,
        SubscribeError, SubscribeOptions, Subscription,
    };

    assert_send_sync::<Subscription>();
    assert_send_sync::<StdioClient>();
    assert_send_sync::<Item>();
    assert_send_sync::<End>();
    assert_send_sync::<Relistening>();
    assert_send_sync::<SubscribeOptions>();
    assert_send_sync::<Relisten>();
    assert_send_sync::<BufferPolicy>();
    assert_send_sync::<BufferStats>();
    assert_send_sync::<SubscribeError>();
    assert_send_sync::<ProtocolError>();
    assert_send_sync::<crossbeam_channel::Receiver<Item>>();

    let filter = Filter::new().with_tools_list_changed();
    assert_send_future(Subscription::http(
        "http://127.0.0.1:9/mcp",
        &filter,
        SubscribeOptions::default(),
    ));
    let (_server_end, client_end) = tokio::io::duplex(64);
    let (reader, writer) = tokio::io::split(client_end);
    let client = StdioClient::new(reader, writer);
    assert_send_future(client.subscribe(&filter, SubscribeOptions::default()));
    assert_send_future(client.request("ping", serde_json::json!({})));

    let hub = Hub::new();
    let mut subscription = Subscription::source(hub.clone(), &filter, SubscribeOptions::default())
        .await
        .unwrap();
    assert_send_future(subscription.next());
    assert_send_future(subscription.cancel());
}
