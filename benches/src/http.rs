//! End to end over Streamable HTTP on loopback: N listen streams read by
//! real sockets, M tools-list changes, served by the crate's endpoint or by
//! rmcp's pattern (each stream's sink kept in a shared list, and every
//! publish awaiting each sink in turn).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_subscriptions::http::{HttpTransport, endpoint};
use mcp_subscriptions::{Hub, ListenService, WithSubscriptions};
use rmcp::ServerHandler;
use rmcp::model::{ServerCapabilities, ServerConfig, SubscriptionFilter};
use rmcp::service::{SubscriptionContext, SubscriptionSink};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};
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

/// An rmcp handler with tools, whose sessions of an older revision
/// `WithSubscriptions` serves from the hub.
#[derive(Clone)]
struct Tools;

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn rmcp_config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default().with_legacy_session_mode(false)
}

/// Serves `app` on `addr` (port 0: any free one) with the crate's
/// [`serve`](mcp_subscriptions::http::serve), ours and rmcp's pattern
/// alike; the address it got.
pub async fn serve(app: axum::Router, addr: &str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    serve_on(app, listener)
}

/// [`serve`], sharing the port with the other processes that bind it so
/// (`SO_REUSEPORT`: the kernel spreads new connections among them), with
/// the backlog a crowd of clients meets.
pub(crate) fn serve_shared(app: axum::Router, addr: SocketAddr) -> SocketAddr {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket.set_reuseport(true).unwrap();
    socket.bind(addr).unwrap();
    serve_on(app, socket.listen(4_096).unwrap())
}

fn serve_on(app: axum::Router, listener: tokio::net::TcpListener) -> SocketAddr {
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcp_subscriptions::http::serve(
        listener,
        app,
        std::future::pending(),
    ));
    addr
}

/// Opens a listen stream for tools-list changes; the reader, past the
/// acknowledgement. A `small_window` socket advertises a tiny receive
/// buffer, so a client that stops reading stalls its sender quickly
/// instead of after megabytes of kernel buffering.
async fn open(addr: SocketAddr, id: usize, small_window: bool) -> BufReader<TcpStream> {
    let socket = TcpSocket::new_v4().unwrap();
    if small_window {
        socket.set_recv_buffer_size(4_096).unwrap();
    }
    listen_on(socket, addr, id).await.unwrap()
}

/// Connects `socket` (bound or not) to the endpoint at `addr` and opens a
/// listen stream for tools-list changes with request id `id`; the reader,
/// past the acknowledgement.
///
/// # Errors
///
/// The connection's, or `UnexpectedEof` when the response ends before the
/// acknowledgement (a refusal is a JSON answer, not a stream).
pub async fn listen_on(
    socket: TcpSocket,
    addr: SocketAddr,
    id: usize,
) -> io::Result<BufReader<TcpStream>> {
    let socket = socket.connect(addr).await?;
    listen_over(socket, &addr.to_string(), id).await
}

/// Opens a listen stream for tools-list changes with request id `id` over
/// a connected `socket` (TCP, or a Unix socket's) to the endpoint of
/// `host`; the reader, past the acknowledgement.
///
/// # Errors
///
/// As [`listen_on`].
pub async fn listen_over<S: AsyncRead + AsyncWrite + Unpin>(
    mut socket: S,
    host: &str,
    id: usize,
) -> io::Result<BufReader<S>> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "notifications": {"toolsListChanged": true},
    }})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await?;
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    while !line.contains("subscriptions/acknowledged") {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the response ended before the acknowledgement",
            ));
        }
    }
    Ok(reader)
}

/// Reads until `events` tools-list changes have arrived; whether they all
/// did before the stream ended.
pub async fn read<S: AsyncRead + Unpin>(reader: &mut BufReader<S>, events: usize) -> bool {
    let mut line = String::new();
    let mut seen = 0;
    while seen < events {
        line.clear();
        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
            return false;
        }
        if line.contains("notifications/tools/list_changed") {
            seen += 1;
        }
    }
    true
}

/// Who serves the listen streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// The crate's endpoint, in front of rmcp's service.
    Endpoint,
    /// The anchor: rmcp itself, each stream's sink kept in a list and every
    /// publish awaiting each sink in turn.
    RmcpPattern,
    /// The crate's endpoint, its streams held as older revisions' sessions
    /// (2025-11-25: `initialize`, then the session's GET stream), served
    /// from the hub by `WithSubscriptions`.
    Sessions,
}

impl Server {
    /// The MCP endpoint at `/mcp`, serving listen streams from `hub` (the
    /// crate's endpoint) or from rmcp's sinks (the anchor); and what
    /// publishes a tools-list change to them.
    pub fn app(self, hub: &Hub) -> (axum::Router, Publisher) {
        match self {
            Server::Endpoint => {
                let mcp = StreamableHttpService::new(
                    || Ok(Plain),
                    Arc::new(LocalSessionManager::default()),
                    rmcp_config(),
                );
                let http = HttpTransport::new(ListenService::new(hub.clone()), mcp);
                let app = axum::Router::new().route("/mcp", http.into_method_router());
                (app, Publisher::Hub(hub.clone()))
            }
            Server::RmcpPattern => {
                let handler = RmcpPattern::default();
                let sinks = handler.sinks.clone();
                let mcp = StreamableHttpService::new(
                    move || Ok(handler.clone()),
                    Arc::new(LocalSessionManager::default()),
                    rmcp_config(),
                );
                let app = axum::Router::new().nest_service("/mcp", mcp);
                (app, Publisher::Sinks(sinks))
            }
            Server::Sessions => {
                let listen = ListenService::new(hub.clone());
                let sessions = WithSubscriptions::factory(&listen, || Tools);
                let http = endpoint(listen, sessions, StreamableHttpServerConfig::default());
                let app = axum::Router::new().route("/mcp", http.into_method_router());
                (app, Publisher::Hub(hub.clone()))
            }
        }
    }

    /// Its stream to `addr` over sockets made by `socket` (a listen
    /// stream, or an older revision's session), once acknowledged.
    pub async fn open(
        self,
        socket: impl Fn() -> io::Result<TcpSocket>,
        addr: SocketAddr,
        id: usize,
    ) -> io::Result<BufReader<TcpStream>> {
        match self {
            Server::Endpoint | Server::RmcpPattern => listen_on(socket()?, addr, id).await,
            Server::Sessions => session_on(socket, addr).await,
        }
    }
}

/// An older revision's session (2025-11-25) to `addr`, each request on a
/// socket of its own: `initialize`, `notifications/initialized`, then the
/// session's GET stream, held.
async fn session_on(
    socket: impl Fn() -> io::Result<TcpSocket>,
    addr: SocketAddr,
) -> io::Result<BufReader<TcpStream>> {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "held", "version": "1.0.0"},
    }});
    let answer = exchange(socket()?, addr, "POST", &[], &initialize.to_string()).await?;
    let session = answer
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .ok_or_else(|| io::Error::other(format!("no session id in {answer:?}")))?;
    let headers = [
        format!("Mcp-Session-Id: {session}"),
        "MCP-Protocol-Version: 2025-11-25".to_owned(),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    exchange(socket()?, addr, "POST", &headers, &initialized.to_string()).await?;
    let mut stream = socket()?.connect(addr).await?;
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{}\r\n\r\n",
        headers.join("\r\n")
    );
    stream.write_all(request.as_bytes()).await?;
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).await?;
    if !status.contains(" 200 ") {
        return Err(io::Error::other(format!("the GET stream: {status:?}")));
    }
    Ok(reader)
}

/// One request on a connection of its own, closed after it; the whole
/// answer.
async fn exchange(
    socket: TcpSocket,
    addr: SocketAddr,
    method: &str,
    headers: &[String],
    body: &str,
) -> io::Result<String> {
    let mut stream = socket.connect(addr).await?;
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for header in headers {
        request += &format!("{header}\r\n");
    }
    request += &format!("\r\n{body}");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut answer).await?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// What publishes a tools-list change to every stream of a [`Server`].
#[derive(Clone)]
pub enum Publisher {
    /// The crate's: one publish to the hub.
    Hub(Hub),
    /// rmcp's pattern: each sink awaited in turn.
    Sinks(Arc<tokio::sync::Mutex<Vec<SubscriptionSink>>>),
}

impl Publisher {
    /// Publishes one tools-list change; returns once it is handed to every
    /// stream (the hub's queues, or each rmcp sink).
    pub async fn tools_list_changed(&self) {
        match self {
            Publisher::Hub(hub) => {
                hub.notify_tools_list_changed();
            }
            Publisher::Sinks(sinks) => {
                for sink in sinks.lock().await.iter() {
                    let _ = sink.notify_tool_list_changed().await;
                }
            }
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
        let (addr, publisher) = server.block_on(async {
            let (app, publisher) = serving.app(&hub);
            (serve(app, "127.0.0.1:0").await, publisher)
        });
        let readers = clients.block_on(async {
            let mut readers = Vec::with_capacity(streams);
            for id in 0..streams {
                readers.push(open(addr, id, false).await);
            }
            readers
        });
        // Held open and never read: its socket fills, then its queue.
        let _stalled = stalled.then(|| clients.block_on(open(addr, streams, true)));
        let readers: Vec<_> = readers
            .into_iter()
            .map(|mut reader| clients.spawn(async move { read(&mut reader, events).await }))
            .collect();

        let start = Instant::now();
        let publishing = server.spawn(async move {
            for _ in 0..events {
                publisher.tools_list_changed().await;
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
