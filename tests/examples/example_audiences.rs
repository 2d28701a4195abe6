//! The example server's audiences in bearer-token mode: a trigger scoped
//! to a tenant or a principal reaches only those streams, `test_revoke`
//! ends one principal's streams with the documented error and no one
//! else's and refuses its token from then on, and the demand hook logs
//! each URI's attach and detach.

use std::time::Duration;

use crate::support::example::HttpServer;
use crate::support::http::{Answer, listen, post};
use serde_json::json;
use tokio::io::BufReader;
use tokio::io::Lines;
use tokio::process::ChildStderr;

const QUIET: Duration = Duration::from_millis(200);

/// alice and bob of tenant acme, carol of tenant other.
pub(crate) const TOKENS: [&str; 6] = [
    "--bearer-token",
    "alice:a-secret:acme",
    "--bearer-token",
    "bob:b-secret:acme",
    "--bearer-token",
    "carol:c-secret:other",
];

/// An acknowledged tools listen stream of `token`'s principal.
async fn listen_tools(server: &HttpServer, token: &str) -> Answer {
    let request = listen(json!("tools"), json!({"toolsListChanged": true}), &[]);
    let authorization = format!("Bearer {token}");
    let mut stream = post(&server.base, &request, &[("authorization", &authorization)]).await;
    let ack = stream.next().await.expect("an acknowledgement");
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    stream
}

async fn gets_tools_change(stream: &mut Answer) {
    let note = stream.next().await.expect("a notification");
    assert_eq!(note["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn a_scoped_trigger_reaches_only_its_tenant_or_principal() {
    let server = HttpServer::start(&TOKENS).await;
    let mut alice = listen_tools(&server, "a-secret").await;
    let mut bob = listen_tools(&server, "b-secret").await;
    let mut carol = listen_tools(&server, "c-secret").await;

    let told = server
        .call_as(
            "c-secret",
            "test_trigger_tool_change",
            json!({"tenant": "acme"}),
        )
        .await;
    assert_eq!(told, "queued for 2 listeners");
    gets_tools_change(&mut alice).await;
    gets_tools_change(&mut bob).await;
    assert!(carol.is_quiet(QUIET).await, "carol is not of acme");

    server
        .call_as(
            "a-secret",
            "test_trigger_tool_change",
            json!({"principal": "carol"}),
        )
        .await;
    gets_tools_change(&mut carol).await;
    assert!(alice.is_quiet(QUIET).await && bob.is_quiet(QUIET).await);

    server
        .call_as("a-secret", "test_trigger_tool_change", json!({}))
        .await;
    for stream in [&mut alice, &mut bob, &mut carol] {
        gets_tools_change(stream).await;
    }
}

#[tokio::test]
async fn test_revoke_ends_one_principals_streams_with_the_revoked_error() {
    let server = HttpServer::start(&TOKENS).await;
    let mut first = listen_tools(&server, "a-secret").await;
    let mut second = listen_tools(&server, "a-secret").await;
    let mut bob = listen_tools(&server, "b-secret").await;

    let told = server
        .call_as("b-secret", "test_revoke", json!({"principal": "alice"}))
        .await;
    assert_eq!(told, "revoked 2 streams here");
    for stream in [&mut first, &mut second] {
        let end = stream.next().await.expect("the revocation");
        assert_eq!(end["id"], "tools");
        assert_eq!(end["error"]["code"], -32003);
        assert_eq!(end["error"]["data"], json!({"reason": "revoked"}));
        assert!(stream.next().await.is_none(), "nothing after the error");
    }
    server
        .call_as("b-secret", "test_trigger_tool_change", json!({}))
        .await;
    gets_tools_change(&mut bob).await;

    let told = server
        .call_as("b-secret", "test_revoke", json!({"principal": "nobody"}))
        .await;
    assert_eq!(told, "revoked 0 streams here");
    // The revocation holds: alice's token is refused from then on, bob's
    // is not.
    assert_refused_as_revoked(&server, "a-secret").await;
    let mut again = listen_tools(&server, "b-secret").await;
    server
        .call_as("b-secret", "test_trigger_tool_change", json!({}))
        .await;
    gets_tools_change(&mut again).await;
}

/// A listen with `token` is refused: 401, `-32003`, `reason: revoked`.
pub(crate) async fn assert_refused_as_revoked(server: &HttpServer, token: &str) {
    let request = listen(json!("tools"), json!({"toolsListChanged": true}), &[]);
    let authorization = format!("Bearer {token}");
    let answer = post(&server.base, &request, &[("authorization", &authorization)]).await;
    assert_eq!(answer.status, 401);
    let error = answer.json().await["error"].clone();
    assert_eq!(error["code"], -32003, "{error}");
    assert_eq!(error["data"], json!({"reason": "revoked"}));
}

/// The next log line that says `what` and names `uri`.
async fn logged(log: &mut Lines<BufReader<ChildStderr>>, what: &str, uri: &str) {
    let found = async {
        while let Some(line) = log.next_line().await.unwrap() {
            if line.contains(what) && line.contains(uri) {
                return;
            }
        }
        panic!("the log ended before {what} {uri}");
    };
    tokio::time::timeout(Duration::from_secs(15), found)
        .await
        .unwrap_or_else(|_| panic!("no {what} of {uri} logged"));
}

#[tokio::test]
async fn the_demand_hook_logs_each_uris_attach_and_detach() {
    let (server, mut log) = HttpServer::start_logged(&[]).await;
    let uri = "file:///watched/notes.md";
    let request = listen(json!(1), json!({"resourceSubscriptions": [uri]}), &[]);
    let mut stream = post(&server.base, &request, &[]).await;
    stream.next().await.expect("an acknowledgement");
    logged(&mut log, "attach", uri).await;
    drop(stream);
    // After the grace (five seconds) with no stream back.
    logged(&mut log, "detach", uri).await;
}
