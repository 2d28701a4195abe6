//! End to end over Streamable HTTP on loopback: N listen streams read by
//! real sockets, M tools-list changes, served by the crate's endpoint or by
//! rmcp's pattern (each stream's sink kept in a shared list, and every
//! publish awaiting each sink in turn).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_subscriptions::http::HttpTransport;
use mcp_subscriptions::{Hub, ListenService};
use rmcp::ServerHandler;
use rmcp::model::{ServerCapabilities, ServerConfig, SubscriptionFilter};
use rmcp::service::{SubscriptionContext, SubscriptionSink};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

use crate::Scenario;

/// A server whose listen streams are served by rmcp itself: the sinks are
/// kept in a list, and publishing awaits each one in turn.
#[derive(Clone, Default)]
struct RmcpPattern {
    sinks: Arc<tokio::sync::Mutex<Vec<SubscriptionSink>>>,
}

impl ServerHandler for RmcpPattern {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), rmcp::ErrorData> {
        self.sinks.lock().await.push(context.sink().clone());
        context.cancelled().await;
        Ok(())
    }
}

/// An rmcp handler with nothing of its own, behind the crate's endpoint.
#[derive(Clone)]
struct Plain;

impl ServerHandler for Plain {}

fn rmcp_config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default().with_legacy_session_mode(false)
}

/// Serves `app` on a loopback port; its address.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Opens a listen stream for tools-list changes; the reader, past the
/// acknowledgement. A `small_window` socket advertises a tiny receive
/// buffer, so a client that stops reading stalls its sender quickly
/// instead of after megabytes of kernel buffering.
async fn open(addr: &str, id: usize, small_window: bool) -> BufReader<TcpStream> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "notifications": {"toolsListChanged": true},
    }})
    .to_string();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    if small_window {
        socket.set_recv_buffer_size(4_096).unwrap();
    }
    let mut socket = socket.connect(addr.parse().unwrap()).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    while !line.contains("subscriptions/acknowledged") {
        line.clear();
        assert!(
            reader.read_line(&mut line).await.unwrap() > 0,
            "the stream opens"
        );
    }
    reader
}

/// Reads until `events` tools-list changes have arrived.
async fn read(mut reader: BufReader<TcpStream>, events: usize) {
    let mut line = String::new();
    let mut seen = 0;
    while seen < events {
        line.clear();
        if reader.read_line(&mut line).await.unwrap() == 0 {
            return;
        }
        if line.contains("notifications/tools/list_changed") {
            seen += 1;
        }
    }
}

/// Who serves the listen streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// The crate's endpoint, in front of rmcp's service.
    Endpoint,
    /// The anchor: rmcp itself, each stream's sink kept in a list and every
    /// publish awaiting each sink in turn.
    RmcpPattern,
}

/// The outcome of one run.
pub struct Outcome {
    /// From the first publish until every reading stream had every event
    /// (or the limit passed).
    pub elapsed: Duration,
    /// Notifications the reading streams were to receive.
    pub notifications: usize,
    /// Whether every reading stream got every event in time.
    pub completed: bool,
}

impl Outcome {
    /// Notifications written per second, across all streams.
    pub fn rate(&self) -> f64 {
        self.notifications as f64 / self.elapsed.as_secs_f64()
    }
}

/// `streams` reading streams (plus, with a stalled client, one that never
/// reads) and `events` tools-list changes, timed until every reading stream
/// has them all or `limit` passes.
pub struct EndToEnd {
    server: Server,
    streams: usize,
    events: usize,
    stalled: bool,
    limit: Duration,
}

impl EndToEnd {
    /// `streams` reading streams served by `server`, `events` changes, at
    /// most `limit` to deliver them.
    pub fn new(server: Server, streams: usize, events: usize, limit: Duration) -> Self {
        Self {
            server,
            streams,
            events,
            stalled: false,
            limit,
        }
    }

    /// One more client, which opens a stream and never reads it: its socket
    /// fills, then its queue.
    pub fn with_stalled_client(mut self) -> Self {
        self.stalled = true;
        self
    }

    /// One run, with a server and streams of its own; only the publishing
    /// and reading are timed.
    pub fn once(&self) -> Outcome {
        let Self {
            server: serving,
            streams,
            events,
            stalled,
            limit,
        } = *self;
        let server: Runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let clients: Runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // Room for every event: the readers count them all.
        let hub = Hub::builder()
            .max_listeners(streams + 1)
            .capacity(events.max(1))
            .build();
        let pattern = RmcpPattern::default();
        let addr = server.block_on(async {
            let app = match serving {
                Server::Endpoint => {
                    let mcp = StreamableHttpService::new(
                        || Ok(Plain),
                        Arc::new(LocalSessionManager::default()),
                        rmcp_config(),
                    );
                    let http = HttpTransport::new(ListenService::new(hub.clone()), mcp);
                    axum::Router::new().route("/mcp", http.into_method_router())
                }
                Server::RmcpPattern => {
                    let handler = pattern.clone();
                    let mcp = StreamableHttpService::new(
                        move || Ok(handler.clone()),
                        Arc::new(LocalSessionManager::default()),
                        rmcp_config(),
                    );
                    axum::Router::new().nest_service("/mcp", mcp)
                }
            };
            serve(app).await
        });
        let readers = clients.block_on(async {
            let mut readers = Vec::with_capacity(streams);
            for id in 0..streams {
                readers.push(open(&addr, id, false).await);
            }
            readers
        });
        // Held open and never read: its socket fills, then its queue.
        let _stalled = stalled.then(|| clients.block_on(open(&addr, streams, true)));
        let readers: Vec<_> = readers
            .into_iter()
            .map(|reader| clients.spawn(read(reader, events)))
            .collect();

        let start = Instant::now();
        let publishing = server.spawn({
            let (hub, sinks) = (hub.clone(), pattern.sinks.clone());
            async move {
                for _ in 0..events {
                    match serving {
                        Server::Endpoint => {
                            hub.notify_tools_list_changed();
                        }
                        Server::RmcpPattern => {
                            for sink in sinks.lock().await.iter() {
                                let _ = sink.notify_tool_list_changed().await;
                            }
                        }
                    }
                }
            }
        });
        let completed = clients.block_on(async {
            tokio::time::timeout(limit, async {
                for reader in readers {
                    reader.await.unwrap();
                }
            })
            .await
            .is_ok()
        });
        let elapsed = start.elapsed();
        publishing.abort();
        hub.complete();
        server.shutdown_background();
        clients.shutdown_background();
        Outcome {
            elapsed,
            notifications: streams * events,
            completed,
        }
    }
}

impl Scenario for EndToEnd {
    /// `runs` runs, each of which must deliver every event in time.
    fn run(&mut self, runs: u64) -> Duration {
        (0..runs)
            .map(|_| {
                let outcome = self.once();
                assert!(outcome.completed, "every stream got every event");
                outcome.elapsed
            })
            .sum()
    }
}
