//! The serving rules of `ListenStream` (its numbered docs), each proved with a
//! hand-written source that misbehaves: it returns events nobody asked for,
//! fails, panics, closes underneath, or blocks forever.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::error::StreamError;
use mcp_subscriptions::{
    CloseReason, Event, Filter, ListenService, Next, OpenContext, Opened, Source, SourceHandle,
};
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use serde_json::{Value, json};

/// Plays a script of items, then blocks for ever; counts pulls and records
/// how it was closed.
#[derive(Clone, Default)]
struct Scripted {
    script: Vec<Step>,
    pulls: Arc<AtomicUsize>,
    closed: Arc<Mutex<Vec<CloseReason>>>,
}

/// One scripted item.
#[derive(Clone)]
enum Step {
    Item(Next),
    Panic,
    /// Yields events for ever.
    Endless,
}

impl Scripted {
    fn new(script: Vec<Step>) -> Self {
        Self {
            script,
            ..Self::default()
        }
    }

    fn pulls(&self) -> usize {
        self.pulls.load(Ordering::SeqCst)
    }

    fn closed(&self) -> Vec<CloseReason> {
        self.closed.lock().unwrap().clone()
    }
}

/// One stream of a [`Scripted`] source: what is left of the script, and
/// the source's counters.
struct Script {
    steps: VecDeque<Step>,
    pulls: Arc<AtomicUsize>,
    closed: Arc<Mutex<Vec<CloseReason>>>,
}

impl Source for Scripted {
    type Handle = Script;

    fn open(&self, requested: &Filter, _: &OpenContext) -> Result<Opened<Script>, OpenError> {
        // Grants tools and the resource file:///a, whatever else was asked.
        let mut granted = Filter::new();
        if requested.tools_list_changed() {
            granted = granted.with_tools_list_changed();
        }
        if requested.resource_subscriptions().any(|u| u == "file:///a") {
            granted = granted.with_resource("file:///a");
        }
        let script = Script {
            steps: self.script.iter().cloned().collect(),
            pulls: self.pulls.clone(),
            closed: self.closed.clone(),
        };
        Ok(Opened::new(granted, script))
    }
}

impl SourceHandle for Script {
    async fn next(&mut self) -> Next {
        self.pulls.fetch_add(1, Ordering::SeqCst);
        match self.steps.front() {
            Some(Step::Endless) => {
                tokio::task::yield_now().await;
                return Next::Event(Event::tools_list_changed());
            }
            Some(Step::Panic) => panic!("the source panics"),
            None => std::future::pending().await,
            Some(Step::Item(_)) => {}
        }
        match self.steps.pop_front() {
            Some(Step::Item(next)) => next,
            _ => unreachable!(),
        }
    }

    fn close(&mut self, reason: CloseReason) {
        self.steps.clear();
        self.closed.lock().unwrap().push(reason);
    }
}

fn item(next: Next) -> Step {
    Step::Item(next)
}

fn params() -> Value {
    json!({"notifications": {
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourceSubscriptions": ["file:///a", "file:///b"],
    }})
}

async fn message(stream: &mut mcp_subscriptions::ListenStream<Script>) -> Value {
    let bytes = tokio::time::timeout(Duration::from_secs(5), stream.next_message())
        .await
        .expect("a message comes")
        .expect("the stream has not ended");
    serde_json::from_slice(&bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn rule_1_the_acknowledgement_comes_before_any_pull() {
    let source = Scripted::new(vec![item(Next::Event(Event::tools_list_changed()))]);
    let service = ListenService::new(source.clone());
    let mut stream = service.open(RequestId::Number(1), Some(&params())).unwrap();
    assert_eq!(source.pulls(), 0, "opening pulls nothing");
    let ack = message(&mut stream).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]}),
        "the granted subset, not the request"
    );
    assert_eq!(
        source.pulls(),
        0,
        "the acknowledgement is produced before any pull"
    );
}

#[tokio::test]
async fn rule_1_an_empty_grant_is_still_acknowledged() {
    let service = ListenService::new(Scripted::default());
    let params = json!({"notifications": {"promptsListChanged": true}});
    let mut stream = service.open(RequestId::Number(1), Some(&params)).unwrap();
    assert_eq!(
        message(&mut stream).await["params"]["notifications"],
        json!({})
    );
}

#[tokio::test]
async fn rule_8_a_stream_granted_nothing_is_completed_after_its_acknowledgement() {
    let source = Scripted::default();
    let service = ListenService::new(source.clone());
    // A typo, as a new user would make it: kept, never served.
    let params = json!({"notifications": {"toolListChanged": true}});
    let mut stream = service.open(RequestId::Number(1), Some(&params)).unwrap();
    let ack = message(&mut stream).await;
    assert_eq!(ack["params"]["notifications"], json!({}));
    let complete = message(&mut stream).await;
    assert_eq!(complete["id"], 1);
    assert_eq!(complete["result"]["resultType"], "complete");
    assert!(stream.next_message().await.is_none());
    assert!(stream.is_finished());
    assert_eq!(source.pulls(), 0, "nothing is pulled");
    assert_eq!(source.closed(), [CloseReason::Complete]);
}

#[tokio::test]
async fn rule_2_the_next_event_is_pulled_only_when_the_next_message_is_asked_for() {
    let source = Scripted::new(vec![Step::Endless]);
    let service = ListenService::new(source.clone());
    let mut stream = service.open(RequestId::Number(1), Some(&params())).unwrap();
    message(&mut stream).await;
    message(&mut stream).await;
    assert_eq!(source.pulls(), 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(source.pulls(), 1, "nothing is pulled ahead of the writer");
    message(&mut stream).await;
    assert_eq!(source.pulls(), 2);
}

#[cfg(feature = "stdio")]
#[tokio::test]
async fn rule_2_over_stdio_the_pipe_paces_the_source() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let source = Scripted::new(vec![Step::Endless]);
    let (client_out, server_in) = tokio::io::duplex(1024);
    // A pipe much smaller than one message: the server blocks writing.
    let (server_out, client_in) = tokio::io::duplex(64);
    let mut transport = mcp_subscriptions::stdio::StdioTransport::new(
        ListenService::new(source.clone()),
        server_in,
        server_out,
    );
    tokio::spawn(async move {
        use rmcp::transport::Transport;
        while Transport::<rmcp::RoleServer>::receive(&mut transport)
            .await
            .is_some()
        {}
    });
    let mut client_out = client_out;
    let listen =
        json!({"jsonrpc": "2.0", "id": "s", "method": "subscriptions/listen", "params": params()});
    client_out
        .write_all(format!("{listen}\n").as_bytes())
        .await
        .unwrap();

    // The first byte proves the listen was taken; the rest of the
    // acknowledgement does not fit the pipe.
    let mut client_in = BufReader::new(client_in);
    let mut first = [0u8];
    tokio::io::AsyncReadExt::read_exact(&mut client_in, &mut first)
        .await
        .unwrap();
    assert_eq!(&first, b"{");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        source.pulls(),
        0,
        "the acknowledgement is still being written"
    );

    let mut lines = client_in.lines();
    let ack = lines.next_line().await.unwrap().unwrap();
    assert!(ack.contains("subscriptions/acknowledged"), "{ack}");
    for _ in 0..3 {
        let line = lines.next_line().await.unwrap().unwrap();
        assert!(
            line.contains(r#""io.modelcontextprotocol/subscriptionId":"s""#),
            "{line}"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pulls = source.pulls();
    assert!(
        (3..=5).contains(&pulls),
        "pulls follow the reader ({pulls}), a message or so ahead at most"
    );
}

#[tokio::test]
async fn rule_3_the_source_is_closed_whatever_ends_the_stream() {
    let open = |source: &Scripted| {
        ListenService::new(source.clone())
            .open(RequestId::Number(1), Some(&params()))
            .unwrap()
    };

    // Completion, failure, a source closed underneath, and a panic.
    for (script, reason) in [
        (item(Next::Complete), CloseReason::Complete),
        (
            item(Next::Failed(StreamError::Overflow { dropped: 2 })),
            CloseReason::Error,
        ),
        (item(Next::Closed), CloseReason::Error),
        (Step::Panic, CloseReason::Error),
    ] {
        let source = Scripted::new(vec![script]);
        let mut stream = open(&source);
        message(&mut stream).await;
        message(&mut stream).await;
        assert_eq!(stream.next_message().await, None, "nothing follows the end");
        assert_eq!(source.closed(), [reason]);
        drop(stream);
        assert_eq!(source.closed(), [reason], "closed exactly once");
    }

    // Cancelled by the client.
    let source = Scripted::default();
    let mut stream = open(&source);
    message(&mut stream).await;
    stream.cancel(CloseReason::Cancelled);
    assert_eq!(stream.next_message().await, None);
    assert_eq!(source.closed(), [CloseReason::Cancelled]);

    // Dropped: by default as disconnected, or as the transport says.
    let source = Scripted::default();
    drop(open(&source));
    let mut stream = open(&source);
    stream.set_drop_reason(CloseReason::Cancelled);
    drop(stream);
    assert_eq!(
        source.closed(),
        [CloseReason::Disconnected, CloseReason::Cancelled]
    );

    // The serving task aborted while the source blocks for ever.
    let source = Scripted::default();
    let mut stream = open(&source);
    let task = tokio::spawn(async move { while stream.next_message().await.is_some() {} });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(source.pulls(), 1, "blocked in the source");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(source.closed(), [CloseReason::Disconnected]);
}

#[tokio::test]
async fn rule_4_every_message_carries_the_request_id_verbatim() {
    let script = vec![
        item(Next::Event(Event::tools_list_changed())),
        item(Next::Event(Event::resource_updated("file:///a"))),
        item(Next::Complete),
    ];
    for id in [RequestId::Number(42), RequestId::String("42".into())] {
        let expected = serde_json::to_value(&id).unwrap();
        let service = ListenService::new(Scripted::new(script.clone()));
        let mut stream = service.open(id, Some(&params())).unwrap();
        let mut messages = Vec::new();
        while let Some(bytes) = stream.next_message().await {
            messages.push(serde_json::from_slice::<Value>(&bytes.to_vec()).unwrap());
        }
        assert_eq!(messages.len(), 4);
        for notification in &messages[..3] {
            assert_eq!(
                notification["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                expected
            );
        }
        let end = &messages[3];
        assert_eq!(end["id"], expected);
        assert_eq!(
            end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            expected
        );
    }
}

#[tokio::test]
async fn rule_5_events_the_client_was_not_granted_are_dropped() {
    let source = Scripted::new(vec![
        item(Next::Event(Event::prompts_list_changed())), // asked for, not granted
        item(Next::Event(Event::resources_list_changed())), // never asked for
        item(Next::Event(Event::resource_updated("file:///b"))), // not granted
        item(Next::Event(Event::tools_list_changed())),
        item(Next::Event(Event::extension(
            "notifications/progress",
            Default::default(),
            None,
        ))),
        item(Next::Lagged(3)),
        item(Next::Event(Event::resource_updated("file:///a"))),
        item(Next::Complete),
    ]);
    let service = ListenService::new(source);
    let mut stream = service.open(RequestId::Number(1), Some(&params())).unwrap();
    let mut methods = Vec::new();
    while let Some(bytes) = stream.next_message().await {
        let message: Value = serde_json::from_slice(&bytes.to_vec()).unwrap();
        methods.push(
            message["method"]
                .as_str()
                .unwrap_or("(response)")
                .to_owned(),
        );
    }
    assert_eq!(
        methods,
        [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed",
            "notifications/resources/updated",
            "(response)"
        ]
    );
}

#[tokio::test]
async fn rule_6_completion_sends_the_complete_result() {
    let service = ListenService::new(Scripted::new(vec![item(Next::Complete)]));
    let mut stream = service
        .open(RequestId::String("l".into()), Some(&params()))
        .unwrap();
    message(&mut stream).await;
    let end = message(&mut stream).await;
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-subscriptions"
    );
    assert!(stream.is_finished());
}

#[tokio::test]
async fn rule_7_failures_end_with_an_error_response_a_client_can_tell_apart() {
    let custom = ErrorData::new(
        ErrorCode(-32050),
        "upstream gone",
        Some(json!({"retry": true})),
    );
    let cases = [
        (
            item(Next::Failed(StreamError::Overflow { dropped: 7 })),
            json!({"code": -32000, "message": "Subscription overflow", "data": {"reason": "overflow", "dropped": 7}}),
        ),
        (
            item(Next::Failed(StreamError::Source(Box::new(custom)))),
            json!({"code": -32050, "message": "upstream gone", "data": {"retry": true}}),
        ),
        (
            Step::Panic,
            json!({"code": -32603, "message": "Subscription source panicked"}),
        ),
        (
            item(Next::Closed),
            json!({"code": -32603, "message": "Subscription closed by the server"}),
        ),
    ];
    for (script, error) in cases {
        let service = ListenService::new(Scripted::new(vec![script]));
        let mut stream = service.open(RequestId::Number(9), Some(&params())).unwrap();
        message(&mut stream).await;
        let end = message(&mut stream).await;
        assert_eq!(end, json!({"jsonrpc": "2.0", "id": 9, "error": error}));
    }
}

#[tokio::test]
async fn refusals_come_before_anything_else() {
    struct Full;
    impl Source for Full {
        type Handle = Script;
        fn open(&self, _: &Filter, _: &OpenContext) -> Result<Opened<Script>, OpenError> {
            Err(OpenError::LimitReached { limit: 0 })
        }
    }
    let refusal = ListenService::new(Full)
        .open(RequestId::Number(3), Some(&params()))
        .unwrap_err();
    assert_eq!(
        serde_json::from_slice::<Value>(&refusal.to_message()).unwrap(),
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "Subscription limit reached", "data": {"limit": 0}}})
    );
    let source = Scripted::default();
    let refusal = ListenService::new(source.clone())
        .open(RequestId::Number(4), Some(&json!({"notifications": []})))
        .unwrap_err();
    assert_eq!(refusal.error().code.0, -32602);
    assert_eq!(source.pulls(), 0);
}

#[cfg(feature = "stdio")]
#[tokio::test]
async fn over_stdio_a_cancel_ends_one_stream_and_the_end_of_input_the_rest() {
    use rmcp::transport::Transport;
    use tokio::io::AsyncWriteExt;

    let source = Scripted::default(); // blocks for ever
    let (client_out, server_in) = tokio::io::duplex(4096);
    let (server_out, _client_in) = tokio::io::duplex(1 << 16);
    let mut transport = mcp_subscriptions::stdio::StdioTransport::new(
        ListenService::new(source.clone()),
        server_in,
        server_out,
    );
    let streams = transport.streams();
    let receiving = tokio::spawn(async move {
        while Transport::<rmcp::RoleServer>::receive(&mut transport)
            .await
            .is_some()
        {}
    });
    let mut client_out = client_out;
    for id in ["a", "b"] {
        let listen = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params()});
        client_out
            .write_all(format!("{listen}\n").as_bytes())
            .await
            .unwrap();
    }
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}});
    client_out
        .write_all(format!("{cancel}\n").as_bytes())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while source.closed().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancel closes the source"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(source.closed(), [CloseReason::Cancelled]);
    assert_eq!(streams.len(), 1, "the other stream goes on");

    drop(client_out);
    receiving.await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), streams.finished())
        .await
        .expect("the end of input ends every stream");
    assert_eq!(
        source.closed(),
        [CloseReason::Cancelled, CloseReason::Disconnected]
    );
}

#[cfg(feature = "stdio")]
#[tokio::test]
async fn over_stdio_receiving_is_cancel_safe_and_bad_input_gets_an_answer() {
    use rmcp::transport::Transport;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let source = Scripted::default();
    let (mut client_out, server_in) = tokio::io::duplex(4096);
    let (server_out, client_in) = tokio::io::duplex(1 << 16);
    let mut transport = mcp_subscriptions::stdio::StdioTransport::new(
        ListenService::new(source.clone()),
        server_in,
        server_out,
    );
    let mut replies = BufReader::new(client_in).lines();

    // rmcp drops `receive` whenever it sends; a line cut in two by that
    // must still arrive whole.
    let ping = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (head, tail) = ping.split_at(10);
    client_out.write_all(head.as_bytes()).await.unwrap();
    let cut_short = tokio::time::timeout(
        Duration::from_millis(50),
        Transport::<rmcp::RoleServer>::receive(&mut transport),
    )
    .await;
    assert!(cut_short.is_err(), "half a line is not a message");
    client_out
        .write_all(format!("{tail}\n").as_bytes())
        .await
        .unwrap();
    let received = Transport::<rmcp::RoleServer>::receive(&mut transport).await;
    assert!(received.is_some(), "the rest of the line completes it");

    // The transport is read by a task of its own from here on.
    let receiving = tokio::spawn(async move {
        while Transport::<rmcp::RoleServer>::receive(&mut transport)
            .await
            .is_some()
        {}
    });
    let mut next_reply = async || {
        let line = tokio::time::timeout(Duration::from_secs(5), replies.next_line())
            .await
            .expect("a reply")
            .unwrap()
            .expect("a line");
        serde_json::from_str::<Value>(&line).unwrap()
    };

    // Two listens under one open id: the second is refused, the first goes on.
    let listen =
        json!({"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen", "params": params()});
    for _ in 0..2 {
        client_out
            .write_all(format!("{listen}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut first_two = [next_reply().await, next_reply().await];
    first_two.sort_by_key(|m| m.get("error").is_some());
    assert_eq!(
        first_two[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(first_two[1]["id"], 5);
    assert_eq!(first_two[1]["error"]["code"], -32600);

    // Not JSON, and JSON that is no JSON-RPC message.
    client_out.write_all(b"not json\n").await.unwrap();
    let reply = next_reply().await;
    assert_eq!(
        (&reply["id"], &reply["error"]["code"]),
        (&Value::Null, &json!(-32700))
    );
    client_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9}\n")
        .await
        .unwrap();
    let reply = next_reply().await;
    assert_eq!(
        (&reply["id"], &reply["error"]["code"]),
        (&json!(9), &json!(-32600))
    );
    // A line that is not UTF-8, and a message wrapped in a space JSON does
    // not allow (U+00A0): parse errors, not silence.
    for line in [
        &b"\xff\xfe\n"[..],
        "\u{a0}{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n".as_bytes(),
    ] {
        client_out.write_all(line).await.unwrap();
        let reply = next_reply().await;
        assert_eq!(reply["error"]["code"], -32700, "{line:?}");
    }

    drop(client_out);
    receiving.await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while source.closed().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(source.closed(), [CloseReason::Disconnected]);
}

/// Rule 4 for a filter parsed by the caller: the stream's id is the one
/// given, stamped verbatim (no default id stands in for it).
#[tokio::test]
async fn rule_4_open_filter_stamps_the_id_it_is_given() {
    let service = ListenService::new(mcp_subscriptions::Hub::new());
    let id = RequestId::String("parsed-elsewhere".into());
    let mut stream = service
        .open_filter(
            OpenContext::default(),
            id,
            &Filter::new().with_tools_list_changed(),
        )
        .unwrap();
    let ack = tokio::time::timeout(Duration::from_secs(5), stream.next_message())
        .await
        .unwrap()
        .unwrap();
    let ack: Value = serde_json::from_slice(&ack.to_vec()).unwrap();
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "parsed-elsewhere"
    );
}
