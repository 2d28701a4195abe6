//! Streamable HTTP: listen POSTs become SSE responses served by the crate;
//! everything else goes to rmcp's `StreamableHttpService` (or any service).

use std::convert::Infallible;
use std::future::poll_fn;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use serde_json::Value;
use tower_service::Service;

use super::{error_reply, listen_request, request_id, sse};
use crate::serve::ListenService;
use crate::source::{CloseReason, Source};

/// The largest request body read, as rmcp's own limit.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Methods this protocol revision removed, answered 404 / `-32601`.
const REMOVED: [&str; 2] = ["resources/subscribe", "resources/unsubscribe"];

const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// The MCP endpoint: `POST` serves `subscriptions/listen` from `listen` as
/// `text/event-stream` and hands every other message to `mcp` (rmcp's
/// `StreamableHttpService`); `GET` and `DELETE` answer 405.
///
/// A listen stream's response carries `X-Accel-Buffering: no`, one SSE
/// event per message, and a comment line whenever it has been idle for the
/// service's keep-alive interval. A closed response is the client
/// cancelling: the source is closed at once. Malformed params, too many
/// URIs or a full server are refused before any acknowledgement, as a
/// JSON-RPC error. `resources/subscribe` and `resources/unsubscribe` (gone in
/// this protocol revision) answer 404 with `-32601`.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcp_subscriptions::{Hub, ListenService, http_endpoint};
/// use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
/// use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
/// # #[derive(Clone)] struct MyServer;
/// # impl rmcp::ServerHandler for MyServer {}
///
/// let hub = Hub::new();
/// let mcp = StreamableHttpService::new(
///     || Ok(MyServer),
///     Arc::new(LocalSessionManager::default()),
///     StreamableHttpServerConfig::default().with_legacy_session_mode(false),
/// );
/// let app = axum::Router::new().route("/mcp", http_endpoint(ListenService::new(hub), mcp));
/// ```
pub fn http_endpoint<S, M, B>(listen: ListenService<S>, mcp: M) -> MethodRouter
where
    S: Source + 'static,
    S::Handle: 'static,
    M: Service<Request, Response = Response<B>, Error = Infallible> + Clone + Send + Sync + 'static,
    M::Future: Send,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    post(move |request: Request| {
        let (listen, mcp) = (listen.clone(), mcp.clone());
        async move { handle(listen, mcp, request).await }
    })
}

async fn handle<S, M, B>(listen: ListenService<S>, mut mcp: M, request: Request) -> Response
where
    S: Source + 'static,
    S::Handle: 'static,
    M: Service<Request, Response = Response<B>, Error = Infallible>,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    if let Ok(message) = serde_json::from_slice::<Value>(&bytes) {
        let ours = listen_request(&message).is_some()
            || REMOVED.iter().any(|m| request_id(&message, m).is_some());
        // What rmcp answers, rmcp guards; what we answer, we guard.
        if ours && !super::host_allowed(&parts.headers, &listen.options().allowed_hosts) {
            return (
                StatusCode::FORBIDDEN,
                "Forbidden: Host or Origin not allowed",
            )
                .into_response();
        }
        if let Some(id) = listen_request(&message) {
            return serve_listen(&listen, id, message.get("params"));
        }
        for removed in REMOVED {
            if let Some(id) = request_id(&message, removed) {
                return method_removed(id, removed);
            }
        }
    }
    let request = Request::from_parts(parts, Body::from(bytes));
    let ready = poll_fn(|cx| mcp.poll_ready(cx)).await;
    let response = match ready {
        Ok(()) => mcp.call(request).await,
        Err(never) => match never {},
    };
    match response {
        Ok(response) => response.map(Body::new),
        Err(never) => match never {},
    }
}

fn serve_listen<S>(listen: &ListenService<S>, id: RequestId, params: Option<&Value>) -> Response
where
    S: Source + 'static,
    S::Handle: 'static,
{
    let mut stream = match listen.open(id, params) {
        Ok(stream) => stream,
        Err(refusal) => return json_response(StatusCode::OK, refusal.to_message()),
    };
    // Over HTTP the client ends a stream by closing the response.
    stream.set_drop_reason(CloseReason::Cancelled);
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (X_ACCEL_BUFFERING, HeaderValue::from_static("no")),
    ];
    (headers, sse::body(stream, listen.options().keepalive)).into_response()
}

fn method_removed(id: &Value, method: &str) -> Response {
    let error = ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} was removed in MCP 2026-07-28; use subscriptions/listen"),
        None,
    );
    json_response(StatusCode::NOT_FOUND, error_reply(id, error))
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body,
    )
        .into_response()
}
