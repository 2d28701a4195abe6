//! The socket-level server: a connection's first request read and, when it
//! holds a stream, answered without hyper.
//!
//! A held stream lives for hours and writes a few events, so what its
//! connection keeps is what it costs. Under hyper that is two 8 KiB
//! buffers (its least) and its per-connection state for the stream's whole
//! life; answered here, only the stream itself (2.4 KiB in all, against
//! 23 KiB; `BENCHMARKS.md`, held streams).
//!
//! # What it takes
//!
//! Only a connection's **first** request, and only when it is all of:
//!
//! - HTTP/1.1, parsed by `httparse` with at most 32 headers;
//! - head and body within 8 KiB ([`BUFFER`]), the body framed by one
//!   `Content-Length` of digits alone, or absent (an empty body);
//! - no `Transfer-Encoding`, `Expect` or `Upgrade` header;
//! - nothing sent after the body (no pipelined second request);
//! - a `POST` whose JSON body's `method` is `subscriptions/listen`, or a
//!   `GET` that accepts `text/event-stream` (an older revision's session
//!   stream);
//! - a method, path, header names and values that `http` accepts.
//!
//! Such a request goes to the router, as hyper would have passed it, and
//! the router's response, refusals included, is written here ([`answer`],
//! then [`write_held`]): HTTP/1.1 chunked (or with its `Content-Length`),
//! `connection: close`, a `date` header, and the socket as its only
//! buffer. The connection ends with the response.
//!
//! # What it leaves to hyper
//!
//! Everything else, errors included: any later request on a connection,
//! anything not plain enough above, a head it cannot parse, a head longer
//! than 8 KiB (hyper answers `431`), TLS or other bytes that are not HTTP.
//! Those go to hyper with the bytes already read given back first
//! ([`Rewind`]), as if nothing had read them.
//!
//! # Also here
//!
//! What the server accepts on ([`Listener`]: TCP or a Unix socket) and the
//! connection an accept gives; each connection's stop signal (`stop`) and
//! whether its client vanished (`vanished`), which the server, the held
//! writer, hyper's socket and the event stream share. Nothing here reaches
//! up into the rest of `http`. And a file kept spare for the moment the
//! process runs out of them ([`Spare`]), so that a connection waiting to
//! be accepted is turned away at once instead of left to its client's
//! timeout.
//!
//! The deadlines of a connection reading its first request here are the
//! server's (`connections`): the read is watched like any other.

mod first;
mod held;
mod listener;
mod rewind;
mod spare;
pub(in crate::transport::http) mod stop;
pub(in crate::transport::http) mod vanished;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use tower_service::Service;

pub(in crate::transport::http) use first::{BUFFER, First, read as read_first};
#[doc(hidden)]
pub use first::{Classified, classify};
pub(in crate::transport::http) use held::write as write_held;
pub use listener::Listener;
pub(in crate::transport::http) use listener::Socket;
pub(in crate::transport::http) use rewind::Rewind;
pub(in crate::transport::http) use spare::Spare;

/// Answers a request that holds a stream with `router`; its response is
/// then written on the socket with [`write_held`] until it ends or the
/// client leaves. Two steps, not one future: a held stream's task keeps
/// room only for the writing.
pub(in crate::transport::http) async fn answer(
    mut router: Router,
    request: Box<Request<Body>>,
) -> Response {
    match router.call(*request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
