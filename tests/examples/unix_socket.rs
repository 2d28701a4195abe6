//! The example server on a Unix domain socket (`--bind unix:PATH`): the
//! crate's client (a `Subscription` and a `Catalog`) and rmcp's own
//! Unix-socket client each listen there and get a tool change; the socket
//! file goes with the server.

#![cfg(feature = "client")]

use std::process::Stdio;
use std::time::Duration;

use mcp_subscriptions::{EventKind, Filter, ListKind};
use mcp_subscriptions_client::catalog::{CatalogOptions, Endpoint};
use mcp_subscriptions_client::{Item, SubscribeOptions, Subscription};
use rmcp::model::{ServerNotification, SubscriptionFilter};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::example::{binary, call, unix_client};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn the_crates_client_and_rmcps_listen_over_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("mcp-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.sock");
    let socket = path.to_str().unwrap().to_owned();
    let mut server = tokio::process::Command::new(binary())
        .args(["--bind", &format!("unix:{socket}")])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let said = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        said,
        format!("listening on unix:{socket} http://localhost/mcp")
    );

    // The crate's client: a subscription and a catalog, over the socket.
    let over_the_socket = SubscribeOptions::default().with_unix_socket(&path);
    let tools = Filter::new().with_tools_list_changed();
    let mut ours = Subscription::http("http://localhost/mcp", &tools, over_the_socket.clone())
        .await
        .unwrap();
    assert_eq!(ours.granted(), tools);
    let catalog = Endpoint::http("http://localhost/mcp")
        .catalog(CatalogOptions::default().with_subscribe(over_the_socket))
        .await
        .unwrap();
    assert!(
        catalog
            .snapshot()
            .tools()
            .iter()
            .any(|tool| tool.name == "test_trigger_tool_change")
    );
    // rmcp's own Unix-socket client.
    let rmcp = unix_client(&socket).await;
    let mut theirs = rmcp
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();

    call(&rmcp, "test_trigger_tool_change", json!({})).await;
    let event = loop {
        match tokio::time::timeout(WAIT, ours.next()).await.unwrap() {
            Some(Item::Event(event)) => break event,
            Some(_) => {}
            None => panic!("the subscription ended"),
        }
    };
    assert_eq!(event.kind(), &EventKind::ListChanged(ListKind::Tools));
    assert!(matches!(
        tokio::time::timeout(WAIT, theirs.next()).await.unwrap(),
        Ok(Some(ServerNotification::ToolListChangedNotification(_)))
    ));

    // Ctrl-C: every stream completes, and the socket file is removed.
    let pid = server.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        tokio::time::timeout(WAIT, server.wait())
            .await
            .unwrap()
            .unwrap()
            .success()
    );
    assert!(!path.exists(), "the socket file goes with the server");
    std::fs::remove_dir_all(&dir).unwrap();
}
