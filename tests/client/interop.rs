//! The client against servers no one here wrote, each serving
//! `subscriptions/listen` with its own SDK's handler and publishing on a
//! timer (a tools list change and updates to `file:///a` and `file:///b`
//! every 50 ms): rmcp 3.11 alone (`examples/rmcp_listen.rs`), the official
//! TypeScript SDK's v2 line (`@modelcontextprotocol/server` 2.4.0) and the
//! official Python SDK (`mcp` 2.3.0), each over Streamable HTTP and stdio.
//! The TypeScript SDK's v1 line (`@modelcontextprotocol/sdk` 1.32.2)
//! predates the 2026-07-28 revision; its tests show the error the client
//! gives.
//!
//! The npm and PyPI packages are installed by `.ci/interop-install` (a
//! step of `.ci/run`); without them these tests fail, naming that command.

#![cfg(all(feature = "client", feature = "stdio", feature = "http"))]

use std::time::Duration;

use crate::support::interop::Server;
use mcp_subscriptions::{EventKind, Filter, ListKind};
use mcp_subscriptions_client::catalog::{
    Catalog, CatalogKind, CatalogOptions, DEFAULT_MAX_DELAY, ListenState,
};
use mcp_subscriptions_client::{Item, StdioClient, SubscribeError, SubscribeOptions, Subscription};

const WAIT: Duration = Duration::from_secs(20);

/// Node and Python may take seconds to start before they can acknowledge.
fn options() -> SubscribeOptions {
    SubscribeOptions::default().with_ack_timeout(Duration::from_secs(60))
}

fn requested() -> Filter {
    Filter::new()
        .with_tools_list_changed()
        .with_resource("file:///a")
}

/// The grant is the request; both kinds arrive, and only for the URI
/// asked for (an update to `file:///b` would end the stream with a
/// protocol error, which `next` would report as an end).
async fn reads_both_kinds(server: Server, subscription: &mut Subscription) {
    assert_eq!(subscription.granted(), requested(), "{server:?}");
    let (mut tools, mut updates) = (0, 0);
    while tools < 3 || updates < 3 {
        let item = tokio::time::timeout(WAIT, subscription.next())
            .await
            .unwrap_or_else(|_| panic!("{server:?} keeps publishing"))
            .expect("not finished");
        let Item::Event(event) = item else {
            panic!("{server:?}: expected an event, got {item:?}");
        };
        match event.kind() {
            EventKind::ListChanged(ListKind::Tools) => tools += 1,
            EventKind::ResourceUpdated { uri } if uri == "file:///a" => updates += 1,
            other => panic!("{server:?}: an event not asked for: {other:?}"),
        }
    }
}

async fn over_http(server: Server) {
    let process = server.http().await;
    let mut subscription = Subscription::http(&process.url, &requested(), options())
        .await
        .unwrap_or_else(|err| panic!("{server:?} over HTTP: {err}"));
    reads_both_kinds(server, &mut subscription).await;
    subscription.cancel().await;
}

/// Two subscriptions on one connection; cancelling one
/// (`notifications/cancelled`) leaves the other running.
async fn over_stdio(server: Server) {
    let (program, args) = server.command("stdio");
    let client = StdioClient::spawn(program, args).expect("the server starts");
    let mut first = client
        .subscribe(&requested(), options())
        .await
        .unwrap_or_else(|err| panic!("{server:?} over stdio: {err}"));
    let mut second = client
        .subscribe(&Filter::new().with_tools_list_changed(), options())
        .await
        .unwrap();
    reads_both_kinds(server, &mut first).await;
    first.cancel().await;
    for _ in 0..3 {
        let item = tokio::time::timeout(WAIT, second.next())
            .await
            .unwrap_or_else(|_| panic!("{server:?}: the other subscription goes on"))
            .expect("not finished");
        assert!(
            matches!(&item, Item::Event(event) if event.kind() == &EventKind::ListChanged(ListKind::Tools)),
            "{server:?}: {item:?}"
        );
    }
    second.cancel().await;
}

#[tokio::test]
async fn rmcp_over_stdio_smoke() {
    over_stdio(Server::Rmcp).await;
}

#[tokio::test]
async fn rmcp_over_http() {
    over_http(Server::Rmcp).await;
}

#[tokio::test]
async fn typescript_sdk_v2_over_http() {
    over_http(Server::TypeScript).await;
}

#[tokio::test]
async fn typescript_sdk_v2_over_stdio() {
    over_stdio(Server::TypeScript).await;
}

#[tokio::test]
async fn python_sdk_over_http() {
    over_http(Server::Python).await;
}

#[tokio::test]
async fn python_sdk_over_stdio() {
    over_stdio(Server::Python).await;
}

/// `@modelcontextprotocol/sdk` 1.32.2 over HTTP refuses the 2026-07-28
/// protocol version itself: HTTP 400 with a JSON-RPC `-32000` error,
/// which the client reports as a refusal naming the versions it supports.
#[tokio::test]
async fn typescript_sdk_v1_over_http_refuses_the_protocol_version() {
    let process = Server::TypeScriptV1.http().await;
    let err = Subscription::http(&process.url, &requested(), options())
        .await
        .unwrap_err();
    let SubscribeError::Refused(error) = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert_eq!(error.code.0, -32000, "{err}");
    assert!(
        error
            .message
            .contains("Unsupported protocol version: 2026-07-28"),
        "{err}"
    );
}

/// `@modelcontextprotocol/sdk` 1.32.2 over stdio answers the listen
/// request with `-32601` (method not found).
#[tokio::test]
async fn typescript_sdk_v1_over_stdio_has_no_listen() {
    let (program, args) = Server::TypeScriptV1.command("stdio");
    let client = StdioClient::spawn(program, args).expect("the server starts");
    let err = client.subscribe(&requested(), options()).await.unwrap_err();
    let SubscribeError::Refused(error) = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert_eq!(error.code.0, -32601, "{err}");
    assert_eq!(err.to_string(), "refused (-32601): Method not found");
}

/// A live catalog of each server: discovered, listened to and fetched, and
/// kept with one fetch a second while the server announces a tools change
/// every 50 ms.
async fn catalog_of(server: Server, catalog: Catalog) {
    let health = catalog.health();
    assert_eq!(
        health.listen,
        ListenState::Listening,
        "{server:?}: {health:?}"
    );
    let tools = health
        .list(CatalogKind::Tools)
        .expect("the server has tools");
    assert!(
        tools.live && tools.last_success.is_some() && tools.last_error.is_none(),
        "{server:?}: {tools:?}"
    );
    let window = Duration::from_millis(2_500);
    let before = tools.fetches;
    tokio::time::sleep(window).await;
    let fetched = catalog.health().list(CatalogKind::Tools).unwrap().fetches - before;
    // About 50 announcements in the window, never a pause: one fetch per
    // bound on how long a change may wait (and the one in flight).
    let most = (window.as_millis() / DEFAULT_MAX_DELAY.as_millis()) as u64 + 2;
    assert!(
        (1..=most).contains(&fetched),
        "{server:?}: {fetched} fetches"
    );
    assert!(
        catalog
            .health()
            .list(CatalogKind::Tools)
            .unwrap()
            .last_error
            .is_none()
    );
}

fn catalog_options() -> CatalogOptions {
    let mut options = CatalogOptions::default();
    options.subscribe = options.subscribe.with_ack_timeout(Duration::from_secs(60));
    options
}

async fn catalog_over_http(server: Server) {
    let process = server.http().await;
    let catalog = Catalog::http(&process.url, catalog_options())
        .await
        .unwrap_or_else(|err| panic!("{server:?}: {err}"));
    catalog_of(server, catalog).await;
}

async fn catalog_over_stdio(server: Server) {
    let (program, args) = server.command("stdio");
    let client = StdioClient::spawn(program, args).expect("the server starts");
    let catalog = Catalog::stdio(&client, catalog_options())
        .await
        .unwrap_or_else(|err| panic!("{server:?}: {err}"));
    catalog_of(server, catalog).await;
}

#[tokio::test]
async fn rmcp_catalog_over_http() {
    catalog_over_http(Server::Rmcp).await;
}

#[tokio::test]
async fn typescript_sdk_v2_catalog_over_http_and_stdio() {
    catalog_over_http(Server::TypeScript).await;
    catalog_over_stdio(Server::TypeScript).await;
}

#[tokio::test]
async fn python_sdk_catalog_over_http_and_stdio() {
    catalog_over_http(Server::Python).await;
    catalog_over_stdio(Server::Python).await;
}

/// Calls one of the server's tools with `arguments`, over HTTP as a
/// 2026-07-28 client does without a session, or over the stdio
/// connection the catalog uses.
async fn call(server: &Called<'_>, tool: &str, arguments: serde_json::Value) {
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "interop", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let params = serde_json::json!({"name": tool, "arguments": arguments, "_meta": meta});
    match server {
        Called::Http(url) => {
            let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
            let answer = reqwest::Client::new()
                .post(*url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool)
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            let status = answer.status();
            let text = answer.text().await.unwrap();
            assert!(
                status.is_success() && !text.contains("\"error\""),
                "{tool}: {status} {text}"
            );
        }
        Called::Stdio(client) => {
            client
                .request("tools/call", params)
                .await
                .unwrap_or_else(|err| panic!("{tool}: {err}"));
        }
    }
}

/// Where a test calls the server's tools.
enum Called<'a> {
    Http(&'a str),
    Stdio(&'a StdioClient),
}

/// The catalog converges after each change the server makes to its own
/// tool list: a tool added, described anew, removed.
async fn converges(server: Server, catalog: &Catalog, called: &Called<'_>) {
    let description = |catalog: &Catalog| {
        catalog
            .snapshot()
            .tool("search")
            .map(|tool| tool.description.as_deref().unwrap_or_default().to_owned())
    };
    let until = async |want: Option<&str>| {
        tokio::time::timeout(WAIT, async {
            let mut generation = catalog.snapshot().generation();
            while description(catalog).as_deref() != want {
                generation = catalog.changed(generation).await.generation();
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{server:?}: the catalog reaches {want:?}"));
    };
    call(
        called,
        "test_add_tool",
        serde_json::json!({"name": "search", "description": "Finds"}),
    )
    .await;
    until(Some("Finds")).await;
    call(
        called,
        "test_edit_tool",
        serde_json::json!({"name": "search", "description": "Finds more"}),
    )
    .await;
    until(Some("Finds more")).await;
    call(
        called,
        "test_remove_tool",
        serde_json::json!({"name": "search"}),
    )
    .await;
    until(None).await;
    assert!(
        catalog.snapshot().tool("test_add_tool").is_some(),
        "{server:?}"
    );
}

async fn changing_catalog_over_http(server: Server) {
    let process = server.http().await;
    let catalog = Catalog::http(&process.url, catalog_options())
        .await
        .unwrap();
    converges(server, &catalog, &Called::Http(&process.url)).await;
}

/// Over stdio, and across a killed server: the client starts it again and
/// the catalog lists what the new process has (not the tool the killed one
/// had added).
async fn changing_catalog_over_stdio(server: Server) {
    let (program, args) = server.command("stdio");
    let client = StdioClient::spawn(program, args).expect("the server starts");
    let catalog = Catalog::stdio(&client, catalog_options()).await.unwrap();
    converges(server, &catalog, &Called::Stdio(&client)).await;
    call(
        &Called::Stdio(&client),
        "test_add_tool",
        serde_json::json!({"name": "gone", "description": "x"}),
    )
    .await;
    tokio::time::timeout(WAIT, async {
        let mut generation = catalog.snapshot().generation();
        while catalog.snapshot().tool("gone").is_none() {
            generation = catalog.changed(generation).await.generation();
        }
    })
    .await
    .unwrap();
    let first = client.process_id().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut generation = catalog.snapshot().generation();
        while catalog.snapshot().tool("gone").is_some() {
            generation = catalog.changed(generation).await.generation();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{server:?}: the catalog follows the new process"));
    assert_ne!(client.process_id(), Some(first));
    assert!(catalog.snapshot().tool("test_add_tool").is_some());
    // And it still follows changes.
    converges(server, &catalog, &Called::Stdio(&client)).await;
}

#[tokio::test]
async fn typescript_sdk_v2_tools_changing_at_runtime_reach_the_catalog() {
    changing_catalog_over_http(Server::TypeScript).await;
    changing_catalog_over_stdio(Server::TypeScript).await;
}

#[tokio::test]
async fn python_sdk_tools_changing_at_runtime_reach_the_catalog() {
    changing_catalog_over_http(Server::Python).await;
    changing_catalog_over_stdio(Server::Python).await;
}
