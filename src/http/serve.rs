//! Serving a router over HTTP/1 at the least memory per held stream.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::task::TaskTracker;
use tower_service::Service;

use super::first::{self, BUFFER, First};
use super::held;
use super::rewind::Rewind;
use super::spare::Spare;
use super::stop::{Stop, Watch};
use crate::transport::{Drained, Streams};

/// How long accepting pauses after an error it cannot help (out of open
/// files, it turns a connection away instead: see `spare`), so that a
/// lasting one does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(10);

/// Serves `router` on `listener`, one HTTP/1 connection per task, until
/// `shutdown` resolves; then accepts no more, asks every connection to
/// close once its response is done, and returns when all have.
///
/// It does what `axum::serve(listener, router).with_graceful_shutdown(..)`
/// does, WebSocket upgrades included (the notification channel), for a
/// fraction of the memory per held listen stream (2.6 KiB against 23 KiB;
/// the figures are in `BENCHMARKS.md`, held streams):
///
/// - A connection whose first request holds a stream (a
///   `subscriptions/listen` POST, or an older revision's `GET` of its
///   session's stream) is answered on the socket: the router answers the
///   request, and its response is written as it comes, with `connection:
///   close`. Hyper never sees that connection, so none of its buffers or
///   state is kept for the hours a stream lives. Anything else, or a
///   first request that is not plain enough (a chunked body, `Expect`, an
///   upgrade, more than 8 KiB, a second request behind it), goes to hyper
///   with the bytes already read, as below; so does a listen request on a
///   connection that served another first.
/// - hyper's HTTP/1 builder serves each other connection directly.
///   `axum::serve` detects the protocol first and hands hyper the bytes it
///   peeked, after which hyper's read buffer doubles to 16 KiB.
/// - The router is cloned per connection, not rebuilt: `axum::serve`
///   builds a make-service, which copies the route table for each one.
/// - Hyper writes responses from one buffer (`writev(false)`): an SSE
///   event is copied into the connection's buffer instead of queued beside
///   it, so no queue is kept per connection and events that arrive
///   together leave in one write.
/// - That buffer is flushed once it holds 8 KiB (hyper's `max_buf_size`,
///   at its least), and long events reach it in pieces of at most 8 KiB,
///   so a burst grows it to 16 KiB at most, for the connection's life; a
///   client that stops reading stalls its stream within that much (within
///   the socket's own buffer, for a stream answered on the socket).
///
/// Out of open files, it turns each waiting connection away at once
/// (accepted and closed, with a file it keeps spare for that), so that its
/// client learns now, not at its own timeout, and tries again, on another
/// replica when several share the port.
///
/// The same bound limits a request's head (its request line and headers)
/// to 8 KiB, as in Jetty; a longer one is answered `431 Request Header
/// Fields Too Large` and its connection closed, and the server goes on.
///
/// A listen stream ends only when its source does: complete the hub (or
/// cut the transport's [`Streams`](crate::transport::Streams)) when
/// `shutdown` resolves, or this waits for the streams too.
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
pub async fn serve(listener: TcpListener, router: Router, shutdown: impl Future<Output = ()>) {
    let stop = Stop::default();
    let connections = TaskTracker::new();
    let mut spare = Spare::open();
    let accepting = async {
        loop {
            match listener.accept().await {
                Ok((socket, _)) => {
                    connections.spawn(connection(socket, router.clone(), stop.watch()));
                }
                // An accept error ends no connection already open.
                Err(err) => {
                    if spare.turn_away(&listener, &err) {
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
    connections.close();
    connections.wait().await;
}

/// [`serve`] with the whole graceful shutdown: once `shutdown` resolves
/// (it also completes the source, such as `hub.complete()`, so that each
/// stream has a last message to write), `streams` get `deadline` to write
/// it; those still open then are cut, and this returns what was found,
/// after the server's connections closed or at the latest once the
/// streams are cut.
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
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()>,
    streams: Streams,
    deadline: Duration,
) -> Drained {
    let (stopping, stopped) = tokio::sync::oneshot::channel();
    let server = serve(listener, router, async move {
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

/// Serves one connection: its first request on the socket when it holds
/// a stream (see `first`), otherwise the whole connection through hyper.
async fn connection(socket: TcpStream, router: Router, mut stop: Watch) {
    match first::read(&socket, &mut stop).await {
        First::Gone => {}
        First::Held(request) => {
            drop(stop);
            let response = Box::pin(answer(router, *request)).await;
            held::write(socket, response).await;
        }
        // Boxed, so that a held stream's task is not the size of hyper's
        // connection.
        First::Other(read) => {
            Box::pin(through_hyper(Rewind::new(read, socket), router, stop)).await
        }
    }
}

async fn answer(mut router: Router, request: Request<Body>) -> Response {
    match router.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

fn through_hyper(socket: Rewind, router: Router, stop: Watch) -> UntilStopped {
    let connection = http1::Builder::new()
        .writev(false)
        .max_buf_size(BUFFER)
        .serve_connection(TokioIo::new(socket), TowerToHyperService::new(router))
        .with_upgrades();
    UntilStopped { connection, stop }
}

/// One HTTP/1 connection, WebSocket upgrades included.
type Connection = http1::UpgradeableConnection<TokioIo<Rewind>, TowerToHyperService<Router>>;

/// Serves one connection; once asked to stop, it closes after the response
/// in progress.
///
/// A future of its own, not an `async fn` selecting on a cancellation,
/// which would keep the connection twice in its task (the argument and a
/// pinned copy): a held stream pays for each byte of its task.
struct UntilStopped {
    connection: Connection,
    stop: Watch,
}

impl Future for UntilStopped {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.stop.stopped_now(cx) {
            Pin::new(&mut this.connection).graceful_shutdown();
        }
        Pin::new(&mut this.connection).poll(cx).map(log)
    }
}

fn log(served: Result<(), hyper::Error>) {
    if let Err(err) = served {
        tracing::debug!(%err, "a connection ended with an error");
    }
}
