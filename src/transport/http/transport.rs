//! The MCP endpoint's front door: listen requests served by the crate,
//! everything else handed to the service behind.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use axum::routing::{MethodRouter, post};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_service::Service;

use super::route::Route;
use crate::serve::ListenService;
use crate::source::Source;
use crate::transport::hosts::AllowedHosts;
use crate::transport::streams::Streams;

/// How often an idle stream sends a keep-alive comment unless configured
/// otherwise.
///
/// Why 5 s: well inside the idle timeouts of the proxies a stream crosses
/// (nginx's `proxy_read_timeout` is 60 s, many load balancers' 60 s too),
/// and a comment line costs a few bytes. [`endpoint`](super::endpoint)
/// takes rmcp's `sse_keep_alive` instead (15 s by default), so that the
/// listen streams and rmcp's own SSE responses keep one interval.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(5);

/// The protocol versions a transport accepts on listen requests unless
/// configured otherwise.
pub const DEFAULT_PROTOCOL_VERSIONS: &[&str] = &["2026-07-28"];

/// The MCP endpoint: `POST` serves `subscriptions/listen` from a
/// [`ListenService`] as `text/event-stream` and hands every other message to
/// `mcp` (rmcp's `StreamableHttpService`, or any service). `GET` and
/// `DELETE` answer 405, except within an older revision's session (below).
///
/// It is the front door for every message, not only listen requests:
///
/// | the request | the answer |
/// | --- | --- |
/// | a body that is not JSON (empty, truncated, garbage) | 400, `-32700`, id `null` |
/// | JSON that is not a JSON-RPC message (no or wrong `jsonrpc`, an id that is `null`, an object, an array or a boolean, a method that is not a string, a batch) | 400, `-32600` |
/// | a `Content-Type` other than `application/json` | 415, `-32600` |
/// | a listen request whose `MCP-Protocol-Version` or `Mcp-Method` header disagrees with its body | 400, `-32020` |
/// | a listen request for a protocol version the transport does not [speak](Self::with_protocol_versions) | 400, `-32022`, `data: {supported, requested}` |
/// | `resources/subscribe`, `resources/unsubscribe` | 404, `-32601` |
/// | `GET`, `DELETE` | 405, `-32600` |
/// | any other valid message | rmcp's answer (its error answers always in JSON) |
///
/// A request that names an older revision's session in `Mcp-Session-Id`
/// (2025-06-18, 2025-11-25: there are no sessions from 2026-07-28 on) is
/// that session's, and `mcp`'s to answer: its `resources/subscribe` and
/// `resources/unsubscribe`, its `GET` stream of notifications, its
/// `DELETE`. [`WithSubscriptions`](crate::WithSubscriptions) serves those
/// sessions from the hub. Unless the service behind
/// [keeps no sessions](Self::with_legacy_sessions).
///
/// Every error body is a JSON-RPC error with `Content-Type:
/// application/json`, including those of the service behind.
///
/// A listen stream's response carries `X-Accel-Buffering: no`, one SSE
/// event per message, and a comment line whenever it has been idle for the
/// [keep-alive](Self::with_keepalive) interval. A closed response is the
/// client cancelling: the source is closed at once. Malformed params, too
/// many URIs or a full server are refused before any acknowledgement, as a
/// JSON-RPC error.
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
    protocol_versions: Vec<String>,
    legacy_sessions: bool,
    tasks: TaskTracker,
    cut: CancellationToken,
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
            protocol_versions: DEFAULT_PROTOCOL_VERSIONS
                .iter()
                .map(|version| (*version).to_owned())
                .collect(),
            legacy_sessions: true,
            tasks: TaskTracker::new(),
            cut: CancellationToken::new(),
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

    /// The protocol versions listen requests may name in their header or
    /// `_meta` (default [`DEFAULT_PROTOCOL_VERSIONS`]); another is refused
    /// with `-32022`. Keep it in step with the server's
    /// `supported_protocol_versions`, which rmcp checks for the rest.
    pub fn with_protocol_versions(
        mut self,
        versions: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.protocol_versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the service behind keeps sessions for clients of an older
    /// revision (rmcp's `legacy_session_mode`, on by default, which
    /// [`endpoint`](super::endpoint) reads). Without, a request naming a
    /// session is answered as any other, and
    /// [`WithSubscriptions`](crate::WithSubscriptions) promises no older
    /// client notifications it could not be sent.
    pub fn with_legacy_sessions(mut self, legacy_sessions: bool) -> Self {
        self.legacy_sessions = legacy_sessions;
        self
    }

    /// The listen streams being served, for a graceful shutdown to wait on:
    /// each stream counts until its response body is finished or dropped.
    pub fn streams(&self) -> Streams {
        Streams::new(self.tasks.clone(), self.cut.clone())
    }

    /// The route to mount at the MCP endpoint: `POST`.
    pub fn into_method_router(self) -> MethodRouter {
        let route = Route {
            listen: self.listen,
            keepalive: self.keepalive,
            allowed_hosts: self.allowed_hosts,
            protocol_versions: self.protocol_versions.into(),
            legacy_sessions: self.legacy_sessions,
            tasks: self.tasks,
            cut: self.cut,
        };
        let (other_route, other_mcp) = (route.clone(), self.mcp.clone());
        let mcp = self.mcp;
        post(move |request: Request| {
            let (route, mcp) = (route.clone(), mcp.clone());
            async move { route.handle(mcp, request).await }
        })
        .fallback(move |request: Request| {
            let (route, mcp) = (other_route.clone(), other_mcp.clone());
            async move { route.handle_other_method(mcp, request).await }
        })
    }
}

impl<S, M> std::fmt::Debug for HttpTransport<S, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("keepalive", &self.keepalive)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("protocol_versions", &self.protocol_versions)
            .field("legacy_sessions", &self.legacy_sessions)
            .finish_non_exhaustive()
    }
}
