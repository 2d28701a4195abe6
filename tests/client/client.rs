//! The client half against the crate's own example server, run as a real
//! process: over Streamable HTTP, stdio and the notification channel, and in
//! process against a hub. Each transport: the acknowledgement and the
//! grant, delivery, the end states, cancel releasing the server's listener,
//! each buffer policy, and re-listening across a restarted server.

#![cfg(all(
    feature = "client",
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]

use std::process::Stdio;
use std::time::Duration;

use crate::support::example::{HttpServer, binary, call};
use mcp_subscriptions::{EventKind, Filter, Hub, ListKind, Overflow};
use mcp_subscriptions_client::{
    BufferPolicy, Credentials, End, Item, Relisten, StdioClient, SubscribeError, SubscribeOptions,
    Subscription,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(10);

async fn next(subscription: &mut Subscription) -> Item {
    tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("the subscription moves on")
        .expect("not finished")
}

/// The next item that is not a re-listen report.
async fn next_settled(subscription: &mut Subscription) -> Item {
    loop {
        match next(subscription).await {
            Item::Relistening(_) => {}
            item => return item,
        }
    }
}

fn kind(item: &Item) -> Option<&EventKind> {
    match item {
        Item::Event(event) => Some(event.kind()),
        _ => None,
    }
}

fn updated(uri: &str) -> EventKind {
    EventKind::ResourceUpdated { uri: uri.into() }
}

/// Waits until the subscription has read `n` events off the transport.
async fn wait_received(subscription: &Subscription, n: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while subscription.stats().received < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "received {:?}",
            subscription.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn http_smoke_acknowledged_granted_delivered_cancelled() {
    let server = HttpServer::start(&[]).await;
    let tools = server.client().await;
    let requested = Filter::new()
        .with_tools_list_changed()
        .with_resource("file:///a");
    let mut subscription =
        Subscription::http(server.mcp_url(), &requested, SubscribeOptions::default())
            .await
            .unwrap();
    assert_eq!(subscription.granted(), requested);
    server.wait_for_active(1, WAIT).await;

    call(&tools, "test_trigger_prompt_change", json!({})).await;
    call(&tools, "test_trigger_tool_change", json!({})).await;
    call(
        &tools,
        "test_trigger_resource_update",
        json!({"uri": "file:///a"}),
    )
    .await;
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    let item = next(&mut subscription).await;
    assert_eq!(kind(&item), Some(&updated("file:///a")));
    let Item::Event(event) = item else { panic!() };
    assert_eq!(
        event.to_plain_json(),
        r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}"#,
        "the stamp is gone, the rest as sent"
    );
    assert!(subscription.try_next().is_none());

    subscription.cancel().await;
    server.wait_for_active(0, WAIT).await;
}

#[tokio::test]
async fn http_a_stream_granted_nothing_is_completed_and_never_listened_again() {
    let server = HttpServer::start(&[]).await;
    // A misspelled field: kept by the filter, served by no one.
    let typo = Filter::new().with_extension("toolListChanged", json!(true));
    let options = SubscribeOptions::default().with_relisten(Relisten::new(
        Duration::from_millis(10),
        Duration::from_millis(20),
    ));
    let mut subscription = Subscription::http(server.mcp_url(), &typo, options)
        .await
        .unwrap();
    assert!(subscription.granted().is_empty());
    assert_eq!(next(&mut subscription).await, Item::End(End::Complete));
    assert!(subscription.next().await.is_none(), "no listening again");
    let stats = server.stats().await;
    assert_eq!(stats["listeners_opened"], 1);
    assert_eq!(stats["listeners_active"], 0);
    assert_eq!(stats["listeners_closed"]["complete"], 1);
}

#[tokio::test]
async fn a_server_ending_in_the_cancelled_dialect_ends_gracefully_over_http_and_stdio() {
    let tools = Filter::new().with_tools_list_changed();
    // A graceful end is final here: a cancel read as anything else would
    // listen again.
    let options = || {
        SubscribeOptions::default().with_relisten(
            Relisten::new(Duration::from_millis(20), Duration::from_millis(200))
                .with_after_complete(false),
        )
    };
    let server = HttpServer::start(&["--teardown", "cancelled"]).await;
    let mut http = Subscription::http(server.mcp_url(), &tools, options())
        .await
        .unwrap();
    let client = StdioClient::spawn(binary(), ["--stdio", "--teardown", "cancelled"]).unwrap();
    let mut stdio = client.subscribe(&tools, options()).await.unwrap();

    server.interrupt();
    let pid = client.process_id().expect("the client started it");
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for subscription in [&mut http, &mut stdio] {
        assert_eq!(next(subscription).await, Item::End(End::Complete));
        assert!(subscription.next().await.is_none(), "nothing after the end");
    }
}

#[tokio::test]
async fn http_refusals_and_the_graceful_end() {
    let server = HttpServer::start(&["--max-subscriptions", "1"]).await;
    // More URIs in one request than the server takes (by default the
    // client would split them over several streams).
    let uris = (0..1_001).fold(Filter::new(), |f, i| {
        f.with_resource(format!("file:///{i}"))
    });
    let one_stream = SubscribeOptions::default().with_max_uris_per_stream(2_000);
    let err = Subscription::http(server.mcp_url(), &uris, one_stream)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SubscribeError::Refused(e) if e.code.0 == -32602),
        "{err}"
    );

    let tools = Filter::new().with_tools_list_changed();
    let mut first = Subscription::http(server.mcp_url(), &tools, SubscribeOptions::default())
        .await
        .unwrap();
    let err = Subscription::http(server.mcp_url(), &tools, SubscribeOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SubscribeError::Refused(e) if e.message == "Subscription limit reached"),
        "{err}"
    );

    // Ctrl-C completes every stream gracefully.
    server.interrupt();
    assert_eq!(next(&mut first).await, Item::End(End::Complete));
    assert!(first.next().await.is_none(), "nothing after the end");

    let err = Subscription::http(server.mcp_url(), &tools, SubscribeOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, SubscribeError::Connect(_)), "{err}");
}

#[tokio::test]
async fn http_buffer_policies() {
    let server = HttpServer::start(&[]).await;
    let tools = server.client().await;
    let uri = "file:///burst";
    let requested = Filter::new().with_resource(uri);
    let burst = json!({"uri": uri, "count": 50});

    // Drop-oldest: the transport is read on, the reader learns the exact
    // loss and gets the newest events.
    let options = SubscribeOptions::default()
        .with_capacity(4)
        .with_policy(Overflow::DropOldest);
    let mut dropping = Subscription::http(server.mcp_url(), &requested, options)
        .await
        .unwrap();
    // Disconnect: the subscription ends with our own overflow.
    let options = SubscribeOptions::default()
        .with_capacity(4)
        .with_policy(BufferPolicy::Disconnect);
    let mut ending = Subscription::http(server.mcp_url(), &requested, options)
        .await
        .unwrap();
    // Coalescing: fifty updates of one URI take one slot.
    let options = SubscribeOptions::default()
        .with_capacity(4)
        .with_policy(BufferPolicy::Disconnect)
        .with_coalesce(true);
    let mut coalescing = Subscription::http(server.mcp_url(), &requested, options)
        .await
        .unwrap();
    // Wait: the transport is not read beyond the buffer's room.
    let options = SubscribeOptions::default().with_capacity(4);
    let mut waiting = Subscription::http(server.mcp_url(), &requested, options)
        .await
        .unwrap();
    server.wait_for_active(4, WAIT).await;

    call(&tools, "test_trigger_burst", burst).await;
    wait_received(&dropping, 50).await;
    wait_received(&coalescing, 50).await;
    assert_eq!(next(&mut dropping).await, Item::Lagged(46));
    for _ in 0..4 {
        assert_eq!(kind(&next(&mut dropping).await), Some(&updated(uri)));
    }
    let stats = dropping.stats();
    assert_eq!(
        (stats.received, stats.delivered, stats.dropped),
        (50, 4, 46)
    );

    assert_eq!(
        next(&mut ending).await,
        Item::End(End::Overflowed { dropped: 5 })
    );
    server.wait_for_active(3, WAIT).await;

    assert_eq!(kind(&next(&mut coalescing).await), Some(&updated(uri)));
    assert!(coalescing.try_next().is_none());
    let stats = coalescing.stats();
    assert_eq!((stats.delivered, stats.coalesced), (1, 49));

    // The waiting reader holds at most its capacity (and one message in
    // hand) while the server keeps the rest; then it gets all fifty.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(waiting.stats().received <= 5, "{:?}", waiting.stats());
    for _ in 0..50 {
        assert_eq!(kind(&next(&mut waiting).await), Some(&updated(uri)));
    }
    assert_eq!(waiting.stats().dropped, 0);
}

#[tokio::test]
async fn http_server_overflow_is_a_distinct_end() {
    let server = HttpServer::start(&["--capacity", "2", "--overflow", "disconnect"]).await;
    let tools = server.client().await;
    let uri = "file:///burst";
    let options = SubscribeOptions::default().with_capacity(1);
    let mut slow = Subscription::http(server.mcp_url(), &Filter::new().with_resource(uri), options)
        .await
        .unwrap();
    call(
        &tools,
        "test_trigger_burst",
        json!({"uri": uri, "count": 500}),
    )
    .await;
    let end = loop {
        match next(&mut slow).await {
            Item::End(end) => break end,
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    };
    assert!(end.is_server_overflow(), "{end}");
    let End::Failed(error) = end else { panic!() };
    assert_eq!(error.data.unwrap()["reason"], "overflow");
}

/// The example server on `addr` (a fixed port, to restart it on).
async fn start_on(addr: &str) -> tokio::process::Child {
    let mut child = tokio::process::Command::new(binary())
        .args(["--bind", addr])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(line.starts_with("listening on "), "{line}");
    child
}

#[tokio::test]
async fn http_relistens_across_a_restarted_server() {
    let addr = free_addr();
    let url = format!("http://{addr}/mcp");
    let mut server = start_on(&addr).await;
    let requested = Filter::new()
        .with_tools_list_changed()
        .with_resource("file:///a");
    let options = SubscribeOptions::default().with_relisten(Relisten::new(
        Duration::from_millis(20),
        Duration::from_millis(200),
    ));
    let mut subscription = Subscription::http(&url, &requested, options).await.unwrap();

    server.kill().await.unwrap();
    let Item::Relistening(first) = next(&mut subscription).await else {
        panic!("a re-listen report")
    };
    assert_eq!(first.attempt, 1);
    assert!(first.reason.contains("abrupt"), "{}", first.reason);
    // It keeps trying while the server is away.
    let second = loop {
        if let Item::Relistening(attempt) = next(&mut subscription).await
            && attempt.attempt >= 2
        {
            break attempt;
        }
    };
    assert!(second.reason.contains("cannot reach"), "{}", second.reason);

    let restarted = HttpServer {
        child: start_on(&addr).await,
        base: format!("http://{addr}"),
    };
    assert_eq!(
        next_settled(&mut subscription).await,
        Item::Resynced(requested.clone()),
        "what to refetch"
    );
    restarted.wait_for_active(1, WAIT).await;
    let tools = restarted.client().await;
    call(&tools, "test_trigger_tool_change", json!({})).await;
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    assert_eq!(subscription.stats().resyncs, 1);
}

#[tokio::test]
async fn http_relistens_across_a_graceful_restart_by_default() {
    let addr = free_addr();
    let server = HttpServer::start_on(&addr, &[]).await;
    let tools = Filter::new().with_tools_list_changed();
    // The README's options: re-listening with the default policy.
    let options = SubscribeOptions::default().with_relisten(Relisten::default());
    let mut subscription = Subscription::http(server.mcp_url(), &tools, options)
        .await
        .unwrap();

    // A deploy: SIGTERM completes every stream, and the server exits.
    server.terminate();
    let Item::Relistening(first) = next(&mut subscription).await else {
        panic!("a re-listen report, not the end")
    };
    assert_eq!(first.attempt, 1);
    assert!(first.reason.contains("complete"), "{}", first.reason);
    let mut old = server.child;
    old.wait().await.unwrap();

    let restarted = HttpServer::start_on(&addr, &[]).await;
    assert_eq!(
        next_settled(&mut subscription).await,
        Item::Resynced(tools.clone()),
        "what to refetch"
    );
    restarted.wait_for_active(1, WAIT).await;
    call(
        &restarted.client().await,
        "test_trigger_tool_change",
        json!({}),
    )
    .await;
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
}

/// A source that completes every stream the moment it is read, as a
/// server that ends every listen at once would, and counts its opens.
#[derive(Clone, Default)]
struct CompletesAtOnce {
    opened: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

struct Completed;

impl mcp_subscriptions::SourceHandle for Completed {
    async fn next(&mut self) -> mcp_subscriptions::Next {
        mcp_subscriptions::Next::Complete
    }

    fn close(&mut self, _: mcp_subscriptions::CloseReason) {}
}

impl mcp_subscriptions::Source for CompletesAtOnce {
    type Handle = Completed;

    fn open(
        &self,
        requested: &Filter,
        _: &mcp_subscriptions::OpenContext,
    ) -> Result<mcp_subscriptions::Opened<Completed>, mcp_subscriptions::error::OpenError> {
        self.opened
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(mcp_subscriptions::Opened::new(requested.clone(), Completed))
    }
}

#[tokio::test]
async fn a_server_that_completes_every_listen_at_once_is_not_listened_to_in_a_loop() {
    let source = CompletesAtOnce::default();
    let options = SubscribeOptions::default().with_relisten(Relisten::new(
        Duration::from_millis(20),
        Duration::from_millis(200),
    ));
    let tools = Filter::new().with_tools_list_changed();
    let mut subscription = Subscription::source(source.clone(), &tools, options)
        .await
        .unwrap();
    // Each stream that ended at once is one more attempt in a row: the
    // delays double (20, 40, 80 ms bounds, then 200 ms).
    let mut attempts = Vec::new();
    let started = tokio::time::Instant::now();
    while started.elapsed() < Duration::from_secs(1) {
        if let Item::Relistening(relistening) = next(&mut subscription).await {
            attempts.push(relistening.attempt);
        }
    }
    let opened = source.opened.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        (4..=12).contains(&opened),
        "about one listen per backoff in a second, not a loop: {opened} ({attempts:?})"
    );
    assert_eq!(attempts[..4], [1, 2, 3, 4], "{attempts:?}");
}

/// Tools list changes as the bearer of `token`, re-listening at once.
fn as_bearer(token: &str) -> SubscribeOptions {
    SubscribeOptions::default()
        .with_header("authorization", format!("Bearer {token}"))
        .with_relisten(Relisten::new(
            Duration::from_millis(10),
            Duration::from_millis(50),
        ))
}

#[tokio::test]
async fn http_a_revoked_stream_ends_as_its_own_case_and_relistens_only_with_new_credentials() {
    // The example server refuses a revoked principal's every token from
    // then on, so the fresh credential is one of another principal's.
    let tokens = ["alice:a-old", "carol:c-new", "bob:b-secret"];
    let args: Vec<&str> = tokens.iter().flat_map(|t| ["--bearer-token", t]).collect();
    let server = HttpServer::start(&args).await;
    let tools = Filter::new().with_tools_list_changed();
    let mut stuck = Subscription::http(server.mcp_url(), &tools, as_bearer("a-old"))
        .await
        .unwrap();
    // Each refresh gives the new token, and says why it was asked.
    let (asked, mut reasons) = tokio::sync::mpsc::unbounded_channel();
    let refresh = Credentials::new(move |end: &End| {
        asked.send(end.clone()).unwrap();
        async { Some(vec![("Authorization".into(), "Bearer c-new".into())]) }
    });
    let options = as_bearer("a-old").with_credentials(refresh);
    let mut refreshed = Subscription::http(server.mcp_url(), &tools, options)
        .await
        .unwrap();

    let told = server
        .call_as("b-secret", "test_revoke", json!({"principal": "alice"}))
        .await;
    assert_eq!(told, "revoked 2 streams here");
    let Item::End(end) = next(&mut stuck).await else {
        panic!("no re-listen without new credentials")
    };
    assert!(end.is_unauthorized(), "{end}");
    let End::Revoked(error) = &end else {
        panic!("{end}")
    };
    assert_eq!(error.code.0, -32003);
    assert_eq!(error.data.as_ref().unwrap()["reason"], "revoked");

    assert_eq!(
        next_settled(&mut refreshed).await,
        Item::Resynced(tools.clone())
    );
    assert!(matches!(reasons.recv().await, Some(End::Revoked(_))));
    server
        .call_as("b-secret", "test_trigger_tool_change", json!({}))
        .await;
    assert_eq!(
        kind(&next(&mut refreshed).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );

    // Revoked again, the hook gives the token just revoked: the end is
    // final.
    server
        .call_as("b-secret", "test_revoke", json!({"principal": "carol"}))
        .await;
    assert!(matches!(
        next_settled(&mut refreshed).await,
        Item::End(End::Revoked(_))
    ));
    assert_eq!(refreshed.stats().resyncs, 1);
}

/// A loopback address no one listens on yet, to start a server on later.
fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

#[tokio::test]
async fn http_the_first_listen_waits_for_a_server_not_up_yet() {
    let addr = free_addr();
    let url = format!("http://{addr}/mcp");
    let tools = Filter::new().with_tools_list_changed();
    let refused = Subscription::http(&url, &tools, SubscribeOptions::default()).await;
    assert!(
        matches!(&refused, Err(err) if err.is_transient()),
        "{refused:?}"
    );

    let relisten = Relisten::new(Duration::from_millis(20), Duration::from_millis(100));
    let options = SubscribeOptions::default().with_relisten(relisten.clone());
    let waiting = tokio::spawn(async move { Subscription::http(&url, &tools, options).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = HttpServer::start_on(&addr, &[]).await;
    let mut subscription = tokio::time::timeout(WAIT, waiting)
        .await
        .unwrap()
        .unwrap()
        .expect("acknowledged once the server is up");
    server
        .call_as("", "test_trigger_tool_change", json!({}))
        .await;
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );

    // Attempts are bounded as re-listening's are.
    let nowhere = format!("http://{}/mcp", free_addr());
    let bounded = SubscribeOptions::default().with_relisten(relisten.with_max_attempts(2));
    let tools = Filter::new().with_tools_list_changed();
    let gave_up = Subscription::http(&nowhere, &tools, bounded).await;
    assert!(
        matches!(gave_up, Err(SubscribeError::Connect(_))),
        "{gave_up:?}"
    );
}

#[tokio::test]
async fn a_request_that_cannot_be_made_fails_at_once_even_with_relistening() {
    let tools = Filter::new().with_tools_list_changed();
    let relisten = Relisten::new(Duration::from_millis(20), Duration::from_millis(100));
    let options = SubscribeOptions::default().with_relisten(relisten);
    let not_http = Subscription::http("ftp://127.0.0.1:9/mcp", &tools, options.clone());
    let not_ws = Subscription::channel("http://127.0.0.1:9/mcp/notifications/x", &tools, options);
    for failed in [
        tokio::time::timeout(WAIT, not_http)
            .await
            .expect("no retry"),
        tokio::time::timeout(WAIT, not_ws).await.expect("no retry"),
    ] {
        let err = failed.unwrap_err();
        assert!(matches!(err, SubscribeError::Invalid(_)), "{err}");
        assert!(!err.is_transient());
    }
}

#[tokio::test]
async fn http_a_relisten_refused_for_good_ends_unless_new_credentials_come() {
    let addr = free_addr();
    let url = format!("http://{addr}/mcp");
    let mut server = HttpServer::start_on(&addr, &["--bearer-token", "alice:old"]).await;
    let tools = Filter::new().with_tools_list_changed();
    let mut stuck = Subscription::http(&url, &tools, as_bearer("old"))
        .await
        .unwrap();
    let refresh = Credentials::new(|_: &End| async {
        Some(vec![("authorization".into(), "Bearer new".into())])
    });
    let options = as_bearer("old").with_credentials(refresh);
    let mut refreshed = Subscription::http(&url, &tools, options).await.unwrap();

    // The server comes back knowing only the new token.
    server.child.kill().await.unwrap();
    let restarted = HttpServer::start_on(&addr, &["--bearer-token", "alice:new"]).await;
    let end = loop {
        match next(&mut stuck).await {
            Item::Relistening(_) => {}
            Item::End(end) => break end,
            other => panic!("{other:?}"),
        }
    };
    let End::Refused(SubscribeError::Refused(error)) = &end else {
        panic!("{end}")
    };
    assert_eq!(error.code.0, -32001, "the server's 401");
    assert_eq!(next_settled(&mut refreshed).await, Item::Resynced(tools));
    restarted
        .call_as("new", "test_trigger_tool_change", json!({}))
        .await;
    assert_eq!(
        kind(&next(&mut refreshed).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
}

fn tool_call(name: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "arguments": arguments})
}

#[tokio::test]
async fn stdio_streams_share_a_child_and_cancel_one_at_a_time() {
    let client = StdioClient::spawn(binary(), ["--stdio"]).unwrap();
    let mut tools = client
        .subscribe(
            &Filter::new().with_tools_list_changed(),
            SubscribeOptions::default(),
        )
        .await
        .unwrap();
    let mut both = client
        .subscribe(
            &Filter::new()
                .with_tools_list_changed()
                .with_prompts_list_changed(),
            SubscribeOptions::default(),
        )
        .await
        .unwrap();
    assert!(both.granted().prompts_list_changed());

    client
        .request(
            "tools/call",
            tool_call("test_trigger_tool_change", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(
        kind(&next(&mut tools).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    assert_eq!(
        kind(&next(&mut both).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );

    tools.cancel().await;
    client
        .request(
            "tools/call",
            tool_call("test_trigger_tool_change", json!({})),
        )
        .await
        .unwrap();
    client
        .request(
            "tools/call",
            tool_call("test_trigger_prompt_change", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(
        kind(&next(&mut both).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    assert_eq!(
        kind(&next(&mut both).await),
        Some(&EventKind::ListChanged(ListKind::Prompts))
    );

    let uris = (0..1_001).fold(Filter::new(), |f, i| {
        f.with_resource(format!("file:///{i}"))
    });
    let one_stream = SubscribeOptions::default().with_max_uris_per_stream(2_000);
    let err = client.subscribe(&uris, one_stream).await.unwrap_err();
    assert!(
        matches!(&err, SubscribeError::Refused(e) if e.code.0 == -32602),
        "{err}"
    );
}

#[tokio::test]
async fn stdio_relistens_after_the_server_process_dies() {
    let client = StdioClient::spawn(binary(), ["--stdio"]).unwrap();
    let requested = Filter::new().with_tools_list_changed();
    let options = SubscribeOptions::default().with_relisten(Relisten::new(
        Duration::from_millis(20),
        Duration::from_millis(200),
    ));
    let mut subscription = client.subscribe(&requested, options).await.unwrap();
    client
        .request(
            "tools/call",
            tool_call("test_trigger_tool_change", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    // The server's process dies; the client starts it again.
    let pid = client.process_id().expect("the client started it");
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(matches!(
        next(&mut subscription).await,
        Item::Relistening(_)
    ));
    assert_eq!(
        next_settled(&mut subscription).await,
        Item::Resynced(requested)
    );
    client
        .request(
            "tools/call",
            tool_call("test_trigger_tool_change", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    assert_ne!(client.process_id(), Some(pid), "a new process");
}

#[tokio::test]
async fn channel_delivers_everything_asked_and_cancels() {
    let server = HttpServer::start(&[]).await;
    let tools = server.client().await;
    let url = format!(
        "{}/mcp/notifications/main",
        server.base.replace("http://", "ws://")
    );
    let mut subscription = Subscription::channel(
        &url,
        &Filter::new().with_tools_list_changed(),
        SubscribeOptions::default(),
    )
    .await
    .unwrap();
    server.wait_for_active(1, WAIT).await;
    call(&tools, "test_trigger_prompt_change", json!({})).await;
    call(&tools, "test_trigger_tool_change", json!({})).await;
    call(
        &tools,
        "test_trigger_custom",
        json!({"method": "vendor/ping", "params": {"n": 1}}),
    )
    .await;
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    let Item::Event(custom) = next(&mut subscription).await else {
        panic!()
    };
    assert_eq!(
        custom.method(),
        "vendor/ping",
        "extension kinds pass through"
    );

    subscription.cancel().await;
    server.wait_for_active(0, WAIT).await;

    // A graceful shutdown closes the channel cleanly after its frames.
    let mut again = Subscription::channel(&url, &Filter::everything(), SubscribeOptions::default())
        .await
        .unwrap();
    server.wait_for_active(1, WAIT).await;
    call(&tools, "test_trigger_tool_change", json!({})).await;
    assert_eq!(
        kind(&next(&mut again).await),
        Some(&EventKind::ListChanged(ListKind::Tools))
    );
    server.interrupt();
    assert_eq!(next(&mut again).await, Item::End(End::Complete));
}

#[tokio::test]
async fn channel_not_served_when_the_hub_is_full() {
    let server = HttpServer::start(&["--max-subscriptions", "1"]).await;
    let url = format!(
        "{}/mcp/notifications/main",
        server.base.replace("http://", "ws://")
    );
    let _first = Subscription::channel(&url, &Filter::everything(), SubscribeOptions::default())
        .await
        .unwrap();
    server.wait_for_active(1, WAIT).await;
    let mut second =
        Subscription::channel(&url, &Filter::everything(), SubscribeOptions::default())
            .await
            .unwrap();
    assert_eq!(next(&mut second).await, Item::End(End::NotServed));
}

#[tokio::test]
async fn in_process_from_a_hub() {
    let hub = Hub::builder()
        .capacity(2)
        .overflow(Overflow::Disconnect)
        .build();
    let requested = Filter::new()
        .with_tools_list_changed()
        .with_resource("file:///a");
    let mut subscription =
        Subscription::source(hub.clone(), &requested, SubscribeOptions::default())
            .await
            .unwrap();
    assert_eq!(subscription.granted(), requested);
    assert_eq!(hub.stats().listeners_active, 1);
    hub.notify_prompts_list_changed();
    hub.notify_resource_updated("file:///a");
    assert_eq!(
        kind(&next(&mut subscription).await),
        Some(&updated("file:///a"))
    );

    subscription.cancel().await;
    assert_eq!(
        hub.stats().listeners_active,
        0,
        "cancel releases the listener"
    );

    // The source's own overflow is a server overflow end.
    let options = SubscribeOptions::default().with_capacity(1);
    let mut slow = Subscription::source(hub.clone(), &requested, options)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    for _ in 0..10 {
        hub.notify_resource_updated("file:///a");
    }
    let end = loop {
        if let Item::End(end) = next(&mut slow).await {
            break end;
        }
    };
    assert!(end.is_server_overflow(), "{end}");

    // A completed hub is a graceful end, and refuses new subscriptions.
    let mut done = Subscription::source(hub.clone(), &requested, SubscribeOptions::default())
        .await
        .unwrap();
    hub.complete();
    assert_eq!(next(&mut done).await, Item::End(End::Complete));
    let err = Subscription::source(hub, &requested, SubscribeOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, SubscribeError::Refused(_)), "{err}");
}

#[tokio::test]
async fn blocking_reader_over_crossbeam() {
    let hub = Hub::new();
    let subscription = Subscription::source(
        hub.clone(),
        &Filter::new().with_tools_list_changed(),
        SubscribeOptions::default(),
    )
    .await
    .unwrap();
    let receiver = subscription.into_receiver();
    let (mine, theirs) = crossbeam_channel::bounded::<()>(1);
    hub.notify_tools_list_changed();
    let got = tokio::task::spawn_blocking(move || {
        let _keep = mine;
        crossbeam_channel::select! {
            recv(receiver) -> item => item.unwrap(),
            recv(theirs) -> _ => panic!("our own channel stays quiet"),
        }
    })
    .await
    .unwrap();
    assert_eq!(kind(&got), Some(&EventKind::ListChanged(ListKind::Tools)));
    // The receiver was dropped with the thread: the listener is released.
    let deadline = std::time::Instant::now() + WAIT;
    while hub.stats().listeners_active != 0 {
        assert!(std::time::Instant::now() < deadline);
        hub.notify_tools_list_changed();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_watch_example_prints_each_notification_and_cancels_on_ctrl_c() {
    let server = HttpServer::start(&[]).await;
    let tools = server.client().await;
    let watch = binary().with_file_name("watch");
    let mut child = tokio::process::Command::new(watch)
        .args([&server.mcp_url(), "--tools", "--resource", "file:///a"])
        .stdout(Stdio::piped())
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
    assert_eq!(
        line().await,
        format!(
            "listening to {}: waiting for the acknowledgement",
            server.mcp_url()
        )
    );
    assert_eq!(
        line().await,
        r#"acknowledged: {"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}"#
    );
    call(&tools, "test_trigger_tool_change", json!({})).await;
    assert_eq!(
        line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
    );
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(line().await, "cancelled");
    assert!(child.wait().await.unwrap().success());
    server.wait_for_active(0, WAIT).await;
}

/// An HTTP server that answers every request with the head of an event
/// stream, then nothing: a listen it never acknowledges.
async fn never_acknowledging() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut request = [0; 4096];
                let _ = socket.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                let _ = socket.write_all(head.as_bytes()).await;
                // Held open, silent, until the client gives up on it.
                let _ = socket.read(&mut request).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn each_failed_first_attempt_is_told_to_the_retry_hook_with_its_reason() {
    let url = never_acknowledging().await;
    let told = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let options = SubscribeOptions::default()
        .with_ack_timeout(Duration::from_millis(200))
        .with_relisten(Relisten::new(
            Duration::from_millis(10),
            Duration::from_millis(20),
        ))
        .with_on_retry({
            let told = told.clone();
            move |retry| told.lock().push(retry.clone())
        });
    let opening = tokio::spawn(async move {
        Subscription::http(url, &Filter::new().with_tools_list_changed(), options).await
    });
    let deadline = std::time::Instant::now() + WAIT;
    while told.lock().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no retry told");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    opening.abort();
    let told = told.lock();
    assert_eq!(told[0].attempt, 1);
    assert_eq!(told[1].attempt, 2);
    assert!(
        told[0].reason.contains("no acknowledgement"),
        "{}",
        told[0].reason
    );
}

#[tokio::test]
async fn the_watch_example_says_what_is_failing_within_one_listen_timeout() {
    let url = never_acknowledging().await;
    let watch = binary().with_file_name("watch");
    let mut child = tokio::process::Command::new(watch)
        .args([&url, "--tools", "--ack-timeout-secs", "1"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = std::time::Instant::now();
    let first = lines.next_line().await.unwrap().unwrap();
    assert_eq!(
        first,
        format!("listening to {url}: waiting for the acknowledgement")
    );
    let failed = tokio::time::timeout(Duration::from_secs(3), lines.next_line())
        .await
        .expect("a line within the listen timeout and a little")
        .unwrap()
        .unwrap();
    assert!(
        failed.starts_with("not listening yet: attempt 1 failed (")
            && failed.contains("no acknowledgement within 1s"),
        "{failed}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn http_connects_from_the_local_address_the_options_name() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let from: std::net::IpAddr = "127.0.0.7".parse().unwrap();
    let options = SubscribeOptions::default()
        .with_local_address(from)
        .with_ack_timeout(Duration::from_millis(500));
    let opening = tokio::spawn(async move {
        Subscription::http(url, &Filter::new().with_tools_list_changed(), options).await
    });
    // A server that accepts and never answers: the peer is all it needs.
    let (_held, peer) = listener.accept().await.unwrap();
    assert_eq!(peer.ip(), from);
    assert!(opening.await.unwrap().is_err(), "nothing acknowledged it");
}
