//! A server written with rmcp alone (none of this crate): rmcp 3.11's own
//! `subscriptions/listen` handler, which publishes on a timer. The interop
//! tests (`tests/client/interop.rs`) point the crate's client at it.
//!
//! ```sh
//! cargo run --example rmcp_listen            # MCP on stdin and stdout
//! cargo run --example rmcp_listen -- --http  # prints "listening on http://127.0.0.1:PORT/mcp"
//! ```
//!
//! Every 50 ms each open stream is sent `notifications/tools/list_changed`
//! and a `notifications/resources/updated` for `file:///a` and for
//! `file:///b`, each only if its accepted filter asks for it (rmcp's
//! `SubscriptionSink` refuses the others).

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    Implementation, ProtocolVersion, ResourcesCapability, ServerCapabilities, ServerConfig,
    SubscriptionFilter, ToolsCapability,
};
use rmcp::service::SubscriptionContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServiceExt};

const PERIOD: Duration = Duration::from_millis(50);

#[derive(Clone)]
struct Server;

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        resources.list_changed = Some(true);
        let mut capabilities = ServerCapabilities::default();
        capabilities.tools = Some(tools);
        capabilities.resources = Some(resources);
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "interop-rmcp",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp narrows this by the advertised capabilities.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink().clone();
        let publish = async move {
            let mut tick = tokio::time::interval(PERIOD);
            loop {
                tick.tick().await;
                // A kind or URI outside the accepted filter is refused by
                // the sink, as it should be: those errors are expected.
                let _ = sink.notify_tool_list_changed().await;
                let _ = sink.notify_resource_updated("file:///a").await;
                let _ = sink.notify_resource_updated("file:///b").await;
            }
        };
        tokio::select! {
            () = context.cancelled() => {}
            () = publish => {}
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--http") {
        let service = StreamableHttpService::new(
            || Ok(Server),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_legacy_session_mode(false),
        );
        let app = axum::Router::new().route_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening on http://{}/mcp", listener.local_addr()?);
        axum::serve(listener, app).await?;
    } else {
        let running = Server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
    }
    Ok(())
}
