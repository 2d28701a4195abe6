//! A gateway: one MCP server (rmcp) in front of several upstream MCP
//! servers, whose tools, prompts, resources and templates it serves merged
//! and namespaced (`a/search`, `a+file:///notes.md` for upstream `a`), and
//! whose `subscriptions/listen` streams are fed by one shared upstream
//! listen per upstream, opened and narrowed as downstream demand says.
//!
//! ```sh
//! cargo run --release --example gateway -- \
//!     --upstream a=http://127.0.0.1:8801/mcp \
//!     --upstream b=stdio:"target/release/examples/server --stdio"
//! ```
//!
//! It forwards `tools/call`, `prompts/get` and `resources/read` to the
//! upstream the name or URI belongs to. `GET /stats` shows, per upstream,
//! the upstream listens held and the URIs they ask for, beside the hub's
//! statistics. Ctrl-C or SIGTERM completes every open stream gracefully.

#[path = "../../examples/support/serving.rs"]
mod serving;

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use clap::Parser;
use clap::builder::BoolishValueParser;
use mcp_subscriptions::WithSubscriptions;
use mcp_subscriptions_client::StdioClient;
use mcp_subscriptions_client::catalog::CatalogKind;
use mcp_subscriptions_gateway::{Gateway, Upstream};
use rmcp::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ErrorData, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::StreamableHttpServerConfig;

/// An MCP gateway over upstream MCP servers.
#[derive(Parser)]
#[command(version)]
struct Options {
    /// An upstream: NAME=http://HOST:PORT/mcp, or NAME=stdio:COMMAND ARGS
    /// (split at spaces); repeat for more
    #[arg(long = "upstream", value_name = "NAME=TARGET", required = true, value_parser = upstream)]
    upstreams: Vec<Upstream>,
    /// Serve HTTP on this address (port 0: any free port)
    #[arg(long, value_name = "ADDR", default_value_t = SocketAddr::from(([127, 0, 0, 1], 8800)))]
    bind: SocketAddr,
    /// Share the HTTP port with other gateway replicas started with this
    /// flag (SO_REUSEPORT)
    #[arg(long, value_parser = BoolishValueParser::new())]
    reuse_port: bool,
    /// Seconds an upstream URI stays listened to after its last
    /// downstream listener left
    #[arg(long, value_name = "N", default_value_t = mcp_subscriptions::Demand::DEFAULT_GRACE.as_secs())]
    grace_secs: u64,
}

fn upstream(value: &str) -> Result<Upstream, String> {
    let (name, target) = value
        .split_once('=')
        .ok_or_else(|| format!("{value:?} is not NAME=TARGET"))?;
    if let Some(command) = target.strip_prefix("stdio:") {
        let mut words = command.split_whitespace();
        let program = words
            .next()
            .ok_or_else(|| format!("{value:?} names no command"))?;
        let client = StdioClient::spawn(program, words.map(str::to_owned).collect::<Vec<_>>())
            .map_err(|err| format!("{program}: {err}"))?;
        Ok(Upstream::stdio(name, client))
    } else if target.starts_with("http://") || target.starts_with("https://") {
        Ok(Upstream::http(name, target))
    } else {
        Err(format!(
            "{target:?} is neither http(s):// nor stdio:COMMAND"
        ))
    }
}

/// The downstream MCP server: every list from the gateway, every call
/// forwarded.
#[derive(Clone)]
struct GatewayServer {
    gateway: Gateway,
}

impl GatewayServer {
    /// A merged list's `ttlMs` and `cacheScope`: the upstreams' hints
    /// merged pessimistically, where they gave any.
    fn cache_hint(&self, kind: CatalogKind) -> (Option<u64>, Option<CacheScope>) {
        let hint = self.gateway.cache_hint(kind);
        let ttl = hint
            .ttl
            .map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        (ttl, hint.scope)
    }
}

impl ServerHandler for GatewayServer {
    fn get_info(&self) -> ServerConfig {
        let base = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        // `WithSubscriptions` sets the subscription bits under it.
        ServerConfig::new(base).with_server_info(server_info())
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut result = ListToolsResult::with_all_items(self.gateway.tools());
        (result.ttl_ms, result.cache_scope) = self.cache_hint(CatalogKind::Tools);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = self.gateway.call_tool(request).await?;
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut result = ListPromptsResult::with_all_items(self.gateway.prompts());
        (result.ttl_ms, result.cache_scope) = self.cache_hint(CatalogKind::Prompts);
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let result = self.gateway.get_prompt(request).await?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut result = ListResourcesResult::with_all_items(self.gateway.resources());
        (result.ttl_ms, result.cache_scope) = self.cache_hint(CatalogKind::Resources);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut result = ListResourceTemplatesResult::with_all_items(self.gateway.templates());
        (result.ttl_ms, result.cache_scope) = self.cache_hint(CatalogKind::Templates);
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Ok(self.gateway.read_resource(request).await?.into())
    }
}

fn server_info() -> Implementation {
    Implementation::new("mcp-subscriptions-gateway", env!("CARGO_PKG_VERSION"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shutdown = serving::Shutdown::install()?;
    let options = Options::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,mcp_subscriptions=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let mut builder = Gateway::builder().grace(Duration::from_secs(options.grace_secs));
    for upstream in options.upstreams {
        builder = builder.upstream(upstream);
    }
    let gateway = builder.open().await?;
    let listen = gateway.listen_service();
    let server = GatewayServer {
        gateway: gateway.clone(),
    };
    let sessions = WithSubscriptions::factory(&listen, move || server.clone());
    let http =
        mcp_subscriptions::http::endpoint(listen, sessions, StreamableHttpServerConfig::default());
    let streams = http.streams();
    let stats = gateway.clone();
    let app = axum::Router::new()
        .route("/mcp", http.into_method_router())
        .route(
            "/stats",
            get(move || async move {
                let body = serde_json::json!({
                    "upstreams": stats.stats(),
                    "hub": stats.hub().stats(),
                });
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    body.to_string(),
                )
            }),
        );
    let listener = serving::bind(options.bind, options.reuse_port)?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let hub = gateway.hub().clone();
    let shutdown = async move {
        shutdown.requested().await;
        hub.complete();
    };
    let deadline = Duration::from_secs(5);
    mcp_subscriptions::http::serve_until_drained(listener, app, shutdown, streams, deadline).await;
    Ok(())
}
