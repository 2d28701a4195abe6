//! The whole MCP endpoint in one call: the listen route in front of rmcp's
//! `StreamableHttpService`, configured once for both.

use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::model::ProtocolVersion;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::transport::HttpTransport;
use crate::serve::ListenService;
use crate::source::Source;

/// The MCP endpoint over Streamable HTTP: listen streams served from
/// `listen`, every other message by rmcp's `StreamableHttpService` over the
/// servers `server` makes, and one configuration for both.
///
/// The listen route takes from `config` the host names it admits
/// (`allowed_hosts`, against DNS rebinding) and the keep-alive interval of
/// its streams (`sse_keep_alive`, when set), and from the server its
/// protocol versions: those of `ServerHandler::supported_protocol_versions`
/// that have listen streams (2026-07-28 and later), read from one server
/// made for it now. None is set twice, so they cannot drift apart.
///
/// ```no_run
/// use mcp_subscriptions::{Hub, ListenService};
/// use rmcp::transport::StreamableHttpServerConfig;
/// # #[derive(Clone)] struct MyServer;
/// # impl rmcp::ServerHandler for MyServer {}
///
/// let hub = Hub::new();
/// let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false);
/// let http = mcp_subscriptions::http::endpoint(ListenService::new(hub), || MyServer, config);
/// let streams = http.streams(); // to await at shutdown
/// let app: axum::Router = axum::Router::new().route("/mcp", http.into_method_router());
/// ```
pub fn endpoint<S, H>(
    listen: ListenService<S>,
    server: impl Fn() -> H + Send + Sync + 'static,
    config: StreamableHttpServerConfig,
) -> HttpTransport<S, StreamableHttpService<H, LocalSessionManager>>
where
    S: Source + 'static,
    S::Handle: 'static,
    H: ServerHandler + Send + 'static,
{
    let listening_versions: Vec<String> = server()
        .supported_protocol_versions()
        .iter()
        .filter(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
        .map(|version| version.as_str().to_owned())
        .collect();
    let allowed_hosts = config.allowed_hosts.clone();
    let legacy_sessions = config.legacy_session_mode;
    let keepalive = config.sse_keep_alive;
    let mcp = StreamableHttpService::new(
        move || Ok(server()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let http = HttpTransport::new(listen, mcp)
        .with_allowed_hosts(allowed_hosts)
        .with_protocol_versions(listening_versions)
        .with_legacy_sessions(legacy_sessions);
    match keepalive {
        Some(keepalive) => http.with_keepalive(keepalive),
        None => http,
    }
}
