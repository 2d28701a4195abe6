//! The live catalog (issue 22): how many `tools/list` fetches a storm of
//! changes costs a host, how stale an isolated change is when the host
//! sees it, and what a catalog of many tools holds.
//!
//! One server in process: a hub behind the crate's HTTP transport, and in
//! front of it a handler that answers `server/discover` and `tools/list`
//! from a list the run changes, counting each `tools/list` it serves. The
//! hosts, each against a fresh server in the same run:
//!
//! - ours: `client::Catalog`;
//! - a refetch per notification: the loop a host writes by hand, one
//!   `tools/list` after each `notifications/tools/list_changed`, in turn;
//! - the TypeScript client: `@modelcontextprotocol/client` with its
//!   `listChanged` option (a node script, `benches/ts_list_changed.cjs`),
//!   when node and the package are there (`.ci/interop-install`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use mcp_subscriptions::http::HttpTransport;
use mcp_subscriptions::{Filter, Hub, ListenService};
use mcp_subscriptions_client::catalog::{Catalog, CatalogOptions};
use mcp_subscriptions_client::{Item, SubscribeOptions, Subscription};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// A server whose tool list a run changes.
struct ToolServer {
    url: String,
    hub: Hub,
    tools: Arc<std::sync::Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct Served {
    tools: Arc<std::sync::Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

fn tool(n: usize) -> Value {
    json!({
        "name": format!("tool_{n}"),
        "description": format!("Tool number {n}, which does what its name says"),
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    })
}

impl ToolServer {
    async fn start(tools: usize) -> Self {
        let served = Served {
            tools: Arc::new(std::sync::Mutex::new((0..tools).map(tool).collect())),
            fetches: Arc::default(),
        };
        let hub = Hub::new();
        let mcp = axum::Router::new()
            .fallback(answer)
            .with_state(served.clone());
        let http = HttpTransport::new(ListenService::new(hub.clone()), mcp);
        let app = axum::Router::new().route("/mcp", http.into_method_router());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            hub,
            tools: served.tools,
            fetches: served.fetches,
        }
    }

    /// Changes the list (a new description for one tool) and publishes it.
    fn change(&self, n: usize) {
        {
            let mut tools = self.tools.lock().unwrap();
            let len = tools.len();
            tools[n % len]["description"] = json!(format!("version {n}"));
        }
        self.hub.notify_tools_list_changed();
    }

    /// Adds `tool_{n}` and publishes it.
    fn add(&self, n: usize) {
        self.tools.lock().unwrap().push(tool(n));
        self.hub.notify_tools_list_changed();
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::Relaxed)
    }
}

async fn answer(State(served): State<Served>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or_default();
    let result = match request["method"].as_str() {
        Some("server/discover") => json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench", "version": "1"}},
            "ttlMs": 0, "cacheScope": "public",
        }),
        Some("tools/list") => {
            served.fetches.fetch_add(1, Ordering::Relaxed);
            let tools = served.tools.lock().unwrap().clone();
            json!({"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "public"})
        }
        Some(_) if request.get("id").is_none() => {
            return axum::http::StatusCode::ACCEPTED.into_response();
        }
        _ => json!({}),
    };
    reply(&request, result)
}

/// `result` as the JSON-RPC response to `request`: the in-process
/// servers' answer.
pub(crate) fn reply(request: &Value, result: Value) -> Response {
    let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        reply.to_string(),
    )
        .into_response()
}

/// Who keeps the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// `client::Catalog`.
    Ours,
    /// A refetch after each notification, in turn.
    PerNotification,
    /// `@modelcontextprotocol/client` with `listChanged`.
    TypeScript,
}

/// One storm: how many fetches it cost and when the host had the final
/// list.
#[derive(Debug, Clone, Copy)]
pub struct StormRun {
    /// `tools/list` requests served from the storm's first change on.
    pub fetches: usize,
    /// From the first change until the host held the final list.
    pub settled: Duration,
}

/// The node script that drives the TypeScript client.
fn ts_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ts_list_changed.cjs")
}

/// Where `.ci/interop-install` put the npm packages.
fn node_modules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/interop/node/node_modules")
}

/// Whether the TypeScript client can run: node on `PATH` and the package
/// installed.
pub fn typescript_client_available() -> bool {
    node_modules().join("@modelcontextprotocol/client").is_dir()
        && std::process::Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
}

/// A storm of `changes` list changes spread evenly over `over`, against
/// `host`.
pub fn storm(host: Host, changes: usize, over: Duration) -> Result<StormRun, String> {
    let runtime = Runtime::new().map_err(|err| err.to_string())?;
    runtime.block_on(async move {
        let server = ToolServer::start(20).await;
        let last = format!("version {}", changes - 1);
        let holds_last = {
            let last = last.clone();
            move |tools: &[Value]| {
                tools
                    .iter()
                    .any(|tool| tool["description"].as_str() == Some(last.as_str()))
            }
        };
        let (done, before) = match host {
            Host::Ours => {
                let catalog = Catalog::http(&server.url, CatalogOptions::default())
                    .await
                    .map_err(|err| err.to_string())?;
                let before = server.fetches();
                let last = last.clone();
                let done: tokio::task::JoinHandle<()> = tokio::spawn(async move {
                    let mut snapshot = catalog.snapshot();
                    while !snapshot
                        .tools()
                        .iter()
                        .any(|tool| tool.description.as_deref() == Some(last.as_str()))
                    {
                        snapshot = catalog.changed(snapshot.generation()).await;
                    }
                });
                (done, before)
            }
            Host::PerNotification => {
                let url = server.url.clone();
                let tools = Filter::new().with_tools_list_changed();
                let mut subscription = Subscription::http(
                    &url,
                    &tools,
                    SubscribeOptions::default().with_capacity(4096),
                )
                .await
                .map_err(|err| err.to_string())?;
                let client = reqwest::Client::new();
                let before = server.fetches();
                let done = tokio::spawn(async move {
                    while let Some(item) = subscription.next().await {
                        if !matches!(item, Item::Event(_)) {
                            continue;
                        }
                        if holds_last(&list_tools(&client, &url).await) {
                            return;
                        }
                    }
                });
                (done, before)
            }
            Host::TypeScript => {
                let mut child = tokio::process::Command::new("node")
                    .arg(ts_script())
                    .arg(&server.url)
                    .arg(node_modules())
                    .arg(&last)
                    .stdout(Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|err| format!("node: {err}"))?;
                let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap());
                let mut line = String::new();
                use tokio::io::AsyncBufReadExt;
                lines
                    .read_line(&mut line)
                    .await
                    .map_err(|err| err.to_string())?;
                if line.trim() != "ready" {
                    return Err(format!("the TypeScript client said {line:?}"));
                }
                let before = server.fetches();
                let done = tokio::spawn(async move {
                    let mut line = String::new();
                    let _ = lines.read_line(&mut line).await;
                    let _ = child.kill().await;
                });
                (done, before)
            }
        };
        let start = Instant::now();
        for n in 0..changes {
            tokio::time::sleep_until((start + over.mul_f64(n as f64 / changes as f64)).into())
                .await;
            server.change(n);
        }
        tokio::time::timeout(Duration::from_secs(300), done)
            .await
            .map_err(|_| format!("{host:?} never held the final list"))?
            .map_err(|err| err.to_string())?;
        let settled = start.elapsed();
        // Whatever the host still had in flight ends.
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(StormRun {
            fetches: server.fetches() - before,
            settled,
        })
    })
}

async fn list_tools(client: &reqwest::Client, url: &str) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let answer = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(body.to_string())
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .expect("tools/list answers")
        .bytes()
        .await
        .expect("the answer arrives");
    let reply: Value = serde_json::from_slice(&answer).expect("JSON");
    reply["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The time from each of `changes` isolated changes (a tool added, then a
/// pause) on the server until the catalog's snapshot has it.
pub fn staleness(changes: usize, pause: Duration) -> Result<Vec<Duration>, String> {
    let runtime = Runtime::new().map_err(|err| err.to_string())?;
    runtime.block_on(async move {
        let server = ToolServer::start(20).await;
        let catalog = Catalog::http(&server.url, CatalogOptions::default())
            .await
            .map_err(|err| err.to_string())?;
        let mut seen = Vec::with_capacity(changes);
        for n in 0..changes {
            let name = format!("tool_{}", 1_000 + n);
            let start = Instant::now();
            server.add(1_000 + n);
            let mut snapshot = catalog.snapshot();
            while snapshot.tool(&name).is_none() {
                snapshot = tokio::time::timeout(
                    Duration::from_secs(10),
                    catalog.changed(snapshot.generation()),
                )
                .await
                .map_err(|_| format!("{name} never arrived"))?;
            }
            seen.push(start.elapsed());
            tokio::time::sleep(pause).await;
        }
        Ok(seen)
    })
}

/// What a catalog of `tools` tools holds.
#[derive(Debug, Clone, Copy)]
pub struct CatalogHeld {
    /// Heap bytes once open: the catalog, its HTTP connections and both
    /// ends of its one listen stream (the server runs in this process).
    pub total: f64,
    /// Heap bytes of its list of tools alone, as rmcp's `Tool`s.
    pub tools: f64,
    /// The bytes of the `tools/list` answer's tools as JSON.
    pub json: usize,
}

/// What a catalog of `tools` tools holds once open.
pub fn held_by_catalog(tools: usize) -> Result<CatalogHeld, String> {
    let runtime = Runtime::new().map_err(|err| err.to_string())?;
    runtime.block_on(async move {
        let server = ToolServer::start(tools).await;
        let json = serde_json::to_vec(&*server.tools.lock().unwrap())
            .map_err(|err| err.to_string())?
            .len();
        // One catalog first, so that what the runtime sets up once is not
        // counted.
        let warm = Catalog::http(&server.url, CatalogOptions::default())
            .await
            .map_err(|err| err.to_string())?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = crate::memory::held();
        let catalog = Catalog::http(&server.url, CatalogOptions::default())
            .await
            .map_err(|err| err.to_string())?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let total = crate::memory::held() - before;
        let snapshot = catalog.snapshot();
        let before = crate::memory::held();
        let copy = snapshot.tools().to_vec();
        let tools = crate::memory::held() - before;
        drop((warm, catalog, copy));
        Ok(CatalogHeld { total, tools, json })
    })
}
