//! The gateway as an MCP server: rmcp's `ServerHandler` that forwards every
//! request a [`View`] can, and the whole Streamable HTTP endpoint around it.

use std::borrow::Cow;
use std::future::Future;

use mcp_subscriptions::http::{self, HttpTransport, Listener};
use mcp_subscriptions::{Drained, Hub, OpenContext, WithSubscriptions};
use mcp_subscriptions_client::catalog::CatalogKind;
use rmcp::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    RequestMetaObject, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::handle::Gateway;
use crate::view::View;

/// The gateway's MCP endpoint over Streamable HTTP, as
/// [`Gateway::endpoint`] makes it.
pub type GatewayEndpoint = HttpTransport<
    Hub,
    StreamableHttpService<WithSubscriptions<GatewayServer>, LocalSessionManager>,
>;

/// A [`Gateway`] as an MCP server (rmcp's [`ServerHandler`]): each request
/// answered from the [view](Gateway::view) of its caller (the principal
/// the serving layer's authentication put in it): the merged lists with
/// their merged cache hints, and `tools/call`, `prompts/get`,
/// `resources/read` and the tasks' requests forwarded upstream.
///
/// Serve it wrapped in [`WithSubscriptions`], as [`Gateway::endpoint`]
/// and [`Gateway::serve`] do, so that its sessions listen from the
/// gateway's hub; or over stdio with rmcp's `serve`.
#[derive(Clone)]
pub struct GatewayServer {
    gateway: Gateway,
    info: Implementation,
}

impl GatewayServer {
    pub(crate) fn new(gateway: Gateway) -> Self {
        Self {
            gateway,
            info: Implementation::new("mcp-subscriptions-gateway", env!("CARGO_PKG_VERSION")),
        }
    }

    /// Tells clients this name and version in `initialize` (by default
    /// `mcp-subscriptions-gateway` and this crate's version).
    pub fn with_server_info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// What the caller of `context` sees.
    async fn view(&self, context: &RequestContext<RoleServer>) -> Result<View, ErrorData> {
        let caller = OpenContext::of_request(context).principal;
        self.gateway.view(caller.as_ref()).await
    }
}

impl std::fmt::Debug for GatewayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayServer")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The caller's whole `_meta` back on the request it came with, to go
/// upstream with it: rmcp hands a handler a request's `_meta` apart, in
/// its context (a progress token, trace context, and the client's
/// capabilities, which say whether the caller takes tasks), and a legacy
/// session's capabilities from its `initialize`.
fn with_caller_meta(meta: &mut Option<RequestMetaObject>, context: &RequestContext<RoleServer>) {
    let mut caller = context.meta.clone();
    if let Some(own) = meta.take() {
        caller.0.0.extend(own.0.0);
    }
    if caller.client_capabilities().is_none()
        && let Some(capabilities) = context.client_capabilities()
    {
        caller.set_client_capabilities(capabilities);
    }
    *meta = Some(caller);
}

/// A merged list's `ttlMs` and `cacheScope`: the upstreams' hints merged
/// pessimistically, where they gave any.
fn cache_hint(view: &View, kind: CatalogKind) -> (Option<u64>, Option<CacheScope>) {
    let hint = view.cache_hint(kind);
    let ttl = hint
        .ttl
        .map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
    (ttl, hint.scope)
}

impl ServerHandler for GatewayServer {
    fn get_info(&self) -> ServerConfig {
        let lists = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        // `WithSubscriptions` sets the subscription bits (and the tasks
        // extension) from the gateway's hub.
        ServerConfig::new(lists).with_server_info(self.info.clone())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let view = self.view(&context).await?;
        let mut result = ListToolsResult::with_all_items(view.tools());
        (result.ttl_ms, result.cache_scope) = cache_hint(&view, CatalogKind::Tools);
        Ok(result)
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        with_caller_meta(&mut request.meta, &context);
        self.view(&context).await?.call_tool(request).await
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let view = self.view(&context).await?;
        let mut result = ListPromptsResult::with_all_items(view.prompts());
        (result.ttl_ms, result.cache_scope) = cache_hint(&view, CatalogKind::Prompts);
        Ok(result)
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        with_caller_meta(&mut request.meta, &context);
        let result = self.view(&context).await?.get_prompt(request).await?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let view = self.view(&context).await?;
        let mut result = ListResourcesResult::with_all_items(view.resources());
        (result.ttl_ms, result.cache_scope) = cache_hint(&view, CatalogKind::Resources);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let view = self.view(&context).await?;
        let mut result = ListResourceTemplatesResult::with_all_items(view.templates());
        (result.ttl_ms, result.cache_scope) = cache_hint(&view, CatalogKind::Templates);
        Ok(result)
    }

    async fn read_resource(
        &self,
        mut request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        with_caller_meta(&mut request.meta, &context);
        let view = self.view(&context).await?;
        Ok(view.read_resource(request).await?.into())
    }

    async fn get_task(
        &self,
        mut request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        with_caller_meta(&mut request.meta, &context);
        self.view(&context).await?.get_task(request).await
    }

    async fn update_task(
        &self,
        mut request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        with_caller_meta(&mut request.meta, &context);
        self.view(&context).await?.update_task(request).await
    }

    async fn cancel_task(
        &self,
        mut request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        with_caller_meta(&mut request.meta, &context);
        self.view(&context).await?.cancel_task(request).await
    }
}

impl Gateway {
    /// This gateway as an MCP server: every request a [`View`] can answer,
    /// answered for its caller.
    pub fn server(&self) -> GatewayServer {
        GatewayServer::new(self.clone())
    }

    /// The gateway's whole MCP endpoint over Streamable HTTP, to mount at
    /// a route of the application's router: listen streams from the
    /// gateway's hub (its [demand](Self::demand) hooks installed), every
    /// other request answered by [`server`](Self::server) through rmcp,
    /// `config` for both (see [`http::endpoint`]).
    ///
    /// Keep its [`streams`](HttpTransport::streams) to drain at shutdown.
    pub fn endpoint(&self, config: StreamableHttpServerConfig) -> GatewayEndpoint {
        let listen = self.listen_service();
        let server = self.server();
        let sessions = WithSubscriptions::factory(&listen, move || server.clone());
        http::endpoint(listen, sessions, config)
    }

    /// Serves the gateway on `listener` (a TCP listener, or a
    /// [Unix socket's](Listener::bind_unix)) at `/mcp` (the
    /// [endpoint](Self::endpoint) with rmcp's default configuration) until
    /// `shutdown` resolves; then completes every listen stream, gives them
    /// [`DEFAULT_DEADLINE`](http::DEFAULT_DEADLINE) to write their last
    /// message, and returns what it found (see
    /// [`http::serve_until_drained`]).
    ///
    /// An application that adds routes, middleware (authentication, which
    /// gives each request its principal) or the [`http::Server`]'s options
    /// mounts [`endpoint`](Self::endpoint) in its own router instead.
    pub async fn serve(
        &self,
        listener: impl Into<Listener>,
        shutdown: impl Future<Output = ()>,
    ) -> Drained {
        let endpoint = self.endpoint(StreamableHttpServerConfig::default());
        let streams = endpoint.streams();
        let app = axum::Router::new().route("/mcp", endpoint.into_method_router());
        let hub = self.hub().clone();
        let shutdown = async move {
            shutdown.await;
            hub.complete();
        };
        http::serve_until_drained(listener, app, shutdown, streams, http::DEFAULT_DEADLINE).await
    }
}
