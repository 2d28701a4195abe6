//! End to end over Streamable HTTP on loopback: N listen streams read by
//! real sockets, M tools-list changes, served by the crate's endpoint or by
//! rmcp's pattern (each stream's sink kept in a shared list, and every
//! publish awaiting each sink in turn).

#![allow(dead_code, unreachable_pub)] // each user takes the parts it needs

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_subscriptions::{Hub, ListenService, http_endpoint};
use rmcp::ServerHandler;
use rmcp::model::{ServerCapabilities, ServerConfig, SubscriptionFilter};
use rmcp::service::{SubscriptionContext, SubscriptionSink};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

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

/// Runs `streams` reading streams (plus one that never reads, when
/// `stalled`), publishes `events` changes, and times until every reading
/// stream has them all (or `limit` passes).
pub fn run(ours: bool, streams: usize, events: usize, stalled: bool, limit: Duration) -> Outcome {
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
        let app = if ours {
            let mcp = StreamableHttpService::new(
                || Ok(Plain),
                Arc::new(LocalSessionManager::default()),
                rmcp_config(),
            );
            axum::Router::new().route("/mcp", http_endpoint(ListenService::new(hub.clone()), mcp))
        } else {
            let handler = pattern.clone();
            let mcp = StreamableHttpService::new(
                move || Ok(handler.clone()),
                Arc::new(LocalSessionManager::default()),
                rmcp_config(),
            );
            axum::Router::new().nest_service("/mcp", mcp)
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
                if ours {
                    hub.notify_tools_list_changed();
                } else {
                    for sink in sinks.lock().await.iter() {
                        let _ = sink.notify_tool_list_changed().await;
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
