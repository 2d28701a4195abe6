//! Every bad input on the HTTP endpoint is answered as the protocol says,
//! with raw requests to the example server (rmcp behind the crate's front
//! door): the status, the JSON-RPC code, and a JSON body every time.

#![cfg(all(
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]

use crate::support::example::HttpServer;
use serde_json::{Value, json};

/// One raw request: `method` with `body` and `headers`; the status, the
/// content type and the body as JSON.
async fn send(
    server: &HttpServer,
    method: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String, Value) {
    let client = reqwest::Client::new();
    let mut request = client
        .request(method.parse().unwrap(), server.mcp_url())
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("not a JSON body ({status}, {content_type}): {text:?}"));
    (status, content_type, body)
}

const JSON: (&str, &str) = ("content-type", "application/json");
const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
const VERSION: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn listen(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"_meta": meta(version), "notifications": {"toolsListChanged": true}}})
    .to_string()
}

/// Asserts an answer: its status, its JSON-RPC code and id, in JSON.
fn expect(answer: (u16, String, Value), status: u16, code: i64, id: Value, case: &str) {
    let (got_status, content_type, body) = answer;
    assert_eq!(got_status, status, "{case}: {body}");
    assert!(
        content_type.starts_with("application/json"),
        "{case}: {content_type}"
    );
    assert_eq!(body["jsonrpc"], "2.0", "{case}: {body}");
    assert_eq!(body["error"]["code"], code, "{case}: {body}");
    assert_eq!(body["id"], id, "{case}: {body}");
}

#[tokio::test]
async fn bodies_that_are_not_json_are_parse_errors() {
    let server = HttpServer::start(&[]).await;
    for (case, body) in [
        ("not JSON", "nope"),
        ("empty", ""),
        (
            "truncated",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#,
        ),
        ("two values", "{} {}"),
    ] {
        let answer = send(&server, "POST", body, &[JSON, ACCEPT, VERSION]).await;
        expect(answer, 400, -32700, Value::Null, case);
    }
}

#[tokio::test]
async fn json_that_is_not_a_json_rpc_request_is_an_invalid_request() {
    let server = HttpServer::start(&[]).await;
    let tools = |fields: Value| {
        let mut message = json!({"params": {"_meta": meta("2026-07-28")}});
        message
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        message.to_string()
    };
    for (case, body, id) in [
        (
            "no jsonrpc",
            tools(json!({"id": 1, "method": "tools/list"})),
            json!(1),
        ),
        (
            "jsonrpc 1.0",
            tools(json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"})),
            json!(1),
        ),
        (
            "null id",
            tools(json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"})),
            Value::Null,
        ),
        (
            "object id",
            tools(json!({"jsonrpc": "2.0", "id": {}, "method": "tools/list"})),
            Value::Null,
        ),
        (
            "array id",
            tools(json!({"jsonrpc": "2.0", "id": [1], "method": "tools/list"})),
            Value::Null,
        ),
        (
            "boolean id",
            tools(json!({"jsonrpc": "2.0", "id": true, "method": "tools/list"})),
            Value::Null,
        ),
        (
            "method not a string",
            tools(json!({"jsonrpc": "2.0", "id": 1, "method": 7})),
            json!(1),
        ),
        (
            "batch",
            json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]).to_string(),
            Value::Null,
        ),
        (
            "listen without jsonrpc",
            json!({"id": 2, "method": "subscriptions/listen", "params": {"notifications": {}}})
                .to_string(),
            json!(2),
        ),
    ] {
        let answer = send(&server, "POST", &body, &[JSON, ACCEPT, VERSION]).await;
        expect(answer, 400, -32600, id, case);
    }
}

#[tokio::test]
async fn listen_headers_must_agree_with_the_body_and_name_a_supported_version() {
    let server = HttpServer::start(&[]).await;
    let listen_method = ("mcp-method", "subscriptions/listen");
    let answer = send(
        &server,
        "POST",
        &listen("2026-07-28"),
        &[
            JSON,
            ACCEPT,
            ("mcp-protocol-version", "2025-06-18"),
            listen_method,
        ],
    )
    .await;
    expect(answer, 400, -32020, json!(1), "version header mismatch");

    let answer = send(
        &server,
        "POST",
        &listen("2026-07-28"),
        &[JSON, ACCEPT, VERSION, ("mcp-method", "tools/list")],
    )
    .await;
    expect(answer, 400, -32020, json!(1), "method header mismatch");

    let future = ("mcp-protocol-version", "2099-01-01");
    let answer = send(
        &server,
        "POST",
        &listen("2099-01-01"),
        &[JSON, ACCEPT, future, listen_method],
    )
    .await;
    assert_eq!(
        answer.2["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );
    expect(answer, 400, -32022, json!(1), "unsupported version");
    assert_eq!(
        server.stats().await["listeners_opened"],
        0,
        "nothing was acknowledged"
    );
}

#[tokio::test]
async fn every_other_error_answer_is_json_too() {
    let server = HttpServer::start(&[]).await;
    let tools_list = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list",
        "params": {"_meta": meta("2026-07-28")}})
    .to_string();
    let plain = ("content-type", "text/plain");
    let answer = send(&server, "POST", &tools_list, &[plain, ACCEPT, VERSION]).await;
    expect(answer, 415, -32600, json!(5), "text/plain body");

    let answer = send(&server, "GET", "", &[ACCEPT]).await;
    expect(answer, 405, -32600, Value::Null, "GET");
    let answer = send(&server, "DELETE", "", &[ACCEPT]).await;
    expect(answer, 405, -32600, Value::Null, "DELETE");

    // rmcp's own refusals (a missing Mcp-Method header here) stay rmcp's,
    // in JSON.
    let answer = send(&server, "POST", &tools_list, &[JSON, ACCEPT, VERSION]).await;
    expect(answer, 400, -32020, json!(5), "rmcp: missing Mcp-Method");

    // Without an Accept header rmcp answers in plain text; the front door
    // turns it into a JSON-RPC error with the same status.
    let (status, content_type, body) = send(
        &server,
        "POST",
        &tools_list,
        &[JSON, VERSION, ("mcp-method", "tools/list")],
    )
    .await;
    assert!(status >= 400, "{status}: {body}");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    assert_eq!(body["id"], 5);
    assert!(body["error"]["code"].is_i64(), "{body}");
}

#[tokio::test]
async fn well_formed_requests_that_are_not_listens_still_reach_rmcp() {
    let server = HttpServer::start(&[]).await;
    let tools_list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
        "params": {"_meta": meta("2026-07-28")}})
    .to_string();
    let client = reqwest::Client::new();
    let response = client
        .post(server.mcp_url())
        .header(JSON.0, JSON.1)
        .header(ACCEPT.0, ACCEPT.1)
        .header(VERSION.0, VERSION.1)
        .header("mcp-method", "tools/list")
        .body(tools_list)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("test_trigger_tool_change"), "{text}");
}
