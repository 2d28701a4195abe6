//! What a server advertises at `initialize`, for each protocol revision it
//! accepts: the subscription bits its hub serves, under the capabilities it
//! declares, and none to a client of a revision without listen streams.

#![cfg(feature = "stdio")]

use std::time::Duration;

use mcp_subscriptions::{Capabilities, Hub};
use rmcp::model::{
    ErrorData, InitializeRequestParams, InitializeResult, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(Clone)]
struct Server {
    hub: Hub,
}

/// What the server has: tools and resources, no prompts.
fn base() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_resources()
        .build()
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(self.hub.advertise(base()))
    }

    // The README's form for a server that accepts older revisions too.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut info = self.negotiate_initialize(&request)?;
        info.capabilities = (self.hub.capabilities()).advertise_to(base(), &info.protocol_version);
        Ok(info)
    }
}

/// The `capabilities` a client of `version` is told: the answer to its
/// `initialize`, or from 2026-07-28 on (no handshake) to `server/discover`.
async fn advertised(hub: &Hub, version: &ProtocolVersion) -> Value {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server);
    let handler = Server { hub: hub.clone() };
    let running = tokio::spawn(async move { handler.serve((server_read, server_write)).await });
    let (client_read, mut client_write) = tokio::io::split(client);
    let client_info = json!({"name": "t", "version": "1"});
    let request = if *version == ProtocolVersion::V_2026_07_28 {
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientInfo": client_info,
                "io.modelcontextprotocol/clientCapabilities": {},
            }},
        })
    } else {
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": client_info},
        })
    };
    client_write
        .write_all(format!("{request}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(client_read).lines();
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .expect("an answer within 5 s")
        .unwrap()
        .expect("the pipe is open");
    running.abort();
    let answer: Value = serde_json::from_str(&line).unwrap();
    let result = &answer["result"];
    let speaks = match result.get("protocolVersion") {
        Some(negotiated) => negotiated == &json!(version),
        None => result["supportedVersions"]
            .as_array()
            .is_some_and(|versions| versions.contains(&json!(version))),
    };
    assert!(speaks, "{version}: {answer}");
    result["capabilities"].clone()
}

#[tokio::test]
async fn initialize_advertises_exactly_what_is_served_for_each_revision() {
    let hubs = [
        (Capabilities::default(), "every core kind"),
        (Capabilities::none().with_tools_list_changed(), "tools only"),
        (
            Capabilities::none().with_resources_subscribe(),
            "updates only",
        ),
        (
            Capabilities::none().with_prompts_list_changed(),
            "prompts only",
        ),
        (Capabilities::none(), "nothing"),
    ];
    for (served, name) in hubs {
        let hub = Hub::builder().capabilities(served.clone()).build();
        for version in [
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ] {
            let caps = advertised(&hub, &version).await;
            let listens = version == ProtocolVersion::V_2026_07_28;
            let bit = |served: bool| (listens && served).then_some(json!(true));
            let case = format!("{name}, {version}: {caps}");
            assert_eq!(caps.get("prompts"), None, "never created: {case}");
            assert_eq!(
                caps["tools"].get("listChanged").cloned(),
                bit(served.tools_list_changed),
                "{case}"
            );
            assert_eq!(
                caps["resources"].get("listChanged").cloned(),
                bit(served.resources_list_changed),
                "{case}"
            );
            assert_eq!(
                caps["resources"].get("subscribe").cloned(),
                bit(served.resources_subscribe),
                "{case}"
            );
        }
    }
}
