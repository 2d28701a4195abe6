//! `WithSubscriptions`: an older revision's session (2025-11-25) served
//! from the hub over stdio, spoken to line by line: its subscribe calls
//! and their errors, its bound under a client that stops reading, and the
//! resync after a lag, its revocation and expiry, and the demand hooks its
//! subscribe calls run; and over Streamable HTTP served statelessly, where
//! no session outlives its request.
#![cfg(all(feature = "stdio", feature = "http", feature = "tasks"))]

use std::time::Duration;

use mcp_subscriptions::hub::InterestKey;
use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::{
    Audience, Demand, Filter, Grant, Hub, ListenService, OpenContext, Overflow, WithSubscriptions,
    audience::Principal,
};
use rmcp::ServiceExt;
use rmcp::model::{Implementation, RequestId, ServerCapabilities, ServerConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use crate::support::http::{listen, post};
use mcp_subscriptions::queue::Settings;

struct Server(ServerCapabilities);

impl rmcp::ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(self.0.clone())
    }
}

fn resources_and_tools() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_resources()
        .build()
}

/// A client of 2025-11-25 on in-memory pipes; the server's output pipe is
/// `width` bytes wide, so a client that stops reading stalls its writes.
struct Session {
    out: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next_id: u64,
}

impl Session {
    /// Serves `base` wrapped over stdio and says `initialize` and
    /// `initialized`; returns the session and what `initialize` answered.
    async fn open(
        listen: &ListenService<Hub>,
        base: ServerCapabilities,
        width: usize,
    ) -> (Self, Value) {
        Self::start(listen, base, width, None).await
    }

    /// A session of `principal`'s, served resources and tools.
    async fn open_as(listen: &ListenService<Hub>, principal: &str) -> (Self, Value) {
        let principal = Some(Principal::new(principal));
        Self::start(listen, resources_and_tools(), 64 * 1024, principal).await
    }

    async fn start(
        listen: &ListenService<Hub>,
        base: ServerCapabilities,
        width: usize,
        principal: Option<Principal>,
    ) -> (Self, Value) {
        let (out, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, client_in) = tokio::io::duplex(width);
        let mut transport = StdioTransport::new(listen.clone(), server_in, server_out);
        if let Some(principal) = principal {
            transport = transport.with_principal(principal);
        }
        let server = WithSubscriptions::new(listen, Server(base));
        tokio::spawn(async move {
            if let Ok(running) = server.serve(transport).await {
                let _ = running.waiting().await;
            }
        });
        let mut session = Self {
            out,
            lines: BufReader::new(client_in).lines(),
            next_id: 0,
        };
        let initialized = session
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "older", "version": "1.0.0"},
                }),
            )
            .await;
        session
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (session, initialized)
    }

    async fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.out.write_all(line.as_bytes()).await.unwrap();
    }

    /// The server's next line, parsed.
    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("a line within 5 s")
            .unwrap()
            .expect("the pipe is open");
        serde_json::from_str(&line).unwrap()
    }

    /// Whether the server says nothing within `within`.
    async fn is_quiet(&mut self, within: Duration) -> bool {
        tokio::time::timeout(within, self.lines.next_line())
            .await
            .is_err()
    }

    /// Sends a request and returns its response (its `result` or `error`
    /// object), skipping notifications before it.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.read().await;
            if message["id"] == id {
                return message;
            }
        }
    }
}

fn listen_service(hub: &Hub) -> ListenService<Hub> {
    ListenService::new(hub.clone())
}

#[tokio::test]
async fn an_older_session_is_told_what_is_served_and_gets_what_it_subscribed() {
    let hub = Hub::new();
    let listen = listen_service(&hub);
    let (mut session, initialized) = Session::open(&listen, resources_and_tools(), 64 * 1024).await;
    assert_eq!(
        initialized["result"]["capabilities"],
        json!({"resources": {"subscribe": true, "listChanged": true}, "tools": {"listChanged": true}}),
        "no prompts, no extension"
    );
    let subscribed = session
        .request("resources/subscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(subscribed["result"], json!({}));
    hub.notify_prompts_list_changed(); // not advertised: never sent
    hub.notify_resource_updated("file:///b");
    hub.notify_resource_updated("file:///a");
    hub.notify_tools_list_changed();
    assert_eq!(
        session.read().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///a"}})
    );
    assert_eq!(
        session.read().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    );
    let unsubscribed = session
        .request("resources/unsubscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(unsubscribed["result"], json!({}));
    hub.notify_resource_updated("file:///a");
    hub.notify_tools_list_changed();
    assert_eq!(
        session.read().await["method"],
        "notifications/tools/list_changed",
        "the update after unsubscribing is not sent"
    );
    // One listener, whose counts are the hub's.
    let listeners = hub.listeners();
    assert_eq!(listeners.len(), 1);
    assert!(listeners[0].filter.tools_list_changed());
    assert!(!listeners[0].filter.prompts_list_changed());
    // The session ends with its pipe: its listener is freed.
    drop(session);
    tokio::time::timeout(Duration::from_secs(5), async {
        while hub.stats().listeners_active > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the listener is freed");
    assert!(hub.stats().events.is_balanced());
}

#[tokio::test]
async fn subscribing_where_resources_are_not_served_is_method_not_found() {
    let hub = Hub::new();
    let listen = listen_service(&hub);
    let tools_only = ServerCapabilities::builder().enable_tools().build();
    let (mut session, initialized) = Session::open(&listen, tools_only, 64 * 1024).await;
    assert_eq!(
        initialized["result"]["capabilities"],
        json!({"tools": {"listChanged": true}})
    );
    let refused = session
        .request("resources/subscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
}

#[tokio::test]
async fn a_subscribe_past_the_uri_limit_is_invalid_params_and_loses_nothing() {
    let hub = Hub::builder().max_uris(1).build();
    let listen = listen_service(&hub);
    let (mut session, _) = Session::open(&listen, resources_and_tools(), 64 * 1024).await;
    let first = session
        .request("resources/subscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(first["result"], json!({}));
    let second = session
        .request("resources/subscribe", json!({"uri": "file:///b"}))
        .await;
    assert_eq!(second["error"]["code"], -32602, "{second}");
    hub.notify_resource_updated("file:///a");
    assert_eq!(session.read().await["params"]["uri"], "file:///a");
}

#[tokio::test]
async fn the_authorizer_decides_what_a_session_may_subscribe() {
    let hub = Hub::new();
    let listen = listen_service(&hub).with_authorizer(|_: &OpenContext, requested: &Filter| {
        let mine = requested
            .resource_subscriptions()
            .filter(|uri| uri.starts_with("file:///mine/"))
            .fold(Filter::new(), Filter::with_resource);
        let lists = requested
            .lists_changed()
            .fold(mine, Filter::with_list_changed);
        Ok(lists)
    });
    let (mut session, _) = Session::open(&listen, resources_and_tools(), 64 * 1024).await;
    let refused = session
        .request("resources/subscribe", json!({"uri": "file:///theirs/x"}))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let granted = session
        .request("resources/subscribe", json!({"uri": "file:///mine/x"}))
        .await;
    assert_eq!(granted["result"], json!({}));
    hub.notify_resource_updated("file:///theirs/x");
    hub.notify_resource_updated("file:///mine/x");
    assert_eq!(session.read().await["params"]["uri"], "file:///mine/x");
}

#[tokio::test]
async fn a_session_that_stops_reading_is_bounded_by_its_policy_and_then_resynced() {
    let hub = Hub::builder()
        .capacity(4)
        .overflow(Overflow::DropOldest)
        .build();
    let listen = listen_service(&hub);
    // A pipe that holds about one notification: the rest wait in the queue.
    let (mut session, _) = Session::open(&listen, resources_and_tools(), 128).await;
    let subscribed = session
        .request("resources/subscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(subscribed["result"], json!({}));
    let mut beside = hub
        .listen_with(
            &Filter::new().with_resource("file:///a"),
            &OpenContext::default().with_queue(Settings::default().with_capacity(1_000)),
        )
        .unwrap();
    for _ in 0..200 {
        hub.notify_resource_updated("file:///a");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = hub.stats();
    let session_stats = hub
        .listeners()
        .into_iter()
        .find(|l| l.id != beside.id())
        .unwrap();
    assert!(session_stats.events.queued <= 4, "{session_stats:?}");
    assert!(session_stats.events.dropped > 150, "{session_stats:?}");
    assert!(stats.events.is_balanced());
    // The listener beside it, with room, lost nothing.
    assert_eq!(crate::support::drain(&mut beside).len(), 200);
    // Reading again: the resync (a change of every list it gets, an update
    // of the URI it subscribed: told of the lag before what it still held),
    // and what was left; never silence.
    let mut methods = Vec::new();
    while let Ok(line) =
        tokio::time::timeout(Duration::from_millis(500), session.lines.next_line()).await
    {
        let message: Value = serde_json::from_str(&line.unwrap().unwrap()).unwrap();
        methods.push(message["method"].as_str().unwrap().to_owned());
    }
    assert!(methods.len() < 20, "bounded: {methods:?}");
    for resync in [
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
    ] {
        assert_eq!(
            methods.iter().filter(|m| *m == resync).count(),
            1,
            "{methods:?}"
        );
    }
    assert!(methods.ends_with(&["notifications/resources/updated".to_owned()]));
}

#[tokio::test]
async fn over_stateless_http_an_older_client_is_promised_nothing() {
    let hub = Hub::new();
    let listen = listen_service(&hub);
    let config =
        rmcp::transport::StreamableHttpServerConfig::default().with_legacy_session_mode(false);
    let sessions = WithSubscriptions::factory(&listen, || Server(resources_and_tools()));
    let http = mcp_subscriptions::http::endpoint(listen, sessions, config);
    let app = axum::Router::new().route("/mcp", http.into_method_router());
    let url = crate::support::http::serve(app).await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "older", "version": "1.0.0"},
        }
    });
    let answer = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize.to_string())
        .send()
        .await
        .unwrap();
    let body = answer.text().await.unwrap();
    let json_text = body
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or(&body);
    let result: Value = serde_json::from_str(json_text).unwrap();
    assert_eq!(
        result["result"]["capabilities"],
        json!({"resources": {}, "tools": {}}),
        "{result}"
    );
    assert_eq!(hub.stats().listeners_opened, 0);
}

#[tokio::test]
async fn a_listen_stream_beside_is_granted_no_list_the_server_lacks() {
    let hub = Hub::new(); // serves every core kind
    let service = listen_service(&hub);
    let tools_only = ServerCapabilities::builder().enable_tools().build();
    let sessions = WithSubscriptions::factory(&service, move || Server(tools_only.clone()));
    let http = mcp_subscriptions::http::endpoint(service, sessions, Default::default());
    let app = axum::Router::new().route("/mcp", http.into_method_router());
    let url = crate::support::http::serve(app).await;
    let notifications = json!({"toolsListChanged": true, "promptsListChanged": true,
                               "resourceSubscriptions": ["file:///a"]});
    let mut answer = post(&url, &listen(json!("l"), notifications, &[]), &[]).await;
    let ack = answer.next().await.expect("the acknowledgement");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "no prompts, no resources: the server declares neither"
    );
}

#[tokio::test]
async fn a_listen_result_names_the_server_its_handler_names() {
    struct Notes;
    impl rmcp::ServerHandler for Notes {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(resources_and_tools())
                .with_server_info(Implementation::new("notes", "2.0.0"))
        }
    }
    let hub = Hub::new();
    let listen = ListenService::new(hub.clone());
    let _sessions = WithSubscriptions::factory(&listen, || Notes);
    // Named apart from the handler, the option wins.
    let renamed = listen
        .clone()
        .with_server_info(Implementation::new("renamed", "1.0.0"));
    let params = json!({"notifications": {"toolsListChanged": true}});
    let streams =
        [listen, renamed].map(|service| service.open(RequestId::Number(1), Some(&params)).unwrap());
    hub.complete();
    let mut named = Vec::new();
    for mut stream in streams {
        let mut last = Value::Null;
        while let Some(bytes) = stream.next_message().await {
            last = serde_json::from_slice(&bytes.to_vec()).unwrap();
        }
        named.push(last["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].clone());
    }
    assert_eq!(named, [json!("notes"), json!("renamed")]);
}

/// `-32003` with `data: {"reason": why}`, the end of a revoked or expired
/// listen stream.
fn assert_unauthorized(answer: &Value, why: &str) {
    assert_eq!(answer["error"]["code"], -32003, "{answer}");
    assert_eq!(answer["error"]["data"], json!({"reason": why}), "{answer}");
}

#[tokio::test]
async fn a_revoked_session_hears_nothing_more_its_subscribes_are_refused_and_its_slot_is_freed() {
    let hub = Hub::new();
    let listen = listen_service(&hub).with_max_streams_per_principal(1);
    let (mut alice, _) = Session::open_as(&listen, "alice").await;
    let subscribed = alice
        .request("resources/subscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(subscribed["result"], json!({}));

    assert_eq!(hub.revoke(&Audience::principal("alice")), 1);
    hub.notify_resource_updated("file:///a");
    hub.notify_tools_list_changed();
    let refused = alice
        .request("resources/subscribe", json!({"uri": "file:///b"}))
        .await;
    assert_unauthorized(&refused, "revoked");
    assert!(alice.is_quiet(Duration::from_millis(100)).await);
    let closed = hub.stats().listeners_closed;
    assert_eq!((closed.revoked, closed.error), (1, 0), "{closed:?}");

    // The slot came back: alice opens a session again, and hears.
    let (mut again, _) = Session::open_as(&listen, "alice").await;
    hub.notify_tools_list_changed();
    assert_eq!(
        again.read().await["method"],
        "notifications/tools/list_changed"
    );
}

#[tokio::test]
async fn a_session_past_its_expiry_hears_nothing_more_and_its_subscribes_are_refused() {
    let hub = Hub::new();
    let expires_at = std::time::Instant::now() + Duration::from_millis(200);
    let listen =
        listen_service(&hub).with_authorizer(move |_: &OpenContext, requested: &Filter| {
            Ok(Grant::new(requested.clone()).with_expiry(expires_at))
        });
    let (mut session, _) = Session::open_as(&listen, "alice").await;
    hub.notify_tools_list_changed();
    assert_eq!(
        session.read().await["method"],
        "notifications/tools/list_changed"
    );

    tokio::time::sleep_until((expires_at + Duration::from_millis(50)).into()).await;
    hub.notify_tools_list_changed();
    let refused = session
        .request("resources/subscribe", json!({"uri": "file:///a"}))
        .await;
    assert_unauthorized(&refused, "expired");
    assert!(session.is_quiet(Duration::from_millis(100)).await);
    assert_eq!(hub.stats().listeners_closed.expired, 1);
}

#[tokio::test]
async fn a_subscribe_waits_for_the_demand_attach_a_refusal_refuses_it_and_unsubscribing_detaches() {
    let hub = Hub::new();
    let (attached, mut attaches) = tokio::sync::mpsc::unbounded_channel();
    let (detached, mut detaches) = tokio::sync::mpsc::unbounded_channel();
    let demand = Demand::new(move |key: InterestKey| {
        attached.send(key.clone()).unwrap();
        async move {
            match key {
                InterestKey::Resource(uri) if uri == "file:///refused" => Err(
                    rmcp::model::ErrorData::invalid_params("not watched here", None),
                ),
                _ => Ok(()),
            }
        }
    })
    .on_detach(move |key| detached.send(key).unwrap())
    .with_grace(Duration::from_millis(50));
    let listen = listen_service(&hub).with_demand(demand);
    let (mut session, _) = Session::open(&listen, resources_and_tools(), 64 * 1024).await;
    let a = || InterestKey::Resource("file:///a".into());

    let subscribed = session
        .request("resources/subscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(subscribed["result"], json!({}));
    assert_eq!(
        attaches.try_recv().ok(),
        Some(a()),
        "attached before the answer"
    );
    let refused = session
        .request("resources/subscribe", json!({"uri": "file:///refused"}))
        .await;
    assert_eq!(refused["error"]["message"], "not watched here", "{refused}");
    hub.notify_resource_updated("file:///refused");
    hub.notify_resource_updated("file:///a");
    assert_eq!(session.read().await["params"]["uri"], "file:///a");

    let unsubscribed = session
        .request("resources/unsubscribe", json!({"uri": "file:///a"}))
        .await;
    assert_eq!(unsubscribed["result"], json!({}));
    let detach = tokio::time::timeout(Duration::from_secs(5), detaches.recv()).await;
    assert_eq!(detach.unwrap(), Some(a()), "only the key that attached");
    assert!(detaches.try_recv().is_err());
}
