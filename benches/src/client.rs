//! The client side over Streamable HTTP on loopback: notifications consumed
//! per second through the crate's client (`client::Subscription::http`)
//! against rmcp's own (`Peer::listen`), reading from one server in the same
//! run: a hub behind the crate's endpoint in front of rmcp's service.
//!
//! The server's sockets are set `TCP_NODELAY` or left with Nagle's
//! algorithm (axum's default), as the caller asks: a paced stream of small
//! SSE frames is shaped by it.
//!
//! Each client listens for its own URI, so the hub routes every publish to
//! the one subscription being measured and a closing one costs the other
//! nothing. Two ways to publish:
//!
//! - paced: at most `window` events in flight (published, not yet
//!   consumed); each event consumed lets one more be published. With a
//!   window under rmcp's channel capacity (64 by default), rmcp's
//!   subscription cannot lag, so both run to the end and the rate is the
//!   client's own cost per notification;
//! - a burst: every event published at once (the hub holds them all), so
//!   the socket delivers as fast as the server writes. The crate's client
//!   reads the socket only while its buffer has room; rmcp's pushes each
//!   notification into a bounded channel and ends the subscription with
//!   `SubscriptionEnd::Lagged` when the reader falls behind.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use mcp_subscriptions::http::HttpTransport;
use mcp_subscriptions::{Event, Filter, Hub, ListenService};
use mcp_subscriptions_client::{Item, SubscribeOptions, Subscription};
use rmcp::model::{ClientConfig, ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServerHandler};
use tokio::runtime::Runtime;

/// How long one event may take before a run is called stuck.
const STUCK: Duration = Duration::from_secs(30);

/// Whose client reads the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenClient {
    /// The crate's `client::Subscription` over Streamable HTTP.
    Ours,
    /// rmcp 3.11's `Peer::listen` over its Streamable HTTP client, with its
    /// default channel capacity.
    Rmcp,
}

impl ListenClient {
    fn uri(self) -> &'static str {
        match self {
            Self::Ours => "bench://ours",
            Self::Rmcp => "bench://rmcp",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// Notifications the reader consumed.
    pub consumed: u64,
    /// From the first publish until the last notification was consumed or
    /// the stream ended.
    pub elapsed: Duration,
    /// Why the stream ended before every event was consumed; `None` when
    /// all were.
    pub cut_short: Option<String>,
}

impl ClientRun {
    /// Notifications consumed per second.
    pub fn rate(&self) -> f64 {
        self.consumed as f64 / self.elapsed.as_secs_f64()
    }
}

/// An rmcp handler with nothing of its own, behind the crate's endpoint.
#[derive(Clone)]
struct Plain;

impl ServerHandler for Plain {}

/// One server (a hub behind the crate's endpoint) on a runtime of its own,
/// and a runtime for the clients; each run opens a fresh subscription.
pub struct ClientBench {
    // Kept: its worker serves the endpoint.
    _server: Runtime,
    clients: Runtime,
    hub: Hub,
    url: String,
}

impl ClientBench {
    /// A server whose listeners hold up to `capacity` events each, and
    /// however many bytes those take (enough for the largest burst, so that
    /// nothing is lost server-side: 200,000 updates outgrow the default
    /// 16 MiB bound), its accepted sockets set `TCP_NODELAY` when
    /// `nodelay`.
    pub fn new(capacity: usize, nodelay: bool) -> Self {
        let runtime = || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap()
        };
        let (server, clients) = (runtime(), runtime());
        let hub = Hub::builder()
            .capacity(capacity.max(1))
            .max_queued_bytes(usize::MAX)
            .build();
        let url = server.block_on(async {
            let mcp = StreamableHttpService::new(
                || Ok(Plain),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default().with_legacy_session_mode(false),
            );
            let http = HttpTransport::new(ListenService::new(hub.clone()), mcp);
            let app = axum::Router::new().route("/mcp", http.into_method_router());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            let listener = listener.tap_io(move |socket| {
                if nodelay {
                    let _ = socket.set_nodelay(true);
                }
            });
            tokio::spawn(async move { axum::serve(listener, app).await });
            url
        });
        Self {
            _server: server,
            clients,
            hub,
            url,
        }
    }

    /// `events` notifications with at most `window` in flight.
    pub fn paced(&self, client: ListenClient, events: u64, window: u64) -> ClientRun {
        self.run(client, events, window.max(1))
    }

    /// `events` notifications published at once.
    pub fn burst(&self, client: ListenClient, events: u64) -> ClientRun {
        self.run(client, events, events)
    }

    fn run(&self, client: ListenClient, events: u64, window: u64) -> ClientRun {
        let hub = self.hub.clone();
        let uri = client.uri();
        let publish = move || {
            hub.publish(Event::resource_updated(uri));
        };
        let url = self.url.clone();
        self.clients.block_on(async move {
            let mut reader = Reader::open(client, &url).await;
            let start = Instant::now();
            let mut published = 0;
            while published < window.min(events) {
                publish();
                published += 1;
            }
            let mut consumed = 0;
            let mut cut_short = None;
            while consumed < events {
                match tokio::time::timeout(STUCK, reader.next()).await {
                    Ok(Ok(())) => consumed += 1,
                    Ok(Err(end)) => {
                        cut_short = Some(end);
                        break;
                    }
                    Err(_) => {
                        cut_short = Some(format!("nothing for {} s", STUCK.as_secs()));
                        break;
                    }
                }
                if published < events {
                    publish();
                    published += 1;
                }
            }
            let elapsed = start.elapsed();
            reader.close().await;
            ClientRun {
                consumed,
                elapsed,
                cut_short,
            }
        })
    }
}

impl Drop for ClientBench {
    fn drop(&mut self) {
        self.hub.complete();
    }
}

/// An open subscription, of either client.
enum Reader {
    Ours(Subscription),
    Rmcp {
        // Kept so that the connection stays up while the subscription runs
        // (both boxed: they are large).
        client: Box<RunningService<RoleClient, ClientConfig>>,
        subscription: Box<rmcp::service::Subscription>,
    },
}

impl Reader {
    async fn open(client: ListenClient, url: &str) -> Self {
        match client {
            ListenClient::Ours => {
                let filter = Filter::new().with_resource(client.uri());
                Self::Ours(
                    Subscription::http(url, &filter, SubscribeOptions::default())
                        .await
                        .expect("our client listens"),
                )
            }
            ListenClient::Rmcp => {
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
                );
                let client_service = ClientConfig::default()
                    .serve_with_lifecycle(
                        transport,
                        ClientLifecycleMode::Discover {
                            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                        },
                    )
                    .await
                    .expect("rmcp's client connects");
                let filter = SubscriptionFilter::builder()
                    .resource_subscription(client.uri())
                    .build();
                let subscription = client_service
                    .listen(filter)
                    .await
                    .expect("rmcp's client listens");
                Self::Rmcp {
                    client: Box::new(client_service),
                    subscription: Box::new(subscription),
                }
            }
        }
    }

    /// One notification consumed, or why the stream ended.
    async fn next(&mut self) -> Result<(), String> {
        match self {
            Self::Ours(subscription) => match subscription.next().await {
                Some(Item::Event(_)) => Ok(()),
                Some(other) => Err(format!("{other:?}")),
                None => Err("finished".to_owned()),
            },
            Self::Rmcp { subscription, .. } => match subscription.next().await {
                Ok(Some(ServerNotification::ResourceUpdatedNotification(_))) => Ok(()),
                Ok(Some(other)) => Err(format!("unexpected {other:?}")),
                Ok(None) => Err(match subscription.end() {
                    Some(end) => format!("{end:?}"),
                    None => "ended".to_owned(),
                }),
                Err(err) => Err(err.to_string()),
            },
        }
    }

    async fn close(self) {
        match self {
            Self::Ours(subscription) => subscription.cancel().await,
            Self::Rmcp {
                client,
                mut subscription,
            } => {
                let _ = subscription.cancel().await;
                let _ = client.cancel().await;
            }
        }
    }
}
