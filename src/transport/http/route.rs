//! One POST to the MCP endpoint: classified, checked, then served as a
//! listen stream, answered as a removed method, or handed to the service
//! behind.

use std::convert::Infallible;
use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::RequestId;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_service::Service;

use super::admission::Peer;
use super::answers::{
    into_json_error, method_not_allowed, method_removed, payload_too_large, refused,
    unsupported_media_type,
};
use super::headers;
use super::sse;
use crate::audience::Principal;
use crate::context::{OpenContext, TransportKind};
use crate::serve::ListenService;
use crate::source::{CloseReason, Source};
use crate::transport::hosts::{AllowedHosts, forbidden};
use crate::transport::incoming::{classify, reply_id};
use crate::transport::request::Stateless;
use crate::transport::request::{listen_request, request_id};

/// The largest request body read, as rmcp's own limit.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Methods this protocol revision removed, answered 404 / `-32601`.
const REMOVED: [&str; 2] = ["resources/subscribe", "resources/unsubscribe"];

const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// What names an older revision's session (there are none from 2026-07-28
/// on).
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// What every request to the endpoint shares.
pub(super) struct Route<S> {
    pub(super) listen: ListenService<S>,
    pub(super) keepalive: Duration,
    pub(super) allowed_hosts: AllowedHosts,
    pub(super) protocol_versions: Arc<[String]>,
    /// Whether the service behind keeps older revisions' sessions.
    pub(super) legacy_sessions: bool,
    pub(super) tasks: TaskTracker,
    pub(super) cut: CancellationToken,
}

impl<S> Clone for Route<S> {
    fn clone(&self) -> Self {
        Self {
            listen: self.listen.clone(),
            keepalive: self.keepalive,
            allowed_hosts: self.allowed_hosts.clone(),
            protocol_versions: self.protocol_versions.clone(),
            legacy_sessions: self.legacy_sessions,
            tasks: self.tasks.clone(),
            cut: self.cut.clone(),
        }
    }
}

impl<S> Route<S>
where
    S: Source + 'static,
    S::Handle: 'static,
{
    pub(super) async fn handle<M, B>(&self, mut mcp: M, request: Request) -> Response
    where
        M: Service<Request, Response = Response<B>, Error = Infallible>,
        B: HttpBody<Data = Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        let (mut parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
            return payload_too_large();
        };
        let peer = parts.extensions.get::<Peer>().cloned();
        let principal = parts.extensions.get::<Principal>().cloned();
        // A connection counts against its principal at its first request.
        if let Some(Err(refused)) = peer.as_ref().map(|peer| peer.request(principal.as_ref())) {
            return refused.response(&reply_id(&bytes));
        }
        if !is_json(&parts) {
            return unsupported_media_type(&reply_id(&bytes));
        }
        // Garbage is answered here, for every method, before anything
        // looks at what the message asks.
        let incoming = match classify(&bytes) {
            Ok(incoming) => incoming,
            Err(err) => return refused(&err, &reply_id(&bytes)),
        };
        let message = incoming.message();
        // An older revision's session subscribes on the session.
        let removed = !self.in_session(&parts);
        let ours = listen_request(message).is_some()
            || removed && REMOVED.iter().any(|m| request_id(message, m).is_some());
        // What rmcp answers, rmcp guards; what we answer, we guard.
        if ours && !self.allowed_hosts.admit(&parts.headers) {
            return forbidden();
        }
        if let Some(id) = listen_request(message) {
            if let Err(err) = headers::check(&parts.headers, message, &self.protocol_versions) {
                return refused(&err, &reply_id(&bytes));
            }
            if let Some(Err(limited)) = peer.map(|peer| peer.listen(principal.as_ref())) {
                return limited.response(&reply_id(&bytes));
            }
            return self.serve_listen(id, message.get("params"), &parts).await;
        }
        for method in REMOVED.iter().filter(|_| removed) {
            if let Some(id) = request_id(message, method) {
                return method_removed(id, method);
            }
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if !self.legacy_sessions {
            parts.extensions.insert(Stateless);
        }
        let response = call(&mut mcp, Request::from_parts(parts, Body::from(bytes))).await;
        into_json_error(response.map(Body::new), &id).await
    }

    /// A `GET` or `DELETE`: an older revision's session's notification
    /// stream or its end, for the service behind; else 405.
    pub(super) async fn handle_other_method<M, B>(&self, mut mcp: M, request: Request) -> Response
    where
        M: Service<Request, Response = Response<B>, Error = Infallible>,
        B: HttpBody<Data = Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        let (parts, body) = request.into_parts();
        if !self.in_session(&parts) {
            return method_not_allowed().await;
        }
        call(&mut mcp, Request::from_parts(parts, body))
            .await
            .map(Body::new)
    }

    /// Whether the request names an older revision's session that the
    /// service behind keeps.
    fn in_session(&self, parts: &Parts) -> bool {
        self.legacy_sessions && parts.headers.contains_key(MCP_SESSION_ID)
    }

    /// A listen request's answer: its stream, or a refusal as plain JSON
    /// before any stream starts, whoever refused it (the checks, the
    /// source, or the demand hooks the stream waited for).
    async fn serve_listen(&self, id: RequestId, params: Option<&Value>, parts: &Parts) -> Response {
        let context = OpenContext::default()
            .with_transport(TransportKind::Http)
            .with_http(parts.clone());
        let opened = match self.listen.open_with(context, id, params) {
            Ok(mut stream) => stream.opened().await.map(|()| stream),
            Err(refusal) => Err(refusal),
        };
        let mut stream = match opened {
            Ok(stream) => stream,
            Err(refusal) => {
                return (
                    StatusCode::OK,
                    [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                    refusal.to_message(),
                )
                    .into_response();
            }
        };
        // Over HTTP the client ends a stream by closing the response; one
        // whose client vanished ends as such (see `vanished`).
        stream.set_drop_reason(CloseReason::Cancelled);
        // The body holds a token of the tracker until hyper drops it, so that
        // `Streams::finished` waits for the stream's last message.
        let body = sse::body(stream, self.keepalive, self.tasks.token(), self.cut.clone());
        let mut response = Response::new(body);
        *response.headers_mut() = sse_headers();
        response
    }
}

/// The service behind's answer to `request`.
async fn call<M, B>(mcp: &mut M, request: Request) -> Response<B>
where
    M: Service<Request, Response = Response<B>, Error = Infallible>,
{
    let ready = poll_fn(|cx| mcp.poll_ready(cx)).await;
    let response = match ready {
        Ok(()) => mcp.call(request).await,
        Err(never) => match never {},
    };
    match response {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// A listen stream's response headers, in a map with room for exactly
/// these: hyper keeps a response's map, emptied, for the connection's next
/// request, so its spare capacity (a default map holds six entries, over
/// 600 bytes) would last as long as the stream.
fn sse_headers() -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(3);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    headers
}

/// Whether the request says its body is JSON (`application/json`, with any
/// parameters such as a charset).
fn is_json(parts: &Parts) -> bool {
    parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}
