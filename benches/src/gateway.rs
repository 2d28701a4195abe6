//! The gateway (issue 23): what downstream listeners cost the upstream
//! servers, and what the gateway adds to an upstream event's way.
//!
//! - Sharing: 1,000 downstream listeners over two upstreams (each a URI
//!   of 50 on one of them), ours through one `gateway::Gateway` in
//!   process, against one upstream listen per downstream listen (what a
//!   gateway without a hub opens, agentgateway's way), each against two
//!   fresh example server processes: the listen streams the upstreams
//!   hold (their own `/stats`) and their resident memory.
//! - Latency: an event published on an in-process upstream, to each of
//!   100 listeners through the gateway against the same listeners on the
//!   upstream directly.
//!
//! Each with the listeners of one principal, or spread over several
//! (issue 40): then each listener is its principal's (the bearer token
//! `token-<principal>`, known to the upstreams), and the gateway speaks
//! upstream as each caller, with a scope per principal.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use mcp_subscriptions::audience::Principal;
use mcp_subscriptions::http::HttpTransport;
use mcp_subscriptions::{Filter, Hub, ListenService};
use mcp_subscriptions_client::{Item, SubscribeOptions, Subscription};
use mcp_subscriptions_gateway::{Gateway, GatewayBuilder, Upstream, UpstreamIdentity};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// Where downstream listeners listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Downstream {
    /// Through one gateway in front of the upstreams.
    Gateway,
    /// On the upstreams themselves, one listen each.
    Direct,
}

/// What the upstreams held for the downstream listeners.
#[derive(Debug, Clone, Copy)]
pub struct Sharing {
    /// Listen streams open on the upstreams, summed.
    pub upstream_streams: u64,
    /// The upstreams' resident memory with them held, summed, in bytes.
    pub upstream_resident: u64,
}

/// The example server next to this executable (`target/release/examples`).
pub fn example_server() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let server = exe.parent()?.join("examples").join("server");
    server.is_file().then_some(server)
}

/// An example server process; killed when dropped.
struct Process {
    child: Child,
    addr: String,
}

impl Process {
    /// The example server, knowing `principals` (none: no bearer tokens).
    fn start(server: &PathBuf, principals: usize) -> Result<Self, String> {
        let tokens = (0..principals).filter(|_| principals > 1).flat_map(|i| {
            [
                "--bearer-token".to_owned(),
                format!("{}:{}", principal(i), token(i)),
            ]
        });
        let mut child = Command::new(server)
            .args(["--bind", "127.0.0.1:0", "--max-subscriptions", "5000"])
            .args(tokens)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("{} did not start: {err}", server.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let line = lines
            .next()
            .and_then(Result::ok)
            .ok_or("the example server said nothing")?;
        std::thread::spawn(move || for _ in lines {});
        let addr = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .ok_or_else(|| format!("unexpected first line {line:?}"))?
            .to_owned();
        Ok(Self { child, addr })
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// `listeners_active` from its `/stats`.
    fn listeners(&self) -> Result<u64, String> {
        let mut stream = std::net::TcpStream::connect(&self.addr).map_err(|err| err.to_string())?;
        write!(
            stream,
            "GET /stats HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .map_err(|err| err.to_string())?;
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .map_err(|err| err.to_string())?;
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        let stats: Value = serde_json::from_str(body).map_err(|err| format!("{err}: {body}"))?;
        stats["listeners_active"]
            .as_u64()
            .ok_or_else(|| format!("no listeners_active in {stats}"))
    }

    fn resident(&self) -> Result<u64, String> {
        crate::held::proc::resident_bytes(self.child.id()).map_err(|err| err.to_string())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Principal number `i`.
fn principal(i: usize) -> String {
    format!("c{i}")
}

/// Principal number `i`'s bearer token.
fn token(i: usize) -> String {
    format!("token-c{i}")
}

/// Options that listen as principal number `i` of `principals`.
fn as_principal(i: usize, principals: usize) -> SubscribeOptions {
    let options = SubscribeOptions::default();
    if principals > 1 {
        options.with_header("authorization", format!("Bearer {}", token(i)))
    } else {
        options
    }
}

/// Speaks upstream as each of `principals` callers, when more than one.
fn per_caller(builder: GatewayBuilder, upstreams: &[&str], principals: usize) -> GatewayBuilder {
    if principals < 2 {
        return builder;
    }
    let table = upstreams.iter().flat_map(|upstream| {
        (0..principals).map(move |i| (upstream.to_string(), principal(i), token(i)))
    });
    builder.per_caller(UpstreamIdentity::table(table))
}

/// Serves `listen` over HTTP on a loopback port, a `token-<name>` bearer
/// token taken as principal `<name>`; its URL.
async fn serve<S>(listen: ListenService<S>, mcp: axum::Router) -> String
where
    S: mcp_subscriptions::Source + 'static,
    S::Handle: 'static,
{
    let http = HttpTransport::new(listen, mcp);
    let app = axum::Router::new()
        .route("/mcp", http.into_method_router())
        .layer(axum::middleware::from_fn(
            |mut request: axum::extract::Request, next: axum::middleware::Next| async move {
                let principal = request
                    .headers()
                    .get("authorization")
                    .and_then(|value| value.to_str().ok()?.strip_prefix("Bearer token-"))
                    .map(Principal::new);
                if let Some(principal) = principal {
                    request.extensions_mut().insert(principal);
                }
                next.run(request).await
            },
        ));
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", tcp.local_addr().unwrap());
    tokio::spawn(mcp_subscriptions::http::serve(
        tcp,
        app,
        std::future::pending(),
    ));
    url
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// `listeners` downstream listeners of `principals` principals, each of
/// one URI of 50 (under its principal's own path) on one of two upstreams,
/// held through a gateway or directly; what the upstreams hold then.
pub fn sharing(
    downstream: Downstream,
    listeners: usize,
    principals: usize,
) -> Result<Sharing, String> {
    let server = example_server().ok_or(
        "no example server next to bench_report: `cargo build --release --example server`",
    )?;
    let upstreams = [
        Process::start(&server, principals)?,
        Process::start(&server, principals)?,
    ];
    runtime().block_on(async {
        let gateway = match downstream {
            Downstream::Gateway => {
                let builder = Gateway::builder()
                    .upstream(Upstream::http("a", upstreams[0].url()))
                    .upstream(Upstream::http("b", upstreams[1].url()));
                let gateway = per_caller(builder, &["a", "b"], principals)
                    .open()
                    .await
                    .map_err(|err| err.to_string())?;
                let url = serve(gateway.listen_service(), axum::Router::new()).await;
                Some((gateway, url))
            }
            Downstream::Direct => None,
        };
        let mut held = Vec::with_capacity(listeners);
        let mut opening = tokio::task::JoinSet::new();
        for i in 0..listeners {
            // Each principal's listeners on both upstreams.
            let who = (i / 2) % principals;
            // The example server lets a principal watch its own path only.
            let path = if principals > 1 {
                format!("file:///{}/{}", principal(who), i % 50)
            } else {
                format!("file:///{}", i % 50)
            };
            let (url, uri) = match &gateway {
                Some((_, url)) => {
                    let name = if i % 2 == 0 { "a" } else { "b" };
                    (url.clone(), format!("{name}+{path}"))
                }
                None => (upstreams[i % 2].url(), path),
            };
            opening.spawn(async move {
                let filter = Filter::new().with_resource(uri.as_str());
                Subscription::http(url, &filter, as_principal(who, principals)).await
            });
            if opening.len() == 100 {
                while let Some(opened) = opening.join_next().await {
                    held.push(opened.expect("opened").map_err(|err| err.to_string())?);
                }
            }
        }
        while let Some(opened) = opening.join_next().await {
            held.push(opened.expect("opened").map_err(|err| err.to_string())?);
        }
        // Let the servers settle what the opening allocated.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut sharing = Sharing {
            upstream_streams: 0,
            upstream_resident: 0,
        };
        for upstream in &upstreams {
            sharing.upstream_streams += upstream.listeners()?;
            sharing.upstream_resident += upstream.resident()?;
        }
        drop(held);
        drop(gateway);
        Ok(sharing)
    })
}

/// An upstream in process: `server/discover` (resources with
/// subscriptions) and empty lists, listen streams from `hub`.
async fn upstream(hub: Hub) -> String {
    let mcp = axum::Router::new().fallback(answer);
    serve(ListenService::new(hub), mcp).await
}

async fn answer(body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or_default();
    let result = match request["method"].as_str() {
        Some("server/discover") => json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"resources": {"subscribe": true, "listChanged": true}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench", "version": "1"}},
            "ttlMs": 0, "cacheScope": "public",
        }),
        Some("resources/list") => {
            json!({"resultType": "complete", "resources": [], "ttlMs": 0, "cacheScope": "public"})
        }
        Some("resources/templates/list") => {
            json!({"resultType": "complete", "resourceTemplates": [], "ttlMs": 0, "cacheScope": "public"})
        }
        Some(_) if request.get("id").is_none() => {
            return axum::http::StatusCode::ACCEPTED.into_response();
        }
        _ => json!({}),
    };
    crate::catalog::reply(&request, result)
}

/// `rounds` events, one at a time, each to `listeners` listeners of
/// `principals` principals through a gateway or on the upstream directly:
/// every listener's latency of every event.
pub fn latency(
    downstream: Downstream,
    listeners: usize,
    rounds: usize,
    principals: usize,
) -> Result<Vec<Duration>, String> {
    runtime().block_on(async {
        let hub = Hub::new();
        let upstream_url = upstream(hub.clone()).await;
        let (gateway, url, uri) = match downstream {
            Downstream::Gateway => {
                let builder = Gateway::builder().upstream(Upstream::http("up", upstream_url));
                let gateway = per_caller(builder, &["up"], principals)
                    .open()
                    .await
                    .map_err(|err| err.to_string())?;
                let url = serve(gateway.listen_service(), axum::Router::new()).await;
                (Some(gateway), url, "up+file:///hot")
            }
            Downstream::Direct => (None, upstream_url, "file:///hot"),
        };
        let (heard, mut hearing) = tokio::sync::mpsc::unbounded_channel();
        let filter = Filter::new().with_resource(uri);
        for i in 0..listeners {
            let options = as_principal(i % principals, principals);
            let mut subscription = Subscription::http(url.as_str(), &filter, options)
                .await
                .map_err(|err| err.to_string())?;
            let heard = heard.clone();
            tokio::spawn(async move {
                while let Some(item) = subscription.next().await {
                    if let Item::Event(_) = item {
                        let _ = heard.send(Instant::now());
                    }
                }
            });
        }
        let mut samples = Vec::with_capacity(listeners * rounds);
        for _ in 0..rounds {
            let published = Instant::now();
            hub.notify_resource_updated("file:///hot");
            for _ in 0..listeners {
                let at = tokio::time::timeout(Duration::from_secs(10), hearing.recv())
                    .await
                    .map_err(|_| "a listener heard nothing within 10 s".to_owned())?
                    .ok_or("the listeners stopped")?;
                samples.push(at - published);
            }
        }
        drop(gateway);
        samples.sort_unstable();
        Ok(samples)
    })
}
