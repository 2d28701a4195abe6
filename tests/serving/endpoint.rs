//! `http::endpoint`: the listen route and rmcp's service configured once,
//! so that they admit the same hosts and the listen route speaks the
//! server's own protocol versions.

#![cfg(all(feature = "http", feature = "tasks"))]

use std::borrow::Cow;

use mcp_subscriptions::{Hub, ListenService};
use rmcp::ServerHandler;
use rmcp::model::{ProtocolVersion, ServerCapabilities, ServerConfig};
use rmcp::transport::StreamableHttpServerConfig;
use serde_json::json;

use crate::support::http::{listen, post, serve};

#[derive(Clone)]
struct Server(&'static [ProtocolVersion]);

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(self.0)
    }
}

const BOTH: &[ProtocolVersion] = &[ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];

async fn endpoint(versions: &'static [ProtocolVersion], hosts: &[&str]) -> String {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_allowed_hosts(hosts.iter().copied());
    let http = mcp_subscriptions::http::endpoint(
        ListenService::new(Hub::new()),
        move || Server(versions),
        config,
    );
    serve(axum::Router::new().route("/mcp", http.into_method_router())).await
}

fn tools_list() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}})
}

#[tokio::test]
async fn the_listen_route_and_rmcp_admit_the_same_hosts() {
    let tools = json!({"toolsListChanged": true});
    // The URL's host is 127.0.0.1: refused by both when only localhost is
    // allowed, served by both when 127.0.0.1 is.
    let url = endpoint(BOTH, &["localhost"]).await;
    assert_eq!(
        post(&url, &listen(json!(1), tools.clone(), &[]), &[])
            .await
            .status,
        403
    );
    assert_eq!(post(&url, &tools_list(), &[]).await.status, 403);

    let url = endpoint(BOTH, &["127.0.0.1"]).await;
    let mut stream = post(&url, &listen(json!(1), tools, &[]), &[]).await;
    assert!(stream.is_stream());
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    let answer = post(&url, &tools_list(), &[]).await;
    assert_eq!(answer.status, 200);
}

#[tokio::test]
async fn the_listen_route_speaks_the_servers_listening_versions() {
    let url = endpoint(&[ProtocolVersion::V_2025_11_25], &["127.0.0.1"]).await;
    let answer = post(
        &url,
        &listen(json!(1), json!({"toolsListChanged": true}), &[]),
        &[],
    )
    .await;
    assert_eq!(answer.status, 400);
    let error = answer.json().await["error"].clone();
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"]["supported"], json!([]), "{error}");
}
