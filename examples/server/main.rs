//! A real MCP server (rmcp) whose `subscriptions/listen` streams (protocol
//! 2026-07-28) and older clients' sessions (2025-06-18, 2025-11-25:
//! `resources/subscribe` and notifications on the session) are served from
//! one `Hub`.
//!
//! ```sh
//! cargo run --release --example server -- --help
//! ```
//!
//! Over HTTP it serves `POST /mcp` (Streamable HTTP),
//! `GET /mcp/notifications/{channel}` (the Diverge notification channel, a
//! WebSocket), `GET /metrics`
//! (Prometheus text) and `GET /stats` (the hub's statistics as JSON). Its
//! tools publish into the hub: `test_trigger_tool_change`,
//! `test_trigger_prompt_change`, `test_trigger_resource_update {uri}`,
//! `test_trigger_custom {method, params}`,
//! `test_trigger_burst {uri, count}` and `test_start_task {steps,
//! interval_ms}` (a task of the tasks extension, whose statuses reach the
//! streams that follow its id), plus the conformance suite's diagnostic
//! tools. `test_add_tool {name, description}`, `test_edit_tool {name,
//! description}` and `test_remove_tool {name}` really change its tools
//! list, each publishing the tools list change (`catalog.rs`). Ctrl-C or SIGTERM completes every open stream gracefully before
//! the process exits.
//!
//! With `--bearer-token PRINCIPAL:TOKEN[:TENANT]` (any number of them),
//! every HTTP request needs one of the tokens, each principal may watch only
//! its own resources (`file:///<principal>/...`) and the tasks it started,
//! and its streams carry the label `tenant:<TENANT>` (`auth.rs`). The
//! triggers then take optional `principal` and `tenant` arguments that
//! scope the event to those streams, and `test_revoke {principal}` ends
//! that principal's streams (on every replica, when relayed) with `-32003`
//! and `data: {"reason":"revoked"}`, and refuses its tokens from then on,
//! on every replica, as an identity provider's revocation would.
//!
//! A demand hook logs each key (a resource URI, a task id) as it gains its
//! first listen stream and, five seconds after its last has gone, as it
//! loses it.
//!
//! With `--relay redis://HOST:PORT`, `redis+cluster://HOST:PORT,...` or
//! `nats://HOST:PORT` (a build
//! with the crate's `redis` or `nats` feature), the tools publish through a
//! relay: a change triggered on one replica reaches the listen streams of
//! every replica joined to the same broker (`replicas.rs`). `/stats` then
//! has the relay's counters under `relay`, and `/metrics` has them too.

mod auth;
#[path = "../support/bearer.rs"]
mod bearer;
mod catalog;
#[path = "../support/cli.rs"]
mod cli;
mod replicas;
#[path = "../support/serving.rs"]
mod serving;
mod tasks;

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use clap::Parser;
use clap::builder::BoolishValueParser;
use mcp_subscriptions::channel::ChannelTransport;
use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::{
    Audience, Capabilities, Demand, Event, Hub, ListenService, OpenContext, Overflow,
    WithSubscriptions, audience::Principal,
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use replicas::Replica;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CacheScope, ErrorCode, ErrorData, Implementation, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::json;

/// A real MCP server whose subscriptions/listen streams (2026-07-28) and
/// older clients' sessions (2025-06-18, 2025-11-25) are served from one
/// hub. Every option can also come from its environment variable.
#[derive(Parser)]
#[command(version)]
struct Options {
    /// Serve HTTP on this address (port 0: any free port), or on the Unix
    /// domain socket unix:PATH (a stale socket file there is replaced)
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_BIND",
        value_name = "ADDR",
        default_value_t = serving::Bind::Tcp(SocketAddr::from(([127, 0, 0, 1], 8808)))
    )]
    bind: serving::Bind,
    /// Share the HTTP port with the other processes started with this flag
    /// (SO_REUSEPORT): the kernel spreads new connections among them. Join
    /// them with --relay, so that each hears the others' changes
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_REUSE_PORT",
        value_parser = BoolishValueParser::new()
    )]
    reuse_port: bool,
    /// Serve MCP on stdin and stdout instead of HTTP
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_STDIO",
        value_parser = BoolishValueParser::new()
    )]
    stdio: bool,
    /// Seconds between keepalives on an idle HTTP stream
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_KEEPALIVE_SECS",
        value_name = "N",
        default_value_t = mcp_subscriptions::http::DEFAULT_KEEPALIVE.as_secs()
    )]
    keepalive_secs: u64,
    /// Events each listen stream may queue (at least 1)
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_CAPACITY",
        value_name = "N",
        default_value_t = mcp_subscriptions::hub::DEFAULT_CAPACITY,
        value_parser = cli::at_least_one
    )]
    capacity: usize,
    /// What a full queue does with one more event
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_OVERFLOW",
        value_name = "POLICY",
        default_value_t = Overflow::DropOldest,
        value_parser = cli::overflow_parser()
    )]
    overflow: Overflow,
    /// Listen streams open at once, at most
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_MAX_SUBSCRIPTIONS",
        value_name = "N",
        default_value_t = mcp_subscriptions::hub::DEFAULT_MAX_LISTENERS
    )]
    max_subscriptions: usize,
    /// Seconds a graceful shutdown waits for every stream's last message
    /// before it cuts the streams still open
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_SHUTDOWN_DEADLINE_SECS",
        value_name = "N",
        default_value_t = 5
    )]
    shutdown_deadline_secs: u64,
    /// Streams one principal may hold open at once (bearer-token mode)
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_MAX_STREAMS_PER_PRINCIPAL",
        value_name = "N",
        value_parser = cli::at_least_one
    )]
    max_streams_per_principal: Option<usize>,
    /// What a principal at --max-streams-per-principal gets for one more
    /// stream: refused, or admitted in place of its oldest (which ends
    /// with {"reason":"replaced"})
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_CAP_POLICY",
        value_name = "POLICY",
        default_value = "refuse",
        value_parser = cli::cap_policy_parser()
    )]
    cap_policy: mcp_subscriptions::CapPolicy,
    /// Require this bearer token for that principal (of that tenant) over
    /// HTTP; repeat for more (a comma-separated list in the environment)
    #[arg(
        long = "bearer-token",
        env = "MCP_SUBSCRIPTIONS_BEARER_TOKENS",
        value_name = "PRINCIPAL:TOKEN[:TENANT]",
        value_delimiter = ',',
        value_parser = bearer::bearer_token
    )]
    bearer_tokens: Vec<bearer::BearerToken>,
    /// Join the other replicas through this broker (redis://HOST:PORT,
    /// redis+cluster://HOST:PORT[,HOST:PORT...] or nats://HOST:PORT):
    /// changes triggered here reach their listeners, and theirs reach ours
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_RELAY",
        value_name = "URL",
        value_parser = replicas::broker
    )]
    relay: Option<replicas::Broker>,
    /// Seconds a connection has to send a request whole, head and body
    /// (a first request from its accept); past it, it is closed
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_REQUEST_DEADLINE_SECS",
        value_name = "N",
        default_value_t = mcp_subscriptions::http::DEFAULT_REQUEST_DEADLINE.as_secs(),
        value_parser = cli::at_least_one_u64
    )]
    request_deadline_secs: u64,
    /// Seconds a keep-alive connection may sit idle between requests
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_IDLE_TIMEOUT_SECS",
        value_name = "N",
        default_value_t = mcp_subscriptions::http::DEFAULT_IDLE_TIMEOUT.as_secs(),
        value_parser = cli::at_least_one_u64
    )]
    idle_timeout_secs: u64,
    /// Connections that may wait on their client at once (reading a
    /// request or idle); one more closes the one that waited longest
    /// [default: half the open-file limit]
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_MAX_WAITING_CONNECTIONS",
        value_name = "N",
        value_parser = cli::at_least_one
    )]
    max_waiting_connections: Option<usize>,
    /// How a graceful shutdown ends each stream: with the listen request's
    /// complete result, or with notifications/cancelled naming it (for a
    /// gateway that expects that dialect)
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_TEARDOWN",
        value_name = "DIALECT",
        default_value = "complete",
        value_parser = cli::teardown_parser()
    )]
    teardown: mcp_subscriptions::Teardown,
    /// Seconds what is written to a client may stay unacknowledged before
    /// the client is taken for gone (vanished from the network) and its
    /// streams end; 0 leaves the system's default (about 15 minutes)
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_UNACKNOWLEDGED_TIMEOUT_SECS",
        value_name = "N",
        default_value_t = mcp_subscriptions::http::DEFAULT_UNACKNOWLEDGED_TIMEOUT.as_secs()
    )]
    unacknowledged_timeout_secs: u64,
    /// New connections one client address may open: PER_SECOND:BURST
    /// (off unless set; over it: 429 with Retry-After)
    #[arg(long, env = "MCP_SUBSCRIPTIONS_CONNECTION_RATE_PER_ADDRESS", value_name = "RATE:BURST", value_parser = cli::rate)]
    connection_rate_per_address: Option<mcp_subscriptions::http::Rate>,
    /// New connections one principal may open, counted at their first
    /// request: PER_SECOND:BURST (off unless set)
    #[arg(long, env = "MCP_SUBSCRIPTIONS_CONNECTION_RATE_PER_PRINCIPAL", value_name = "RATE:BURST", value_parser = cli::rate)]
    connection_rate_per_principal: Option<mcp_subscriptions::http::Rate>,
    /// Listens one client address may open: PER_SECOND:BURST (off unless
    /// set)
    #[arg(long, env = "MCP_SUBSCRIPTIONS_LISTEN_RATE_PER_ADDRESS", value_name = "RATE:BURST", value_parser = cli::rate)]
    listen_rate_per_address: Option<mcp_subscriptions::http::Rate>,
    /// Listens one principal may open: PER_SECOND:BURST (off unless set)
    #[arg(long, env = "MCP_SUBSCRIPTIONS_LISTEN_RATE_PER_PRINCIPAL", value_name = "RATE:BURST", value_parser = cli::rate)]
    listen_rate_per_principal: Option<mcp_subscriptions::http::Rate>,
    /// End each listen stream after about this many seconds (10% jitter)
    /// with -32004, so that clients listen again and spread over replicas
    #[arg(
        long,
        env = "MCP_SUBSCRIPTIONS_MAX_STREAM_LIFETIME_SECS",
        value_name = "N",
        value_parser = cli::at_least_one_u64
    )]
    max_stream_lifetime_secs: Option<u64>,
}

/// The MCP server: its tools publish into the hub (and, relayed, to the
/// other replicas).
#[derive(Clone)]
struct DemoServer {
    replica: Replica,
    tasks: tasks::Tasks,
    added: catalog::AddedTools,
    tool_router: ToolRouter<Self>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct TaskArgs {
    /// How many working steps before the task completes.
    steps: u32,
    /// Milliseconds between steps.
    interval_ms: u64,
}

/// Who a triggered event is for: everyone, unless a principal or a tenant
/// (or both: the streams of either) is named.
#[derive(Deserialize, schemars::JsonSchema, Default)]
struct Scope {
    /// Only this principal's streams get the event.
    #[serde(default)]
    principal: Option<String>,
    /// Only the streams of this tenant's principals get the event.
    #[serde(default)]
    tenant: Option<String>,
}

impl Scope {
    fn audience(&self) -> Audience {
        if self.principal.is_none() && self.tenant.is_none() {
            return Audience::everyone();
        }
        let mut audience = Audience::nobody();
        if let Some(principal) = &self.principal {
            audience = audience.with_principal(principal.as_str());
        }
        if let Some(tenant) = &self.tenant {
            audience = audience.with_label(bearer::tenant_label(tenant));
        }
        audience
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct UriArgs {
    /// The resource that changed.
    uri: String,
    #[serde(flatten)]
    scope: Scope,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NewToolArgs {
    /// The tool's name.
    name: String,
    /// Its description.
    description: String,
    /// Only this principal is listed the tool (and told of its changes).
    #[serde(default)]
    principal: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ToolNameArgs {
    /// The name of a tool `test_add_tool` added.
    name: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct RevokeArgs {
    /// The principal whose streams end.
    principal: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CustomArgs {
    /// The notification's method.
    method: String,
    /// Its params object.
    #[serde(default)]
    params: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct BurstArgs {
    /// The resource that changed.
    uri: String,
    /// How many updates to publish.
    count: u64,
}

#[tool_router]
impl DemoServer {
    fn new(replica: Replica, tasks: tasks::Tasks, added: catalog::AddedTools) -> Self {
        Self {
            replica,
            tasks,
            added,
            tool_router: Self::tool_router(),
        }
    }

    /// The built-in tools and those added at runtime.
    fn router(&self) -> ToolRouter<Self> {
        self.added.router(&self.tool_router)
    }

    /// The tools list changed (for everyone, or for the principal who owns
    /// the tool): tells its listeners, on every replica.
    fn tools_changed(
        &self,
        changed: Result<Option<String>, ErrorData>,
    ) -> Result<String, ErrorData> {
        let audience = changed?.map_or_else(Audience::everyone, Audience::principal);
        let report = self
            .replica
            .hub()
            .publish(Event::tools_list_changed().with_audience(audience));
        Ok(format!(
            "tools list changed; queued for {} listeners",
            report.queued
        ))
    }

    #[tool(description = "Add a tool (it answers with its name) and publish the tools list change")]
    fn test_add_tool(
        &self,
        Parameters(args): Parameters<NewToolArgs>,
    ) -> Result<String, ErrorData> {
        let added = self.added.add(
            &self.tool_router,
            &args.name,
            &args.description,
            args.principal,
        );
        self.tools_changed(added)
    }

    #[tool(description = "Remove a tool test_add_tool added and publish the tools list change")]
    fn test_remove_tool(
        &self,
        Parameters(args): Parameters<ToolNameArgs>,
    ) -> Result<String, ErrorData> {
        self.tools_changed(self.added.remove(&args.name))
    }

    #[tool(
        description = "Describe a tool test_add_tool added anew and publish the tools list change"
    )]
    fn test_edit_tool(
        &self,
        Parameters(args): Parameters<NewToolArgs>,
    ) -> Result<String, ErrorData> {
        self.tools_changed(self.added.edit(&args.name, &args.description))
    }

    /// Publishes `event` for `scope`'s audience.
    fn publish(&self, event: Event, scope: &Scope) -> String {
        let report = self
            .replica
            .hub()
            .publish(event.with_audience(scope.audience()));
        format!("queued for {} listeners", report.queued)
    }

    #[tool(
        description = "Publish notifications/tools/list_changed, for everyone or for a principal or tenant"
    )]
    fn test_trigger_tool_change(&self, Parameters(scope): Parameters<Scope>) -> String {
        self.publish(Event::tools_list_changed(), &scope)
    }

    #[tool(
        description = "Publish notifications/prompts/list_changed, for everyone or for a principal or tenant"
    )]
    fn test_trigger_prompt_change(&self, Parameters(scope): Parameters<Scope>) -> String {
        self.publish(Event::prompts_list_changed(), &scope)
    }

    #[tool(
        description = "Publish notifications/resources/updated for a URI, for everyone or for a principal or tenant"
    )]
    fn test_trigger_resource_update(&self, Parameters(args): Parameters<UriArgs>) -> String {
        self.publish(Event::resource_updated(args.uri), &args.scope)
    }

    #[tool(
        description = "End every listen stream of a principal, on every replica, with -32003 {\"reason\":\"revoked\"}"
    )]
    fn test_revoke(&self, Parameters(args): Parameters<RevokeArgs>) -> String {
        let ended = self
            .replica
            .hub()
            .revoke(&Audience::principal(args.principal.as_str()));
        format!("revoked {ended} streams here")
    }

    #[tool(
        description = "Publish any notification; only match-everything listeners (notification channels) get it"
    )]
    fn test_trigger_custom(&self, Parameters(args): Parameters<CustomArgs>) -> String {
        let report = self
            .replica
            .hub()
            .publish(Event::extension(args.method, args.params, None));
        format!("queued for {} listeners", report.queued)
    }

    #[tool(
        description = "Publish `count` resource updates for a URI as fast as possible; returns at once"
    )]
    fn test_trigger_burst(&self, Parameters(args): Parameters<BurstArgs>) -> String {
        let replica = self.replica.clone();
        std::thread::spawn(move || {
            for _ in 0..args.count {
                replica
                    .hub()
                    .publish(Event::resource_updated(args.uri.as_str()));
            }
        });
        format!("publishing {} updates", args.count)
    }

    #[tool(
        description = "Start a task that publishes notifications/tasks at each of `steps` steps, `interval_ms` apart, then completes; returns its id"
    )]
    fn test_start_task(
        &self,
        Parameters(args): Parameters<TaskArgs>,
        extensions: rmcp::model::Extensions,
    ) -> String {
        // Over HTTP rmcp hands the request's head to tools; the bearer
        // layer put the principal there.
        let owner = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .cloned();
        let interval = Duration::from_millis(args.interval_ms);
        self.tasks.start(&self.replica, owner, args.steps, interval)
    }

    #[tool(description = "Needs the client's sampling capability; refuses with -32021 without it")]
    fn test_missing_capability(&self, meta: RequestMetaObject) -> Result<String, ErrorData> {
        let sampling = meta.client_capabilities().and_then(|caps| caps.sampling);
        match sampling {
            Some(_) => Ok("the client declared sampling".to_owned()),
            None => Err(ErrorData::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability: sampling",
                Some(json!({"requiredCapabilities": {"sampling": {}}})),
            )),
        }
    }

    #[tool(
        description = "Answers on its response stream without ever sending the client a request"
    )]
    fn test_streaming_elicitation(&self) -> String {
        "no elicitation needed: this server never sends requests on a response stream".to_owned()
    }

    #[tool(
        description = "Would log; sends no notifications/message unless the request set a logLevel"
    )]
    fn test_logging_tool(&self, meta: RequestMetaObject) -> String {
        // Logging is deprecated (SEP-2577), and this server never logs to
        // clients; a request without a logLevel must certainly get no log.
        match meta.log_level() {
            Some(level) => format!("asked for {level:?} logs; this server sends none"),
            None => "not logged: the request set no logLevel".to_owned(),
        }
    }
}

#[tool_handler(router = self.router())]
impl ServerHandler for DemoServer {
    /// The built-in tools and the added ones the caller is listed.
    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let principal = OpenContext::of_request(&context).principal;
        let tools = self
            .added
            .listed_to(&self.tool_router, principal.as_ref().map(|p| p.as_str()));
        let mut result = ListToolsResult::with_all_items(tools);
        if context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
        {
            // Whose list it is depends on who asks.
            result.ttl_ms = Some(0);
            result.cache_scope = Some(CacheScope::Private);
        }
        Ok(result)
    }

    fn get_info(&self) -> ServerConfig {
        let base = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        // `WithSubscriptions` sets the subscription bits under it.
        ServerConfig::new(base).with_server_info(server_info())
    }

    /// Every generation of clients, each served from the hub: listen
    /// streams from 2026-07-28, sessions before.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ])
    }
}

/// Demand hooks that log: where a real server would start watching a file
/// or an upstream when a URI gains its first stream, and stop after.
fn logged_demand() -> Demand {
    Demand::new(|key| async move {
        tracing::info!(?key, "attach: the first listen stream of this key");
        Ok(())
    })
    .on_detach(|key| tracing::info!(?key, "detach: no listen stream of this key is left"))
}

fn server_info() -> Implementation {
    Implementation::new("mcp-subscriptions-example", env!("CARGO_PKG_VERSION"))
}

async fn serve_http(
    replica: Replica,
    tasks: tasks::Tasks,
    listen: ListenService<Hub>,
    tokens: bearer::Tokens,
    options: &Options,
    metrics: PrometheusHandle,
    shutdown: serving::Shutdown,
) -> std::io::Result<()> {
    let keepalive = Duration::from_secs(options.keepalive_secs);
    let hub = replica.hub().clone();
    let server = DemoServer::new(replica.clone(), tasks, catalog::AddedTools::default());
    let leaving = replica.clone();
    let config = StreamableHttpServerConfig::default().with_sse_keep_alive(Some(keepalive));
    let channel = ChannelTransport::new(listen.clone());
    let channels = channel.streams();
    let sessions = WithSubscriptions::factory(&listen, move || server.clone());
    let http = mcp_subscriptions::http::endpoint(listen, sessions, config);
    let streams = http.streams();
    let mut server = mcp_subscriptions::http::Server::new()
        .with_request_deadline(Duration::from_secs(options.request_deadline_secs))
        .with_idle_timeout(Duration::from_secs(options.idle_timeout_secs))
        .with_unacknowledged_timeout(Duration::from_secs(options.unacknowledged_timeout_secs));
    if let Some(max) = options.max_waiting_connections {
        server = server.with_max_waiting(max);
    }
    let mut admission = mcp_subscriptions::http::AdmissionLimits::default();
    admission.connections_per_address = options.connection_rate_per_address;
    admission.connections_per_principal = options.connection_rate_per_principal;
    admission.listens_per_address = options.listen_rate_per_address;
    admission.listens_per_principal = options.listen_rate_per_principal;
    server = server.with_admission_limits(admission);
    let (stats, stats_connections, metrics_connections) =
        (replica.clone(), server.clone(), server.clone());
    let mut mcp_routes = axum::Router::new()
        .route("/mcp", http.into_method_router())
        .route("/mcp/notifications/{channel}", channel.into_method_router());
    if !tokens.is_empty() {
        mcp_routes = mcp_routes.layer(axum::middleware::from_fn(move |request, next| {
            tokens.clone().authenticate(request, next)
        }));
    }
    let app = mcp_routes
        .route(
            "/metrics",
            get(move || async move {
                replica.record_metrics();
                metrics_connections.connections().record();
                metrics.render()
            }),
        )
        .route(
            "/stats",
            get(move || async move {
                let mut body = stats.stats();
                body["connections"] = json!(stats_connections.connections());
                let body = body.to_string();
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    body,
                )
            }),
        );
    let (listener, url) = serving::listen(&options.bind, options.reuse_port)?;
    println!("listening on {url}");
    // Completing the hub ends every listen stream with its `complete`
    // result; each then has until the deadline to write it, and what is
    // left (a client that stopped reading) is cut.
    let deadline = Duration::from_secs(options.shutdown_deadline_secs);
    let shutdown = async move {
        shutdown.requested().await;
        hub.complete();
    };
    let drained = server
        .serve_until_drained(listener, app, shutdown, streams, deadline)
        .await;
    tracing::info!(
        open = drained.open,
        cut = drained.cut,
        "listen streams drained"
    );
    // Upgraded WebSockets outlive the HTTP server; each closes cleanly once
    // the hub is complete.
    let drained = channels.finish_within(deadline).await;
    tracing::info!(open = drained.open, cut = drained.cut, "channels drained");
    if let serving::Bind::Unix(path) = &options.bind {
        // The socket file goes with the server.
        let _ = std::fs::remove_file(path);
    }
    leaving.leave().await;
    Ok(())
}

async fn serve_stdio(
    replica: Replica,
    tasks: tasks::Tasks,
    listen: ListenService<Hub>,
    deadline: Duration,
    shutdown: serving::Shutdown,
) -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("serving MCP on stdin/stdout");
    let transport = StdioTransport::stdio(listen.clone());
    let streams = transport.streams();
    let hub = replica.hub().clone();
    let leaving = replica.clone();
    let serving = async {
        let server = WithSubscriptions::new(
            &listen,
            DemoServer::new(replica, tasks, catalog::AddedTools::default()),
        );
        let running = server.serve(transport).await?;
        running.waiting().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let mut serving = std::pin::pin!(serving);
    tokio::select! {
        served = &mut serving => served?,
        // rmcp may still be waiting for the client's first request here; the
        // listen streams are served either way.
        () = shutdown.requested() => {
            hub.complete();
            // Each stream writes its `complete` result before the exit. The
            // rmcp service stays alive meanwhile: dropping it would close
            // the transport, cancelling the streams before their last word.
            let drained = streams.finish_within(deadline).await;
            tracing::info!(open = drained.open, cut = drained.cut, "listen streams drained");
            leaving.leave().await;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shutdown = serving::Shutdown::install()?;
    let options = Options::parse();
    // The crate's lifecycle events on stderr (stdout may be the MCP pipe),
    // filtered as RUST_LOG says.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,mcp_subscriptions=info,server=info")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let metrics = PrometheusBuilder::new().install_recorder()?;
    let tokens = bearer::Tokens::new(&options.bearer_tokens);
    let hub = Hub::builder()
        .capacity(options.capacity)
        .overflow(options.overflow)
        .max_listeners(options.max_subscriptions)
        .capabilities(Capabilities::default().with_extension(mcp_subscriptions::tasks::extension()))
        // A revocation here or on another replica refuses the principal's
        // tokens from then on: ending its streams alone would let its
        // next listen in again.
        .on_revoke(tokens.revoker())
        .build();
    let tasks = tasks::Tasks::default();
    let replica = Replica::join(hub.clone(), options.relay.clone(), &tasks);
    let mut listen = ListenService::new(hub.clone())
        .with_demand(logged_demand())
        .with_teardown(options.teardown);
    if !tokens.is_empty() {
        listen = listen.with_authorizer(auth::authorizer(tokens.clone(), tasks.clone()));
    }
    if let Some(limit) = options.max_streams_per_principal {
        listen = listen
            .with_max_streams_per_principal(limit)
            .with_cap_policy(options.cap_policy);
    }
    if let Some(secs) = options.max_stream_lifetime_secs {
        listen = listen.with_max_stream_lifetime(Duration::from_secs(secs));
    }
    if options.stdio {
        let deadline = Duration::from_secs(options.shutdown_deadline_secs);
        let served = serve_stdio(replica, tasks, listen, deadline, shutdown).await;
        // tokio's stdin reader is a blocking thread that would hold the
        // runtime's shutdown until the client closes its end.
        if let Err(err) = served {
            eprintln!("error: {err}");
            std::process::exit(1);
        }
        std::process::exit(0)
    } else {
        Ok(serve_http(replica, tasks, listen, tokens, &options, metrics, shutdown).await?)
    }
}
