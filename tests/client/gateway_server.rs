//! The gateway README's program (`Gateway::builder`, the upstreams,
//! `Gateway::serve`), in process in front of two upstreams: every kind of
//! request it forwards, from the TypeScript SDK's client and the Python
//! SDK's, tasks over raw HTTP, and one shape for every listen refusal.

use std::time::Duration;

use mcp_subscriptions::ListKind;
use mcp_subscriptions::tasks::TASK_IDS;
use mcp_subscriptions_gateway::{Gateway, Upstream};
use rmcp::model::TASKS_EXTENSION_ID;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::catalog_server::CatalogServer;
use crate::support::http::{listen, post};
use crate::support::interop::{ListeningApp, Running};

const WAIT: Duration = Duration::from_secs(30);

/// Upstreams `a` and `b`, and the README's gateway in front of them.
struct Rig {
    a: CatalogServer,
    _b: CatalogServer,
    /// The gateway's base URL (its endpoint is at `/mcp`).
    url: String,
    stop: oneshot::Sender<()>,
    served: JoinHandle<mcp_subscriptions::Drained>,
}

async fn upstream(tool: &str) -> CatalogServer {
    let server = CatalogServer::start(100).await;
    server.set_tool(tool, "a tool");
    server.add_prompt("greet");
    server.add_resource("file:///x");
    server.set_contents("file:///x", "x's text");
    server.add_template("file:///{name}");
    server
}

async fn rig() -> Rig {
    let (a, b) = (upstream("search").await, upstream("fetch").await);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel();
    let (a_url, b_url) = (a.url(), b.url());
    // The README's program, its addresses the test's and its shutdown a
    // channel instead of a signal.
    let served = tokio::spawn(async move {
        let gateway = Gateway::builder()
            .upstream(Upstream::http("a", a_url))
            .upstream(Upstream::http("b", b_url))
            .open()
            .await
            .unwrap();
        let shutdown = async {
            let _ = stopped.await;
        };
        gateway.serve(listener, shutdown).await
    });
    // Its first answer says it is up.
    let discover = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    tokio::time::timeout(WAIT, async {
        while post(&url, &discover, &[]).await.status != 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the gateway serves");
    Rig {
        a,
        _b: b,
        url,
        stop,
        served,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_gateway_serves_the_typescript_and_python_clients_every_request() {
    let rig = rig().await;
    let mcp = format!("{}/mcp", rig.url);
    for (app, description, event) in [
        (
            ListeningApp::TypeScript,
            "searches anew",
            "event notifications/tools/list_changed",
        ),
        (
            ListeningApp::Python,
            "searches again",
            "event ToolsListChanged",
        ),
    ] {
        let mut running = Running::start(app.gateway_client(&mcp), app);
        let mut said = Vec::new();
        loop {
            let line = running
                .line(WAIT)
                .await
                .unwrap_or_else(|| panic!("{app:?} ended early: {said:?}"));
            if line == "listening" {
                // A change the merged list shows.
                rig.a.set_tool("search", description);
                rig.a.publish(ListKind::Tools);
            }
            let done = line.starts_with("event");
            said.push(line);
            if done {
                break;
            }
        }
        assert_eq!(
            said,
            [
                "tools a/search,b/fetch",
                "called called",
                "prompts a/greet,b/greet",
                "prompt greet says hello",
                "resources a+file:///x,b+file:///x",
                "read x's text",
                "templates a+file:///{name},b+file:///{name}",
                "listening",
                event,
            ],
            "{app:?}"
        );
        assert!(running.exits_cleanly(WAIT).await, "{app:?} exits cleanly");
    }
    rig.stop.send(()).unwrap();
    let drained = tokio::time::timeout(WAIT, rig.served)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(drained.cut, 0, "{drained:?}");
}

/// A request's `_meta` from a 2026-07-28 client that takes tasks.
fn meta_taking_tasks() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}},
    })
}

async fn request(url: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta_taking_tasks();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    // The header a request about a task names it in.
    let task = params["taskId"].as_str().map(|id| ("mcp-name", id));
    post(url, &body, task.as_slice()).await.reply().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_gateway_forwards_a_task_and_its_requests() {
    let rig = rig().await;
    let created = request(&rig.url, "tools/call", json!({"name": "a/slow"})).await;
    assert_eq!(created["result"]["taskId"], "a/t-1", "{created}");
    let got = request(&rig.url, "tasks/get", json!({"taskId": "a/t-1"})).await;
    assert_eq!(got["result"]["taskId"], "a/t-1", "{got}");
    assert_eq!(got["result"]["status"], "working", "{got}");
    // Its status, listened to through the gateway.
    let mut following = post(
        &rig.url,
        &listen(
            json!(2),
            json!({TASK_IDS: ["a/t-1"]}),
            &[TASKS_EXTENSION_ID],
        ),
        &[],
    )
    .await;
    assert!(following.is_stream());
    let acknowledged = following.next().await.unwrap();
    assert_eq!(
        acknowledged["params"]["notifications"][TASK_IDS],
        json!(["a/t-1"]),
        "{acknowledged}"
    );
    rig.a
        .set_task_status("t-1", rmcp::model::TaskPayload::Working);
    let status = following.next().await.unwrap();
    assert_eq!(status["params"]["taskId"], "a/t-1", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listen_refusal_is_a_json_rpc_error_before_any_stream() {
    let rig = rig().await;
    let too_many: Vec<String> = (0..=1_000).map(|n| format!("a+file:///{n}")).collect();
    for (why, notifications) in [
        ("too many URIs", json!({"resourceSubscriptions": too_many})),
        (
            "a URI no upstream claims",
            json!({"resourceSubscriptions": ["c+file:///x"]}),
        ),
        (
            "a URI its upstream refuses",
            json!({"resourceSubscriptions": ["a+file:///secret"]}),
        ),
    ] {
        rig.a.refuse_uris_containing("secret");
        let answer = post(&rig.url, &listen(json!(7), notifications, &[]), &[]).await;
        assert_eq!(answer.status, 200, "{why}");
        assert!(!answer.is_stream(), "{why}: no stream starts");
        assert_eq!(
            answer.header("content-type").as_deref(),
            Some("application/json"),
            "{why}"
        );
        let refusal = answer.json().await;
        assert_eq!(refusal["id"], 7, "{why}: {refusal}");
        assert_eq!(refusal["error"]["code"], -32602, "{why}: {refusal}");
    }
}
