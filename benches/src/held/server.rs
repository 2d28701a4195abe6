//! The server process: one [`Server`] on one address, publishing a
//! tools-list change each time its parent asks on stdin. As one of a group
//! of replicas it shares its port with the others (`SO_REUSEPORT`) and
//! joins them through a relay (feature `relay`).
//!
//! It prints `listening ADDR` once serving, as a replica `joined` once its
//! relay hears every other, and `published` each time a publish has
//! returned.
//! It exits when its stdin closes, so it never outlives its parent.

use std::io::BufRead;

use mcp_subscriptions::Hub;

use super::say;
use crate::{Server, serve};

/// What the parent writes to have one tools-list change published.
pub(crate) const PUBLISH: &str = "publish";

/// What a replica says once its relay hears every other.
pub(crate) const JOINED: &str = "joined";

/// A replica's part in a group: the broker's URL, and how many replicas
/// there are.
pub(crate) struct Replica<'a> {
    pub(crate) relay: &'a str,
    pub(crate) replicas: usize,
}

/// Serves `server` on `addr` (`HOST:PORT`, or `unix:PATH` for a Unix
/// domain socket) for up to `streams` listen streams, until stdin closes.
pub(crate) fn main(server: Server, addr: &str, streams: usize, replica: Option<Replica<'_>>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let hub = Hub::builder().max_listeners(streams).build();
    let (publisher, _relay) = runtime.block_on(async {
        let (app, publisher) = server.app(&hub);
        if let Some(path) = addr.strip_prefix("unix:") {
            let listener = mcp_subscriptions::http::Listener::bind_unix(path).expect("a socket");
            tokio::spawn(mcp_subscriptions::http::serve(
                listener,
                app,
                std::future::pending(),
            ));
            say(&format!("listening {addr}"));
            return (publisher, None);
        }
        let Some(replica) = replica else {
            say(&format!("listening {}", serve(app, addr).await));
            return (publisher, None);
        };
        let addr = crate::http::serve_shared(app, addr.parse().expect("an address"));
        // The address first: the other replicas bind it, and only then can
        // this one's relay hear them.
        say(&format!("listening {addr}"));
        let relay = join(&hub, &replica).await;
        say(JOINED);
        (publisher, Some(relay))
    });
    for line in std::io::stdin().lock().lines() {
        match line {
            Ok(line) if line == PUBLISH => {
                runtime.block_on(publisher.tools_list_changed());
                say("published");
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
}

/// The hub's relay, once it hears every other replica.
#[cfg(feature = "relay")]
async fn join(hub: &Hub, replica: &Replica<'_>) -> mcp_subscriptions::relay::Relay {
    use mcp_subscriptions::relay::{Broker, Relay, RelayOptions};
    let broker = Broker::from_url(replica.relay).expect("a broker URL");
    let relay = Relay::spawn(hub.clone(), broker, RelayOptions::default()).expect("a relay");
    let others = replica.replicas as u64 - 1;
    while !(relay.stats().connected && relay.stats().replicas >= others) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    relay
}

#[cfg(not(feature = "relay"))]
async fn join(_: &Hub, replica: &Replica<'_>) -> std::convert::Infallible {
    panic!(
        "{} replicas join through the relay at {}: build with the `relay` feature",
        replica.replicas, replica.relay
    )
}
