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
//! It is the command line over the crate's own server
//! (`Gateway::endpoint`), which forwards `tools/call`, `prompts/get`,
//! `resources/read` and the tasks' requests to the upstream the name, URI
//! or task belongs to. `GET /stats` shows, per upstream,
//! the upstream listens held and the URIs they ask for, beside the hub's
//! statistics. Ctrl-C or SIGTERM completes every open stream gracefully.
//!
//! With `--bearer-token PRINCIPAL:TOKEN[:TENANT]` (any number of them),
//! every request needs one of those tokens, and the gateway speaks to
//! the upstreams *as each caller*: with the token
//! `--upstream-token UPSTREAM=PRINCIPAL:TOKEN` names for that principal
//! there, else with the caller's own token, passed through. Each caller
//! then sees its own lists, and its streams only its own events.

#[path = "../../examples/support/bearer.rs"]
mod bearer;
#[path = "../../examples/support/serving.rs"]
mod serving;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use clap::Parser;
use clap::builder::BoolishValueParser;
use mcp_subscriptions_client::StdioClient;
use mcp_subscriptions_gateway::{Gateway, Upstream, UpstreamIdentity};
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
    /// downstream listener left (and a caller's scope open after its last
    /// stream or request)
    #[arg(long, value_name = "N", default_value_t = mcp_subscriptions::Demand::DEFAULT_GRACE.as_secs())]
    grace_secs: u64,
    /// Require this bearer token for that principal (of that tenant), and
    /// speak upstream as each caller; repeat for more
    #[arg(
        long = "bearer-token",
        value_name = "PRINCIPAL:TOKEN[:TENANT]",
        value_parser = bearer::bearer_token
    )]
    bearer_tokens: Vec<bearer::BearerToken>,
    /// The token sent to that upstream on that principal's behalf (else
    /// the principal's own bearer token); repeat for more
    #[arg(
        long = "upstream-token",
        value_name = "UPSTREAM=PRINCIPAL:TOKEN",
        value_parser = upstream_token,
        requires = "bearer_tokens"
    )]
    upstream_tokens: Vec<UpstreamToken>,
}

/// One `--upstream-token`.
#[derive(Clone)]
struct UpstreamToken {
    upstream: String,
    principal: String,
    token: String,
}

fn upstream_token(value: &str) -> Result<UpstreamToken, String> {
    let expected = || format!("{value:?} is not UPSTREAM=PRINCIPAL:TOKEN, each part non-empty");
    let (upstream, rest) = value.split_once('=').ok_or_else(expected)?;
    let (principal, token) = rest.split_once(':').ok_or_else(expected)?;
    if upstream.is_empty() || principal.is_empty() || token.is_empty() {
        return Err(expected());
    }
    Ok(UpstreamToken {
        upstream: upstream.to_owned(),
        principal: principal.to_owned(),
        token: token.to_owned(),
    })
}

/// Each caller's credential upstream: its `--upstream-token` there, else
/// its own bearer token, passed through.
fn identity(options: &Options) -> UpstreamIdentity {
    let named: HashMap<(String, String), String> = options
        .upstream_tokens
        .iter()
        .map(|t| ((t.upstream.clone(), t.principal.clone()), t.token.clone()))
        .collect();
    let own: HashMap<String, String> = options
        .bearer_tokens
        .iter()
        .map(|t| (t.principal.clone(), t.token.clone()))
        .collect();
    let (named, own) = (Arc::new(named), Arc::new(own));
    UpstreamIdentity::new(move |principal, upstream| {
        let principal = principal.as_str().to_owned();
        let token = named
            .get(&(upstream, principal.clone()))
            .or_else(|| own.get(&principal))
            .cloned();
        async move { Ok(token) }
    })
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
    if let Some(stray) = options
        .upstream_tokens
        .iter()
        .find(|token| !options.upstreams.iter().any(|u| u.name() == token.upstream))
    {
        return Err(format!(
            "--upstream-token names {}, which no --upstream is",
            stray.upstream
        )
        .into());
    }
    let tokens = bearer::Tokens::new(&options.bearer_tokens);
    let mut builder = Gateway::builder().grace(Duration::from_secs(options.grace_secs));
    if !tokens.is_empty() {
        builder = builder.per_caller(identity(&options));
    }
    for upstream in options.upstreams {
        builder = builder.upstream(upstream);
    }
    let gateway = builder.open().await?;
    let http = gateway.endpoint(StreamableHttpServerConfig::default());
    let streams = http.streams();
    let stats = gateway.clone();
    let mut mcp_routes = axum::Router::new().route("/mcp", http.into_method_router());
    if !tokens.is_empty() {
        mcp_routes = mcp_routes.layer(axum::middleware::from_fn(move |request, next| {
            tokens.clone().authenticate(request, next)
        }));
    }
    let app = mcp_routes.route(
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
