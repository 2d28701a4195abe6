//! The live catalog of the crate's example server, run as a process: over
//! Streamable HTTP (whose answers come as SSE), and over one stdio
//! connection that carries the list requests, the listen stream and the
//! application's own `tools/call` alike. Tools added, edited and removed
//! at runtime arrive as typed diffs; a killed stdio server is started
//! again and refetched.

#![cfg(all(
    feature = "client",
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]

use std::time::Duration;

use crate::support::example::{HttpServer, binary, call};
use mcp_subscriptions_client::StdioClient;
use mcp_subscriptions_client::catalog::{
    Catalog, CatalogKind, CatalogOptions, Change, Changes, ListenState,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(10);

async fn next_change(changes: &mut Changes) -> Change {
    tokio::time::timeout(WAIT, changes.next())
        .await
        .expect("a change in time")
        .expect("the catalog is open")
}

#[tokio::test]
async fn over_http_tools_added_edited_and_removed_arrive_as_diffs() {
    let server = HttpServer::start(&[]).await;
    let catalog = Catalog::http(server.mcp_url(), CatalogOptions::default())
        .await
        .unwrap();
    let snapshot = catalog.snapshot();
    assert!(snapshot.tool("test_add_tool").is_some(), "{catalog:?}");
    let health = catalog.health();
    assert_eq!(health.listen, ListenState::Listening);
    for kind in CatalogKind::ALL {
        let list = health.list(kind).unwrap_or_else(|| panic!("{kind:?}"));
        assert!(list.live && list.last_error.is_none(), "{kind:?}: {list:?}");
    }
    assert!(snapshot.server().capabilities.tools.is_some());

    let client = server.client().await;
    let mut changes = catalog.changes();
    call(
        &client,
        "test_add_tool",
        json!({"name": "search", "description": "Finds"}),
    )
    .await;
    let Change::Tools(added) = next_change(&mut changes).await else {
        panic!()
    };
    assert_eq!(added.added.len(), 1);
    assert_eq!(added.added[0].name, "search");
    call(
        &client,
        "test_edit_tool",
        json!({"name": "search", "description": "Finds more"}),
    )
    .await;
    let Change::Tools(edited) = next_change(&mut changes).await else {
        panic!()
    };
    assert_eq!(
        edited.changed[0].new.description.as_deref(),
        Some("Finds more")
    );
    call(&client, "test_remove_tool", json!({"name": "search"})).await;
    let Change::Tools(removed) = next_change(&mut changes).await else {
        panic!()
    };
    assert_eq!(removed.removed[0].name, "search");
    assert!(catalog.snapshot().tool("search").is_none());
}

#[tokio::test]
async fn over_stdio_one_connection_carries_fetches_listen_and_calls_and_survives_a_kill() {
    let client = StdioClient::spawn(binary(), ["--stdio"]).unwrap();
    let catalog = Catalog::stdio(&client, CatalogOptions::default())
        .await
        .unwrap();
    let first = client.process_id().unwrap();
    let mut changes = catalog.changes();
    let add = json!({"name": "test_add_tool", "arguments": {"name": "search", "description": "x"}});
    client.request("tools/call", add).await.unwrap();
    let Change::Tools(added) = next_change(&mut changes).await else {
        panic!()
    };
    assert_eq!(added.added[0].name, "search");
    assert_eq!(
        client.process_id(),
        Some(first),
        "one process, one connection"
    );

    // Killed: the catalog's stream ends abruptly, the client starts the
    // server again, and the catalog refetches a list without the tool the
    // old process had added.
    std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    let Change::Tools(gone) = next_change(&mut changes).await else {
        panic!()
    };
    assert_eq!(gone.removed[0].name, "search");
    assert_ne!(client.process_id(), Some(first));
    assert_eq!(catalog.health().listen, ListenState::Listening);
}

#[tokio::test]
async fn the_watch_example_prints_the_catalog_and_then_each_change() {
    let server = HttpServer::start(&[]).await;
    let tools = server.client().await;
    let mut child = tokio::process::Command::new(binary().with_file_name("watch"))
        .args(["--catalog", &server.mcp_url()])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut line = async || {
        tokio::time::timeout(WAIT, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    };
    let listed = line().await;
    assert!(
        listed.starts_with("tools (") && listed.contains(" test_add_tool"),
        "{listed}"
    );
    assert!(line().await.starts_with("prompts ("));
    assert!(line().await.starts_with("resources ("));
    assert!(line().await.starts_with("templates ("));
    call(
        &tools,
        "test_add_tool",
        json!({"name": "search", "description": "x"}),
    )
    .await;
    assert_eq!(line().await, "+ tool search");
    call(
        &tools,
        "test_edit_tool",
        json!({"name": "search", "description": "y"}),
    )
    .await;
    assert_eq!(line().await, "~ tool search (description)");
    call(&tools, "test_remove_tool", json!({"name": "search"})).await;
    assert_eq!(line().await, "- tool search");
    // The server goes away: the health says so.
    drop(server);
    let health = line().await;
    assert!(
        health.starts_with("health: listening again (attempt "),
        "{health}"
    );
}

/// Killed over HTTP and started again on the same port: the catalog
/// listens again, and refetches a list without the tool the killed process
/// had added.
#[tokio::test]
async fn over_http_a_killed_and_restarted_server_is_followed() {
    let mut server = HttpServer::start(&[]).await;
    let addr = server.addr();
    let catalog = Catalog::http(server.mcp_url(), CatalogOptions::default())
        .await
        .unwrap();
    let mut changes = catalog.changes();
    let client = server.client().await;
    call(
        &client,
        "test_add_tool",
        json!({"name": "search", "description": "x"}),
    )
    .await;
    let Change::Tools(added) = next_change(&mut changes).await else {
        panic!()
    };
    assert_eq!(added.added[0].name, "search");

    server.child.kill().await.unwrap();
    let _restarted = HttpServer::start_on(&addr, &[]).await;
    let Change::Tools(gone) = next_change(&mut changes).await else {
        panic!()
    };
    assert_eq!(gone.removed[0].name, "search");
    assert!(catalog.snapshot().tool("test_add_tool").is_some());
    assert_eq!(catalog.health().listen, ListenState::Listening);
}
