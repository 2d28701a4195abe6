//! Serving listen streams over Streamable HTTP (feature `http`): listen
//! POSTs become SSE responses served by the crate; everything else goes to
//! rmcp's `StreamableHttpService` (or any service).

mod sse;

use std::convert::Infallible;
use std::future::poll_fn;
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use serde_json::Value;
use tokio_util::task::TaskTracker;
use tower_service::Service;

use crate::context::{OpenContext, TransportKind};
use crate::serve::ListenService;
use crate::source::{CloseReason, Source};
use crate::transport::Streams;
use crate::transport::hosts::{AllowedHosts, forbidden};
use crate::transport::request::{listen_request, request_id};
use crate::wire::response::error_reply;

/// How often an idle stream sends a keep-alive comment unless configured
/// otherwise.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(5);

/// The largest request body read, as rmcp's own limit.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Methods this protocol revision removed, answered 404 / `-32601`.
const REMOVED: [&str; 2] = ["resources/subscribe", "resources/unsubscribe"];

const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// The MCP endpoint: `POST` serves `subscriptions/listen` from a
/// [`ListenService`] as `text/event-stream` and hands every other message to
/// `mcp` (rmcp's `StreamableHttpService`, or any service); `GET` and
/// `DELETE` answer 405.
///
/// A listen stream's response carries `X-Accel-Buffering: no`, one SSE
/// event per message, and a comment line whenever it has been idle for the
/// [keep-alive](Self::with_keepalive) interval. A closed response is the
/// client cancelling: the source is closed at once. Malformed params, too
/// many URIs or a full server are refused before any acknowledgement, as a
/// JSON-RPC error. `resources/subscribe` and `resources/unsubscribe` (gone
/// in this protocol revision) answer 404 with `-32601`.
///
/// ```no_run
/// use std::sync::Arc;
/// use mcp_subscriptions::http::HttpTransport;
/// use mcp_subscriptions::{Hub, ListenService};
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
/// let http = HttpTransport::new(ListenService::new(hub), mcp);
/// let streams = http.streams(); // to await at shutdown
/// let app: axum::Router = axum::Router::new().route("/mcp", http.into_method_router());
/// ```
pub struct HttpTransport<S, M> {
    listen: ListenService<S>,
    mcp: M,
    keepalive: Duration,
    allowed_hosts: AllowedHosts,
    tasks: TaskTracker,
}

impl<S, M, B> HttpTransport<S, M>
where
    S: Source + 'static,
    S::Handle: 'static,
    M: Service<Request, Response = Response<B>, Error = Infallible> + Clone + Send + Sync + 'static,
    M::Future: Send,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    /// Serves listen streams from `listen` and everything else from `mcp`.
    pub fn new(listen: ListenService<S>, mcp: M) -> Self {
        Self {
            listen,
            mcp,
            keepalive: DEFAULT_KEEPALIVE,
            allowed_hosts: AllowedHosts::default(),
            tasks: TaskTracker::new(),
        }
    }

    /// How often an idle stream sends an SSE comment line (default
    /// [`DEFAULT_KEEPALIVE`]).
    pub fn with_keepalive(mut self, keepalive: Duration) -> Self {
        self.keepalive = keepalive;
        self
    }

    /// The host names accepted in `Host` and `Origin` on the requests this
    /// transport answers itself, against DNS rebinding (default:
    /// `localhost`, `127.0.0.1`, `::1`, as rmcp's server); empty accepts
    /// any. Keep it in step with rmcp's
    /// `StreamableHttpServerConfig::allowed_hosts`, which guards the rest.
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_hosts = AllowedHosts::new(hosts);
        self
    }

    /// The listen streams being served, for a graceful shutdown to wait on:
    /// each stream counts until its response body is finished or dropped.
    pub fn streams(&self) -> Streams {
        Streams::new(self.tasks.clone())
    }

    /// The route to mount at the MCP endpoint: `POST`.
    pub fn into_method_router(self) -> MethodRouter {
        let route = Route {
            listen: self.listen,
            keepalive: self.keepalive,
            allowed_hosts: self.allowed_hosts,
            tasks: self.tasks,
        };
        let mcp = self.mcp;
        post(move |request: Request| {
            let (route, mcp) = (route.clone(), mcp.clone());
            async move { route.handle(mcp, request).await }
        })
    }
}

impl<S, M> std::fmt::Debug for HttpTransport<S, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("keepalive", &self.keepalive)
            .field("allowed_hosts", &self.allowed_hosts)
            .finish_non_exhaustive()
    }
}

/// What every request to the endpoint shares.
struct Route<S> {
    listen: ListenService<S>,
    keepalive: Duration,
    allowed_hosts: AllowedHosts,
    tasks: TaskTracker,
}

impl<S> Clone for Route<S> {
    fn clone(&self) -> Self {
        Self {
            listen: self.listen.clone(),
            keepalive: self.keepalive,
            allowed_hosts: self.allowed_hosts.clone(),
            tasks: self.tasks.clone(),
        }
    }
}

impl<S> Route<S>
where
    S: Source + 'static,
    S::Handle: 'static,
{
    async fn handle<M, B>(&self, mut mcp: M, request: Request) -> Response
    where
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
            if ours && !self.allowed_hosts.admit(&parts.headers) {
                return forbidden();
            }
            if let Some(id) = listen_request(&message) {
                return self.serve_listen(id, message.get("params"), &parts);
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

    fn serve_listen(&self, id: RequestId, params: Option<&Value>, parts: &Parts) -> Response {
        let context = OpenContext::default()
            .with_transport(TransportKind::Http)
            .with_http(parts.clone());
        let mut stream = match self.listen.open_with(context, id, params) {
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
        // The body holds a token of the tracker until hyper drops it, so that
        // `Streams::finished` waits for the stream's last message.
        let body = sse::body(stream, self.keepalive, self.tasks.token());
        (headers, body).into_response()
    }
}

fn method_removed(id: &Value, method: &str) -> Response {
    let error = ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} was removed in MCP 2026-07-28; use subscriptions/listen"),
        None,
    );
    json_response(StatusCode::NOT_FOUND, error_reply(id, &error))
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body,
    )
        .into_response()
}
