//! The example server, run as a real process, against rmcp's own client:
//! over Streamable HTTP on loopback and over stdio.

use std::time::Duration;

use crate::support::example::{
    HttpServer, call, http_request, listen_request, raw_http, request_meta, send_raw, stdio_client,
};
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{ServiceError, SubscriptionEnd};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);

async fn next(subscription: &mut rmcp::service::Subscription) -> Option<ServerNotification> {
    tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("the stream moves on")
        .expect("no error on the stream")
}

#[tokio::test]
async fn http_smoke_acknowledged_stamped_and_filtered() {
    let server = HttpServer::start(&[]).await;
    let client = server.client().await;
    // Long enough that the SSE body sends the event's shared text as a frame
    // of its own rather than copying it.
    let long = format!("file:///{}", "x".repeat(5_000));
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .resource_subscription("file:///a")
        .resource_subscription(&long)
        .build();
    let mut subscription = client.listen(filter.clone()).await.unwrap();
    assert_eq!(subscription.acknowledged(), &filter);

    // Not asked for: a prompts change and another URI. rmcp's client fails
    // the stream if any of them arrives, or if an id is not ours.
    call(&client, "test_trigger_prompt_change", json!({})).await;
    call(
        &client,
        "test_trigger_resource_update",
        json!({"uri": "file:///b"}),
    )
    .await;
    call(&client, "test_trigger_tool_change", json!({})).await;
    call(
        &client,
        "test_trigger_resource_update",
        json!({"uri": "file:///a"}),
    )
    .await;

    assert!(matches!(
        next(&mut subscription).await,
        Some(ServerNotification::ToolListChangedNotification(_))
    ));
    match next(&mut subscription).await {
        Some(ServerNotification::ResourceUpdatedNotification(updated)) => {
            assert_eq!(updated.params.uri, "file:///a");
        }
        other => panic!("expected the update for file:///a, got {other:?}"),
    }
    call(
        &client,
        "test_trigger_resource_update",
        json!({"uri": long}),
    )
    .await;
    match next(&mut subscription).await {
        Some(ServerNotification::ResourceUpdatedNotification(updated)) => {
            assert_eq!(updated.params.uri, long);
        }
        other => panic!("expected the update for the long URI, got {other:?}"),
    }
    let stats = server.stats().await;
    assert_eq!(stats["events_published"], 5);
    assert_eq!(stats["events"]["delivered"], 3);
}

#[tokio::test]
async fn http_cancelling_one_stream_leaves_the_others_and_frees_the_listener_at_once() {
    let server = HttpServer::start(&[]).await;
    let client = server.client().await;
    let tools = || SubscriptionFilter::builder().tools_list_changed().build();
    let mut kept = client.listen(tools()).await.unwrap();
    let mut cancelled = client.listen(tools()).await.unwrap();
    server.wait_for_active(2, WAIT).await;

    cancelled.cancel().await.unwrap();
    server.wait_for_active(1, Duration::from_secs(1)).await;
    assert_eq!(server.stats().await["listeners_closed"]["cancelled"], 1);

    call(&client, "test_trigger_tool_change", json!({})).await;
    assert!(matches!(
        next(&mut kept).await,
        Some(ServerNotification::ToolListChangedNotification(_))
    ));
}

#[tokio::test]
async fn http_shutdown_completes_every_stream_gracefully() {
    let server = HttpServer::start(&[]).await;
    let client = server.client().await;
    let mut first = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    let mut second = client
        .listen(SubscriptionFilter::builder().prompts_list_changed().build())
        .await
        .unwrap();
    server.wait_for_active(2, WAIT).await;
    server.interrupt();
    for subscription in [&mut first, &mut second] {
        assert!(next(subscription).await.is_none());
        assert!(
            matches!(subscription.end(), Some(SubscriptionEnd::Graceful(_))),
            "{:?}",
            subscription.end()
        );
    }
}

#[tokio::test]
async fn http_overflow_under_disconnect_ends_with_an_error_the_client_sees() {
    let server = HttpServer::start(&["--capacity", "1", "--overflow", "disconnect"]).await;
    let client = server.client().await;
    let mut subscription = client
        .listen_with_capacity(
            SubscriptionFilter::builder()
                .resource_subscription("r")
                .build(),
            std::num::NonZeroUsize::new(100_000).unwrap(),
        )
        .await
        .unwrap();
    call(
        &client,
        "test_trigger_burst",
        json!({"uri": "r", "count": 100_000}),
    )
    .await;
    let error = loop {
        match tokio::time::timeout(WAIT, subscription.next())
            .await
            .unwrap()
        {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("expected an error end, got {:?}", subscription.end()),
            Err(ServiceError::McpError(error)) => break error,
            Err(other) => panic!("unexpected {other}"),
        }
    };
    assert_eq!(error.code.0, -32000);
    assert_eq!(error.data.as_ref().unwrap()["reason"], "overflow");
    assert!(error.data.as_ref().unwrap()["dropped"].as_u64().unwrap() >= 2);
    server.wait_for_active(0, WAIT).await;
    assert_eq!(server.stats().await["listeners_closed"]["overflow"], 1);
}

#[tokio::test]
async fn http_refusals_come_before_any_acknowledgement() {
    let server = HttpServer::start(&["--max-subscriptions", "1"]).await;
    let addr = server.addr();
    let listen = |id: u64, notifications| listen_request(json!(id), notifications);
    let mut without_notifications = listen(1, json!({}));
    without_notifications["params"]
        .as_object_mut()
        .unwrap()
        .remove("notifications");

    let (head, body) = raw_http(&addr, "POST", "/mcp", Some(&without_notifications)).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["id"], 1);
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(body["error"]["message"], "missing params.notifications");

    let uris: Vec<String> = (0..1_001).map(|i| format!("file:///{i}")).collect();
    let (_, body) = raw_http(
        &addr,
        "POST",
        "/mcp",
        Some(&listen(2, json!({"resourceSubscriptions": uris}))),
    )
    .await;
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], -32602);

    // Fill the one slot, then ask for another.
    let client = server.client().await;
    let _held = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    let (_, body) = raw_http(&addr, "POST", "/mcp", Some(&listen(3, json!({})))).await;
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], -32603);
    assert_eq!(body["error"]["message"], "Subscription limit reached");
    assert_eq!(server.stats().await["listeners_opened"], 1);
}

#[tokio::test]
async fn http_listen_refuses_a_foreign_host_or_origin() {
    use tokio::io::AsyncReadExt;
    let server = HttpServer::start(&[]).await;
    let body = listen_request(json!(1), json!({"toolsListChanged": true})).to_string();
    for (host, origin) in [
        ("evil.example", ""),
        ("127.0.0.1", "Origin: https://evil.example\r\n"),
    ] {
        let headers = format!("{origin}Connection: close\r\n");
        let request = http_request("POST", "/mcp", host, &headers, &body);
        let mut stream = send_raw(&server.addr(), &request).await;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(
            response.starts_with("HTTP/1.1 403"),
            "{host} {origin}: {response}"
        );
    }
    assert_eq!(server.stats().await["listeners_opened"], 0);
}

#[tokio::test]
async fn http_endpoint_methods_headers_and_keepalives() {
    let server = HttpServer::start(&["--keepalive-secs", "1"]).await;
    let addr = server.addr();
    for method in ["GET", "DELETE"] {
        let (head, _) = raw_http(&addr, method, "/mcp", None).await;
        assert!(head.starts_with("HTTP/1.1 405"), "{method}: {head}");
    }
    let subscribe = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe",
        "params": {"_meta": request_meta(), "uri": "file:///a"}});
    let (head, body) = raw_http(&addr, "POST", "/mcp", Some(&subscribe)).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["error"]["code"],
        -32601
    );

    // A listen stream: headers, the acknowledgement first, then comment
    // keep-alives while idle.
    use tokio::io::AsyncReadExt;
    let body = listen_request(json!("s"), json!({"toolsListChanged": true})).to_string();
    let mut stream = send_raw(&addr, &http_request("POST", "/mcp", &addr, "", &body)).await;
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !seen.contains("\n:") {
        let mut buf = [0; 4096];
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .expect("a keep-alive arrives")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let lower = seen.to_ascii_lowercase();
    assert!(lower.contains("content-type: text/event-stream"), "{seen}");
    assert!(lower.contains("x-accel-buffering: no"), "{seen}");
    let ack = seen
        .find("notifications/subscriptions/acknowledged")
        .unwrap();
    assert!(
        ack < seen.find("\n:").unwrap(),
        "the acknowledgement comes first"
    );
    drop(stream);
    server.wait_for_active(0, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn http_a_client_that_stops_reading_delays_no_one_else() {
    let server = HttpServer::start(&["--capacity", "64"]).await;
    let addr = server.addr();
    // A raw client that opens a stream for "hot" and never reads it.
    let body = listen_request(json!(1), json!({"resourceSubscriptions": ["hot"]})).to_string();
    let stalled = send_raw(&addr, &http_request("POST", "/mcp", &addr, "", &body)).await;

    let client = server.client().await;
    let mut reader = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    server.wait_for_active(2, WAIT).await;
    // Far more than the stalled socket and its queue can hold.
    call(
        &client,
        "test_trigger_burst",
        json!({"uri": "hot", "count": 200_000}),
    )
    .await;
    for _ in 0..5 {
        call(&client, "test_trigger_tool_change", json!({})).await;
        let started = tokio::time::Instant::now();
        assert!(matches!(
            next(&mut reader).await,
            Some(ServerNotification::ToolListChangedNotification(_))
        ));
        // Generous for a loaded 2-core machine; a stalled writer would hold
        // it for ever.
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    let stats = server.stats().await;
    assert!(stats["events"]["dropped"].as_u64().unwrap() > 0, "{stats}");
    drop(stalled);
}

#[tokio::test]
async fn http_metrics_are_exposed_in_prometheus_text() {
    let server = HttpServer::start(&[]).await;
    let client = server.client().await;
    let _subscription = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    let (head, body) = raw_http(&server.addr(), "GET", "/metrics", None).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        body.contains("mcp_subscriptions_listeners_active 1"),
        "{body}"
    );
    assert!(
        body.contains("mcp_subscriptions_events_published_total"),
        "{body}"
    );
}

#[tokio::test]
async fn stdio_streams_share_one_connection_and_cancel_one_at_a_time() {
    let (_child, client) = stdio_client(&[]).await;
    let mut tools = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    let mut prompts = client
        .listen(SubscriptionFilter::builder().prompts_list_changed().build())
        .await
        .unwrap();
    let mut both = client
        .listen(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .prompts_list_changed()
                .build(),
        )
        .await
        .unwrap();
    call(&client, "test_trigger_tool_change", json!({})).await;
    assert!(matches!(
        next(&mut tools).await,
        Some(ServerNotification::ToolListChangedNotification(_))
    ));
    assert!(matches!(
        next(&mut both).await,
        Some(ServerNotification::ToolListChangedNotification(_))
    ));

    tools.cancel().await.unwrap();
    call(&client, "test_trigger_tool_change", json!({})).await;
    call(&client, "test_trigger_prompt_change", json!({})).await;
    assert!(matches!(
        next(&mut both).await,
        Some(ServerNotification::ToolListChangedNotification(_))
    ));
    assert!(matches!(
        next(&mut both).await,
        Some(ServerNotification::PromptListChangedNotification(_))
    ));
    assert!(matches!(
        next(&mut prompts).await,
        Some(ServerNotification::PromptListChangedNotification(_))
    ));
}

#[tokio::test]
async fn stdio_refusals_and_graceful_shutdown() {
    let (child, client) = stdio_client(&["--max-subscriptions", "1"]).await;
    let uris: Vec<String> = (0..1_001).map(|i| format!("file:///{i}")).collect();
    let err = client
        .listen(
            SubscriptionFilter::builder()
                .resource_subscriptions(uris)
                .build(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ServiceError::McpError(e) if e.code.0 == -32602),
        "{err}"
    );

    let mut held = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    let err = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ServiceError::McpError(e) if e.code.0 == -32603 && e.message == "Subscription limit reached"),
        "{err}"
    );

    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(next(&mut held).await.is_none());
    assert!(
        matches!(held.end(), Some(SubscriptionEnd::Graceful(_))),
        "{:?}",
        held.end()
    );
}

/// The description of `name` in the server's tools list, if it is there.
async fn described(client: &crate::support::example::Client, name: &str) -> Option<String> {
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.into_iter().find(|tool| tool.name == name)?;
    Some(tool.description.unwrap_or_default().into_owned())
}

#[tokio::test]
async fn http_tools_added_edited_and_removed_at_runtime_change_the_list_and_tell_listeners() {
    let server = HttpServer::start(&[]).await;
    let client = server.client().await;
    let tools = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = client.listen(tools).await.unwrap();
    let changed = |note: Option<ServerNotification>| {
        assert!(
            matches!(
                note,
                Some(ServerNotification::ToolListChangedNotification(_))
            ),
            "{note:?}"
        );
    };

    let search = json!({"name": "search", "description": "Finds things"});
    call(&client, "test_add_tool", search.clone()).await;
    changed(next(&mut subscription).await);
    assert_eq!(
        described(&client, "search").await.as_deref(),
        Some("Finds things")
    );
    let answer = client
        .call_tool(rmcp::model::CallToolRequestParams::new("search"))
        .await
        .unwrap();
    assert_eq!(answer.content[0].as_text().unwrap().text, "search called");

    let edit = json!({"name": "search", "description": "Finds more"});
    call(&client, "test_edit_tool", edit).await;
    changed(next(&mut subscription).await);
    assert_eq!(
        described(&client, "search").await.as_deref(),
        Some("Finds more")
    );

    call(&client, "test_remove_tool", json!({"name": "search"})).await;
    changed(next(&mut subscription).await);
    assert_eq!(described(&client, "search").await, None);

    // Neither a built-in tool nor one not added can be changed, and a
    // refused change tells no one.
    for (tool, arguments) in [
        (
            "test_add_tool",
            json!({"name": "test_revoke", "description": "x"}),
        ),
        ("test_remove_tool", json!({"name": "test_add_tool"})),
        (
            "test_edit_tool",
            json!({"name": "search", "description": "x"}),
        ),
    ] {
        let arguments = arguments.as_object().cloned().unwrap();
        let refused = client
            .call_tool(rmcp::model::CallToolRequestParams::new(tool).with_arguments(arguments))
            .await;
        assert!(refused.is_err(), "{tool}: {refused:?}");
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(200), subscription.next())
            .await
            .is_err()
    );
    assert!(described(&client, "test_revoke").await.is_some());
}
