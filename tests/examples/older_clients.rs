//! Clients of an older revision (2025-11-25: the official TypeScript SDK's
//! and Python SDK's 1.x lines, and rmcp's own client asked to speak it)
//! against the example server, over stdio and stateful Streamable HTTP: told what is served, `resources/subscribe`
//! then updates arrive, `resources/unsubscribe` stops them, list changes
//! arrive; a 2026-07-28 listen stream beside them is unaffected, and a
//! session that ends frees its listener.
#![cfg(feature = "client")]

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::example::{HttpServer, binary};
use crate::support::http::{listen, post};
use crate::support::interop::OlderClient;

/// What the example server advertises to an older client: the lists and
/// subscriptions served on its session, and no extension.
fn advertised() -> Value {
    json!({
        "prompts": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "tools": {"listChanged": true},
    })
}

/// What the scenario receives: the update of the URI it subscribed (not of
/// the other), the tools change, and after unsubscribing only the prompts
/// change.
fn notified() -> Value {
    json!([
        {"method": "notifications/resources/updated", "uri": "file:///watched.txt"},
        {"method": "notifications/tools/list_changed"},
        {"method": "notifications/prompts/list_changed"},
    ])
}

/// Plays `client`'s scenario against `server` (its transport and target)
/// and returns the JSON lines it printed.
async fn play(client: OlderClient, server: &[OsString]) -> Vec<Value> {
    let (program, args) = client.command(server);
    let mut child = Command::new(&program)
        .args(&args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|err| panic!("{client:?} starts ({program:?}): {err}"));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let reading = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            printed.push(serde_json::from_str(&line).unwrap());
        }
    };
    tokio::time::timeout(Duration::from_secs(90), reading)
        .await
        .unwrap_or_else(|_| panic!("{client:?} finished its scenario"));
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{client:?} failed: {printed:?}");
    printed
}

fn assert_played(client: OlderClient, printed: &[Value]) {
    assert_eq!(
        printed,
        [
            json!({"capabilities": advertised()}),
            json!({"notifications": notified()})
        ],
        "{client:?}"
    );
}

async fn over_stdio(client: OlderClient) {
    let server = ["stdio".into(), binary().into_os_string(), "--stdio".into()];
    assert_played(client, &play(client, &server).await);
}

async fn over_http(client: OlderClient) {
    let server = HttpServer::start(&[]).await;
    // A 2026-07-28 stream beside the session, watching the same URI.
    let filter =
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///watched.txt"]});
    let mut beside = post(&server.base, &listen(json!("beside"), filter, &[]), &[]).await;
    assert!(beside.is_stream());
    let ack = beside.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    let printed = play(client, &["http".into(), server.mcp_url().into()]).await;
    assert_played(client, &printed);

    // The session's unsubscribe is its own: the stream beside got both
    // updates of the URI, and the tools change between them.
    let mut got = Vec::new();
    for _ in 0..3 {
        let message = beside.next().await.unwrap();
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "beside"
        );
        got.push(message["method"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        got,
        [
            "notifications/resources/updated",
            "notifications/tools/list_changed",
            "notifications/resources/updated"
        ]
    );
    // The session ended (its DELETE): only the stream beside is left.
    server.wait_for_active(1, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn the_typescript_v1_client_gets_its_notifications_on_its_stdio_session() {
    over_stdio(OlderClient::TypeScriptV1).await;
}

#[tokio::test]
async fn the_typescript_v1_client_gets_its_notifications_on_its_http_session() {
    over_http(OlderClient::TypeScriptV1).await;
}

#[tokio::test]
async fn the_python_v1_client_gets_its_notifications_on_its_stdio_session() {
    over_stdio(OlderClient::PythonV1).await;
}

#[tokio::test]
async fn the_python_v1_client_gets_its_notifications_on_its_http_session() {
    over_http(OlderClient::PythonV1).await;
}

/// rmcp 3.11's client, on 2025-11-25: what it is sent goes to `seen`.
#[derive(Clone)]
struct Rmcp2025 {
    seen: tokio::sync::mpsc::UnboundedSender<Value>,
}

impl rmcp::ClientHandler for Rmcp2025 {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::default()
            .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let note = json!({"method": "notifications/resources/updated", "uri": params.uri});
        let _ = self.seen.send(note);
    }

    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self
            .seen
            .send(json!({"method": "notifications/tools/list_changed"}));
    }

    async fn on_prompt_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self
            .seen
            .send(json!({"method": "notifications/prompts/list_changed"}));
    }
}

#[tokio::test]
#[expect(
    deprecated,
    reason = "resources/subscribe is what a 2025-11-25 client calls"
)]
async fn rmcp_s_own_client_on_2025_11_25_gets_its_notifications_on_its_stdio_session() {
    use rmcp::model::{CallToolRequestParams, SubscribeRequestParams, UnsubscribeRequestParams};
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let mut child = Command::new(binary())
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example server starts");
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let (seen, mut notes) = tokio::sync::mpsc::unbounded_channel();
    let client = Rmcp2025 { seen }
        .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
        .expect("the client initializes");
    let info = client.peer_info().expect("the server's initialize result");
    assert_eq!(
        info.protocol_version,
        rmcp::model::ProtocolVersion::V_2025_11_25
    );
    assert_eq!(
        serde_json::to_value(&info.capabilities).unwrap(),
        advertised()
    );

    let call = |tool: &'static str, uri: Option<&str>| {
        let mut params = CallToolRequestParams::new(tool);
        if let Some(uri) = uri {
            params = params.with_arguments(json!({"uri": uri}).as_object().unwrap().clone());
        }
        client.call_tool(params)
    };
    client
        .subscribe(SubscribeRequestParams::new("file:///watched.txt"))
        .await
        .unwrap();
    call("test_trigger_resource_update", Some("file:///watched.txt"))
        .await
        .unwrap();
    call("test_trigger_resource_update", Some("file:///other.txt"))
        .await
        .unwrap();
    call("test_trigger_tool_change", None).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(
            tokio::time::timeout(Duration::from_secs(10), notes.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    client
        .unsubscribe(UnsubscribeRequestParams::new("file:///watched.txt"))
        .await
        .unwrap();
    call("test_trigger_resource_update", Some("file:///watched.txt"))
        .await
        .unwrap();
    call("test_trigger_prompt_change", None).await.unwrap();
    got.push(
        tokio::time::timeout(Duration::from_secs(10), notes.recv())
            .await
            .unwrap()
            .unwrap(),
    );
    assert_eq!(Value::Array(got), notified());
}
