//! Serving a router over HTTP/1 at the least memory per held stream,
//! with deadlines and shedding for the connections that hold none.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_util::task::TaskTracker;

use super::admission::{Admission, AdmissionLimits, Peer, Refused};
use super::connections::{
    ConnectionStats, Connections, Counters, Limits, Open, Tracked, TrackedService, Watchdog,
    default_max_waiting,
};
use super::socket::stop::{Stop, Watch};
use super::socket::vanished;
use super::socket::{self, BUFFER, First, Listener, Rewind, Socket, Spare};
use crate::transport::streams::{Drained, Streams};

/// How long accepting pauses after an error it cannot help (out of open
/// files, it turns a connection away instead: see `socket`), so that a
/// lasting one does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(10);

/// How long a connection has to send its first request whole, head and
/// body, by default: 30 s, hyper's header timeout and under nginx's 60 s.
pub const DEFAULT_REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// How long a keep-alive connection may sit idle between requests by
/// default: 60 s, nginx's `keepalive_timeout` is 75 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long what a connection's server wrote may stay unacknowledged by
/// its client by default: 30 s. A client that vanished from the network
/// (no FIN, no RST) is then taken for gone, and its held streams end within
/// this and one keep-alive, instead of the kernel's fifteen minutes.
pub const DEFAULT_UNACKNOWLEDGED_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves a router over HTTP/1: listen streams at the least memory each,
/// and deadlines, a bound and shedding for connections that hold none.
///
/// Build one with [`Server::new`] and its `with_*` options, keep a clone
/// to read [`connections`](Self::connections), and run it with
/// [`serve_until_drained`](Self::serve_until_drained) (the usual choice: it
/// also bounds the shutdown) or [`serve`](Self::serve) (when the
/// application drains its streams itself). The free functions
/// [`serve`](super::serve) and [`serve_until_drained`](super::serve_until_drained)
/// are the same with the defaults.
///
/// It does what `axum::serve(listener, router).with_graceful_shutdown(..)`
/// does, WebSocket upgrades included (the notification channel), and:
///
/// - **Held streams cost 2.4 KiB, not 23 KiB.** A connection whose first
///   request holds a stream (a `subscriptions/listen` POST, or an older
///   revision's `GET` of its session's stream) is answered on the socket,
///   without hyper (see the `socket` module's docs for exactly what it
///   takes). Every other connection is hyper's, reading from a 8 KiB
///   buffer and writing from one (`writev(false)`), with the router cloned
///   per connection, not rebuilt.
/// - **Deadlines.** A connection must send its first request whole, head
///   and body, within the [request deadline](Self::with_request_deadline)
///   of its accept, and each later request within that of its head; a
///   keep-alive connection idle between requests is closed after the
///   [idle timeout](Self::with_idle_timeout). Nothing cuts an answer,
///   however long: a held stream's keepalives are what tell a dead client.
/// - **Shedding.** Connections reading a request or idle are waiting on
///   their client, and at most [`with_max_waiting`](Self::with_max_waiting)
///   of them are kept: one more closes the one that has waited longest.
///   So a client that opens thousands of sockets and sends nothing cannot
///   take the open files that held streams and new listens need.
/// - **Out of open files** all the same, each waiting connection is
///   accepted and closed at once (with a file kept spare for that), so
///   that its client learns now, not at its own timeout, and tries again,
///   on another replica when several share the port.
///
/// A request's head (its request line and headers) is limited to 8 KiB, as
/// in Jetty; a longer one is answered `431 Request Header Fields Too Large`
/// and its connection closed.
///
/// The figures are in [`ConnectionStats`]. A route mounted in an
/// application's own `axum::serve` works too, but pays hyper's 23 KiB for
/// each held stream and gets none of the deadlines: serve the whole
/// router with this instead.
///
/// ```no_run
/// # async fn run(app: axum::Router, hub: mcp_subscriptions::Hub, streams: mcp_subscriptions::Streams) -> std::io::Result<()> {
/// use std::time::Duration;
/// use mcp_subscriptions::http::{Server, shutdown_signal};
///
/// let server = Server::new()
///     .with_request_deadline(Duration::from_secs(10))
///     .with_idle_timeout(Duration::from_secs(30));
/// let figures = server.clone();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8808").await?;
/// let drained = server
///     .serve_until_drained(listener, app, shutdown_signal(&hub), streams, Duration::from_secs(5))
///     .await;
/// println!("{} streams cut; {:?}", drained.cut, figures.connections());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Server {
    limits: Limits,
    /// Where admission limits are set.
    admission: Option<Arc<Admission>>,
    streams_on_the_socket: bool,
    /// Shared by its clones, so that one can read what another serves.
    counters: Arc<Counters>,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl Server {
    /// A server with [`DEFAULT_REQUEST_DEADLINE`], [`DEFAULT_IDLE_TIMEOUT`]
    /// and, as the most connections that may wait, half the process's
    /// soft open-file limit (read from `/proc/self/limits`; 10,000 where
    /// it cannot be read).
    pub fn new() -> Self {
        Self {
            limits: Limits {
                request_deadline: DEFAULT_REQUEST_DEADLINE,
                idle_timeout: DEFAULT_IDLE_TIMEOUT,
                max_waiting: default_max_waiting(),
                unacknowledged_timeout: DEFAULT_UNACKNOWLEDGED_TIMEOUT,
            },
            admission: None,
            streams_on_the_socket: true,
            counters: Arc::default(),
        }
    }

    /// How long a connection has to send a request whole, head and body:
    /// a first request from the connection's accept, a later one from its
    /// head. Past it, the connection is closed.
    pub fn with_request_deadline(mut self, deadline: Duration) -> Self {
        self.limits.request_deadline = deadline;
        self
    }

    /// How long a keep-alive connection may sit idle between requests
    /// before it is closed.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// The most connections that may wait on their client (reading a
    /// request, or idle) at once, at least 1; one more closes the one that
    /// has waited longest. Keep it well under the open-file limit, so that
    /// held streams and new listens always find a file.
    pub fn with_max_waiting(mut self, max: usize) -> Self {
        self.limits.max_waiting = max.max(1);
        self
    }

    /// How long what is written on a connection may stay unacknowledged by
    /// its client ([`DEFAULT_UNACKNOWLEDGED_TIMEOUT`]; zero leaves the
    /// system's default, about fifteen minutes on Linux). Past it the
    /// client is taken for gone and the connection closed; its held
    /// streams end as [`CloseReason::Unacknowledged`](crate::CloseReason::Unacknowledged).
    ///
    /// Set as `TCP_USER_TIMEOUT` on each accepted connection where the
    /// system has it (Linux). A held stream's writer also gives up once
    /// its socket took no byte for this long while bytes waited, which is
    /// the bound on other systems. Both also end a client that is alive
    /// but keeps its receive window shut (reads nothing) for that long:
    /// one that reads, however slowly, keeps its stream, and its queue's
    /// [`Overflow`](crate::Overflow) policy deals with its pace.
    ///
    /// A held stream writes at least a keep-alive every
    /// [keep-alive period](super::HttpTransport::with_keepalive), so a
    /// vanished client's stream ends within this plus one period. An idle
    /// keep-alive connection writes nothing: the
    /// [idle timeout](Self::with_idle_timeout) bounds it instead.
    pub fn with_unacknowledged_timeout(mut self, timeout: Duration) -> Self {
        self.limits.unacknowledged_timeout = timeout;
        self
    }

    /// How fast one client address, or one principal, may open connections
    /// and listens (all off by default; see [`AdmissionLimits`] for a
    /// setting to start from). A connection or listen over a limit is
    /// answered `429 Too Many Requests` with `Retry-After` and a JSON-RPC
    /// error, [`RATE_LIMITED_ERROR_CODE`](super::RATE_LIMITED_ERROR_CODE),
    /// whose `data` names the limit; a refused connection is closed after
    /// it, a refused listen leaves its connection be. Counted in
    /// [`ConnectionStats::rate_limited`].
    ///
    /// Principals are what the authentication layer in front puts in each
    /// request's extensions ([`Principal`](crate::audience::Principal)); a
    /// connection counts against its principal at its first request to
    /// the MCP endpoint. The limits hold for the endpoint served by this
    /// server, not for a route mounted in another server.
    pub fn with_admission_limits(mut self, limits: AdmissionLimits) -> Self {
        self.admission = Admission::new(limits).map(Arc::new);
        self
    }

    /// Whether a connection whose first request holds a stream is answered
    /// on the socket (the default) or by hyper like any other, at hyper's
    /// memory per stream: to rule the socket path out, or to compare.
    pub fn with_streams_on_the_socket(mut self, on: bool) -> Self {
        self.streams_on_the_socket = on;
        self
    }

    /// The figures of its connections now: open, waiting, accepted, closed
    /// by a deadline, shed, turned away.
    pub fn connections(&self) -> ConnectionStats {
        let mut stats = self.counters.snapshot();
        if let Some(admission) = &self.admission {
            stats.rate_limited = admission.rate_limited();
        }
        stats
    }

    /// Serves `router` on `listener`, one connection per task, until
    /// `shutdown` resolves; then accepts no more, asks every connection to
    /// close once its response is done, and returns when all have.
    ///
    /// A listen stream ends only when its source does: complete the hub
    /// (or cut the transport's [`Streams`](crate::Streams)) when
    /// `shutdown` resolves, or this waits for the streams too. Most servers
    /// want [`serve_until_drained`](Self::serve_until_drained), which does.
    pub async fn serve(
        self,
        listener: impl Into<Listener>,
        router: Router,
        shutdown: impl Future<Output = ()>,
    ) {
        let listener = listener.into();
        let connections = Connections::new(self.limits, Arc::clone(&self.counters));
        let stop = Stop::default();
        let tasks = TaskTracker::new();
        let mut spare = Spare::open();
        let accepting = async {
            loop {
                match listener.accept().await {
                    Ok((socket, address)) => {
                        let bound = self.limits.unacknowledged_timeout;
                        if let Some(tcp) = socket.tcp() {
                            no_delay(tcp);
                            vanished::bound(tcp, bound);
                        }
                        let (open, tracked) = connections.accepted();
                        let admission = self.admission.as_ref();
                        let connection = Connection {
                            socket,
                            peer: admission.map(|a| Peer::new(address, Arc::clone(a))),
                            refused: admission.and_then(|a| a.connection(address).err()),
                            router: router.clone(),
                            stop: stop.watch(),
                            open,
                            tracked,
                        };
                        let serving = Box::new(connection).serve(self.streams_on_the_socket);
                        tasks.spawn(vanished::watched(bound, serving));
                    }
                    // An accept error ends no connection already open.
                    Err(err) => {
                        if spare.turn_away(&listener, &err) {
                            connections.turned_away();
                            tracing::debug!("out of open files: a connection was turned away");
                            continue;
                        }
                        tracing::debug!(%err, "accepting a connection failed");
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    }
                }
            }
        };
        tokio::select! {
            _ = accepting => {}
            () = shutdown => {}
        }
        drop(listener);
        stop.stop();
        tasks.close();
        tasks.wait().await;
    }

    /// [`serve`](Self::serve) with the whole graceful shutdown: once
    /// `shutdown` resolves (it also completes the source, such as
    /// `hub.complete()`, so that each stream has a last message to write;
    /// [`shutdown_signal`](super::shutdown_signal) does both), `streams`
    /// get `deadline` to write it; those still open then are cut, and this
    /// returns what was found, after the server's connections closed or at
    /// the latest once the streams are cut.
    pub async fn serve_until_drained(
        self,
        listener: impl Into<Listener>,
        router: Router,
        shutdown: impl Future<Output = ()>,
        streams: Streams,
        deadline: Duration,
    ) -> Drained {
        let (stopping, stopped) = tokio::sync::oneshot::channel();
        let server = self.serve(listener, router, async move {
            shutdown.await;
            let _ = stopping.send(());
        });
        // A client that stopped reading must not hold the exit up for ever:
        // at the deadline its stream is cut, and the server (its connection
        // with it) goes with this future.
        let drain = async {
            if stopped.await.is_err() {
                std::future::pending::<()>().await;
            }
            streams.finish_within(deadline).await
        };
        tokio::select! {
            () = server => streams.finish_within(deadline).await,
            drained = drain => drained,
        }
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limits = self.limits;
        f.debug_struct("Server")
            .field("request_deadline", &limits.request_deadline)
            .field("idle_timeout", &limits.idle_timeout)
            .field("max_waiting", &limits.max_waiting)
            .field("unacknowledged_timeout", &limits.unacknowledged_timeout)
            .field("streams_on_the_socket", &self.streams_on_the_socket)
            .finish_non_exhaustive()
    }
}

/// Serves `router` on `listener` with [`Server::new`]'s defaults until
/// `shutdown` resolves (see [`Server::serve`]).
///
/// ```no_run
/// # async fn run(app: axum::Router, hub: mcp_subscriptions::Hub) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// mcp_subscriptions::http::serve(listener, app, async move {
///     let _ = tokio::signal::ctrl_c().await;
///     hub.complete(); // every listen stream ends with its result
/// })
/// .await;
/// # Ok(())
/// # }
/// ```
pub async fn serve(
    listener: impl Into<Listener>,
    router: Router,
    shutdown: impl Future<Output = ()>,
) {
    Server::new().serve(listener, router, shutdown).await;
}

/// [`Server::serve_until_drained`] with [`Server::new`]'s defaults: the
/// usual way to run a server.
///
/// ```no_run
/// # async fn run(app: axum::Router, hub: mcp_subscriptions::Hub, streams: mcp_subscriptions::Streams) -> std::io::Result<()> {
/// use std::time::Duration;
///
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8808").await?;
/// let shutdown = async move {
///     let _ = tokio::signal::ctrl_c().await;
///     hub.complete(); // every listen stream ends with its result
/// };
/// let drained =
///     mcp_subscriptions::http::serve_until_drained(listener, app, shutdown, streams, Duration::from_secs(5))
///         .await;
/// println!("{} streams open at shutdown, {} cut", drained.open, drained.cut);
/// # Ok(())
/// # }
/// ```
pub async fn serve_until_drained(
    listener: impl Into<Listener>,
    router: Router,
    shutdown: impl Future<Output = ()>,
    streams: Streams,
    deadline: Duration,
) -> Drained {
    Server::new()
        .serve_until_drained(listener, router, shutdown, streams, deadline)
        .await
}

/// One accepted connection and what it is served with.
struct Connection {
    socket: Socket,
    /// Its client, in its requests' extensions, where admission limits
    /// are set.
    peer: Option<Peer>,
    /// Over an admission limit: its first request is answered with this.
    refused: Option<Refused>,
    router: Router,
    stop: Watch,
    open: Open,
    tracked: Tracked,
}

impl Connection {
    #[allow(clippy::boxed_local, reason = "freeing the box is the point")]
    fn unboxed(this: Box<Self>) -> Self {
        *this
    }

    /// Serves it: its first request on the socket when it holds a stream
    /// (and `on_the_socket`), otherwise the whole connection through hyper.
    ///
    /// Boxed: an async fn keeps room for its arguments all its life, and
    /// a held stream's task is to keep room only for what it holds.
    async fn serve(self: Box<Self>, on_the_socket: bool) {
        // Out of its box at once: a box moved out of in an async fn is
        // freed only at its end, and a held stream's lasts hours.
        let Self {
            socket,
            peer,
            refused,
            router,
            mut stop,
            open,
            tracked,
        } = Self::unboxed(self);
        let router = match refused {
            Some(refused) => refusing(refused),
            None => router,
        };
        let (read, tracked) = if on_the_socket && refused.is_none() {
            // Boxed: the reading's state is freed once it is done, instead
            // of staying in the task for a held stream's life.
            let mut reading =
                Watchdog::new(tracked, Box::pin(socket::read_first(&socket, &mut stop)));
            match (&mut reading).await {
                Ok(First::Held(mut request)) => {
                    drop(reading);
                    drop(stop);
                    if let Some(peer) = peer {
                        request.extensions_mut().insert(peer);
                    }
                    // Boxed: the answer's state is freed once the response is made.
                    let response = Box::pin(socket::answer(router, request)).await;
                    socket::write_held(socket, response).await;
                    drop(open);
                    return;
                }
                Ok(First::Other(read)) => (read, reading.into_tracked()),
                Ok(First::Gone) | Err(_) => return,
            }
        } else {
            (Bytes::new(), tracked)
        };
        // Boxed, so that a held stream's task is not the size of hyper's
        // connection.
        Box::pin(through_hyper(
            Rewind::new(read, socket),
            peer,
            router,
            stop,
            tracked,
        ))
        .await;
        drop(open);
    }
}

/// Serves one connection through hyper, closed early by its deadlines.
async fn through_hyper(
    socket: Rewind,
    peer: Option<Peer>,
    router: Router,
    stop: Watch,
    tracked: Tracked,
) {
    let connection = http1::Builder::new()
        .writev(false)
        .max_buf_size(BUFFER)
        .serve_connection(TokioIo::new(socket), tracked.service(router, peer))
        .with_upgrades();
    if let Ok(served) = Watchdog::new(tracked, UntilStopped { connection, stop }).await {
        log(served);
    }
}

/// What a connection over an admission limit is served: its first request
/// is answered `429`, and the connection closed (the answer says so).
fn refusing(refused: Refused) -> Router {
    Router::new().fallback(move || async move { refused.response(&serde_json::Value::Null) })
}

/// One HTTP/1 connection, WebSocket upgrades included.
type HyperConnection = http1::UpgradeableConnection<TokioIo<Rewind>, TrackedService>;

/// Serves one connection; once asked to stop, it closes after the response
/// in progress.
struct UntilStopped {
    connection: HyperConnection,
    stop: Watch,
}

impl Future for UntilStopped {
    type Output = Result<(), hyper::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if this.stop.stopped_now(cx) {
            Pin::new(&mut this.connection).graceful_shutdown();
        }
        Pin::new(&mut this.connection).poll(cx)
    }
}

/// Lets what is written go out at once: a stream's events are small
/// writes, and Nagle's algorithm would hold one back until the client
/// acknowledged the last segment, which a delayed ACK puts off by up to
/// 40 ms (through the gateway, the first event of every upstream listen
/// took 25 ms so, `BENCHMARKS.md`). A socket that refuses is served as it
/// is.
fn no_delay(socket: &TcpStream) {
    let _ = socket.set_nodelay(true);
}

fn log(served: Result<(), hyper::Error>) {
    if let Err(err) = served {
        tracing::debug!(%err, "a connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_served_socket_writes_without_waiting_for_acknowledgements() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (socket, _) = listener.accept().await.unwrap();
        assert!(
            !socket.nodelay().unwrap(),
            "Nagle's algorithm is on by default"
        );
        no_delay(&socket);
        assert!(socket.nodelay().unwrap());
    }
}
