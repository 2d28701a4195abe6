//! The example server's HTTP edge under hostile and long-lived
//! connections: requests that never come whole and idle keep-alive
//! connections are closed at their deadlines, silent sockets are shed
//! before they keep a listen out, and a stream's lifetime ends it for its
//! client to listen again: this crate's `watch`, and applications on the
//! TypeScript and Python SDKs.

#![cfg(feature = "client")]

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::example::{
    HttpServer, binary, call, http_request, listen_request, request_meta, send_raw,
};
use crate::support::interop::ListeningApp;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The deadlines the example server is started with here.
const REQUEST_DEADLINE: Duration = Duration::from_secs(3);
const IDLE_TIMEOUT: Duration = Duration::from_secs(2);

/// How late after its deadline a connection may be closed.
const SLACK: Duration = Duration::from_millis(1_500);

/// A listen stream on a raw socket, read up to its acknowledgement.
async fn listen(addr: &str, within: Duration) -> Option<TcpStream> {
    let body = listen_request(json!("edge"), json!({"toolsListChanged": true})).to_string();
    let mut socket = send_raw(addr, &http_request("POST", "/mcp", addr, "", &body)).await;
    let acknowledged = read_until(&mut socket, "subscriptions/acknowledged", within).await;
    acknowledged.then_some(socket)
}

/// Reads `socket` until what it sent contains `text`; false if it closes
/// or `within` passes first.
async fn read_until(socket: &mut TcpStream, text: &str, within: Duration) -> bool {
    let mut seen = Vec::new();
    let mut chunk = [0; 4096];
    tokio::time::timeout(within, async {
        loop {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => seen.extend_from_slice(&chunk[..n]),
            }
            if String::from_utf8_lossy(&seen).contains(text) {
                return true;
            }
        }
    })
    .await
    .unwrap_or(false)
}

/// Triggers a tools-list change on `server`; whether `stream` gets it
/// within 5 s.
async fn gets_the_next_change(server: &HttpServer, stream: &mut TcpStream) -> bool {
    let tools = server.client().await;
    call(&tools, "test_trigger_tool_change", json!({})).await;
    read_until(
        stream,
        "notifications/tools/list_changed",
        Duration::from_secs(5),
    )
    .await
}

/// When the server closed `socket`, counted from `since`; what it sends
/// meanwhile is read and dropped, and a trickling client sends a byte of
/// `trickle` each half second.
async fn closed_after(mut socket: TcpStream, since: Instant, trickle: Vec<u8>) -> Duration {
    let mut trickle = trickle.into_iter();
    let mut chunk = [0; 1024];
    let limit = REQUEST_DEADLINE + IDLE_TIMEOUT + Duration::from_secs(10);
    loop {
        let read = tokio::time::timeout(Duration::from_millis(500), socket.read(&mut chunk));
        match read.await {
            Ok(Ok(0) | Err(_)) => return since.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => {
                // Still open: a trickling client sends its next byte.
                if let Some(byte) = trickle.next()
                    && socket.write_all(&[byte]).await.is_err()
                {
                    return since.elapsed();
                }
            }
        }
        assert!(since.elapsed() < limit, "still open after {limit:?}");
    }
}

fn assert_closed_at(what: &str, closed: Duration, deadline: Duration) {
    assert!(
        closed >= deadline - Duration::from_millis(100) && closed <= deadline + SLACK,
        "{what}: closed after {closed:?}, the deadline was {deadline:?}"
    );
}

#[tokio::test]
async fn unfinished_requests_and_idle_connections_are_closed_at_their_deadlines_and_a_stream_is_not()
 {
    let server = HttpServer::start(&[
        "--request-deadline-secs",
        &REQUEST_DEADLINE.as_secs().to_string(),
        "--idle-timeout-secs",
        &IDLE_TIMEOUT.as_secs().to_string(),
    ])
    .await;
    let addr = server.addr();
    let mut stream = listen(&addr, Duration::from_secs(5))
        .await
        .expect("the first listen is acknowledged");

    let listen_body = listen_request(json!(1), json!({"toolsListChanged": true})).to_string();
    let whole_listen = http_request("POST", "/mcp", &addr, "", &listen_body);
    let (listen_head, _) = whole_listen.split_once("\r\n\r\n").unwrap();
    let chunked = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{{\"jso"
    );
    // Each kind, and what it sends at once (the trickle comes after).
    let kinds: Vec<(&str, String, Vec<u8>)> = vec![
        ("silent", String::new(), Vec::new()),
        ("half a head", whole_listen[..20].to_owned(), Vec::new()),
        (
            "a head a byte at a time",
            String::new(),
            whole_listen.clone().into_bytes(),
        ),
        // Whole head, the body short of its length: read on the socket path.
        (
            "a listen's body cut short",
            format!("{listen_head}\r\n\r\n{}", &listen_body[..10]),
            Vec::new(),
        ),
        // A chunked body never ended: hyper's path.
        ("a chunked body never ended", chunked, Vec::new()),
    ];
    let mut closing = Vec::new();
    for (what, sent, trickle) in kinds {
        for _ in 0..3 {
            let mut socket = TcpStream::connect(&addr).await.unwrap();
            socket.write_all(sent.as_bytes()).await.unwrap();
            let since = Instant::now();
            let trickle = trickle.clone();
            closing.push(tokio::spawn(async move {
                (what, closed_after(socket, since, trickle).await)
            }));
        }
    }
    // A keep-alive connection idle after a whole request and its answer.
    let idle = tokio::spawn({
        let addr = addr.clone();
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list",
                "params": {"_meta": request_meta()}})
            .to_string();
            let request = http_request("POST", "/mcp", &addr, "Mcp-Method: tools/list\r\n", &body);
            let mut socket = send_raw(&addr, &request).await;
            assert!(read_until(&mut socket, "test_add_tool", Duration::from_secs(5)).await);
            closed_after(socket, Instant::now(), Vec::new()).await
        }
    });
    for closed in closing {
        let (what, after) = closed.await.unwrap();
        assert_closed_at(what, after, REQUEST_DEADLINE);
    }
    assert_closed_at("idle keep-alive", idle.await.unwrap(), IDLE_TIMEOUT);

    // The stream opened first outlived both deadlines, and still gets
    // what changes.
    assert!(
        gets_the_next_change(&server, &mut stream).await,
        "the stream opened first got the change"
    );

    let connections = &server.stats().await["connections"];
    assert!(
        connections["request_timeouts"].as_u64().unwrap() >= 15,
        "{connections}"
    );
    assert!(
        connections["idle_timeouts"].as_u64().unwrap() >= 1,
        "{connections}"
    );
    assert_eq!(connections["shed"], 0, "{connections}");
    let metrics = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("mcp_subscriptions_http_connections_request_timeouts_total"),
        "{metrics}"
    );
}

#[tokio::test]
async fn with_1100_silent_sockets_under_a_limit_of_1024_files_a_new_listen_is_served() {
    let server = HttpServer::start_with_open_files(1024, &[]).await;
    let addr = server.addr();
    let mut silent = Vec::new();
    for _ in 0..1_100 {
        silent.push(TcpStream::connect(&addr).await.unwrap());
    }
    // Let the server accept them all.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = Instant::now();
    let Some(mut stream) = listen(&addr, Duration::from_secs(3)).await else {
        panic!(
            "a listen acknowledged within 3 s among 1,100 silent sockets: {}",
            server.stats().await["connections"]
        );
    };
    let acknowledged = asked.elapsed();
    assert!(
        gets_the_next_change(&server, &mut stream).await,
        "the new listen got the next change (acknowledged after {acknowledged:?})"
    );
    // The oldest were shed, the newest were not.
    let mut byte = [0; 1];
    let oldest = tokio::time::timeout(Duration::from_secs(1), silent[0].read(&mut byte)).await;
    assert!(
        matches!(oldest, Ok(Ok(0) | Err(_))),
        "the oldest socket was shed: {oldest:?} {}",
        server.stats().await["connections"]
    );
    let newest = silent.last_mut().unwrap();
    let newest = tokio::time::timeout(Duration::from_millis(200), newest.read(&mut byte)).await;
    assert!(newest.is_err(), "the newest socket is still open");
    let connections = &server.stats().await["connections"];
    assert!(
        connections["shed"].as_u64().unwrap() >= 500,
        "{connections}"
    );
}

#[tokio::test]
async fn a_stream_ends_at_its_lifetime_and_watch_listens_again() {
    let server = HttpServer::start(&["--max-stream-lifetime-secs", "5"]).await;
    let watch = binary().with_file_name("watch");
    let mut child = tokio::process::Command::new(watch)
        .args([&server.mcp_url(), "--tools"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_line = async || {
        tokio::time::timeout(Duration::from_secs(15), lines.next_line())
            .await
            .expect("a line")
            .unwrap()
            .expect("watch still runs")
    };
    assert!(next_line().await.starts_with("listening to "));
    assert!(next_line().await.starts_with("acknowledged: "));
    let acknowledged = Instant::now();
    let relistening = next_line().await;
    let lived = acknowledged.elapsed();
    assert!(
        relistening.starts_with("relistening: attempt 1 in 0ns") && relistening.contains("-32004"),
        "{relistening}"
    );
    assert!(
        lived >= Duration::from_secs(4) && lived <= Duration::from_secs(9),
        "the stream lived {lived:?}"
    );
    assert!(next_line().await.starts_with("resynced: refetch "));
    // The stream listened to again is served.
    let tools = server.client().await;
    call(&tools, "test_trigger_tool_change", json!({})).await;
    assert!(
        next_line()
            .await
            .contains("notifications/tools/list_changed")
    );
    let closed = &server.stats().await["listeners_closed"];
    assert_eq!(closed["lifetime"], 1, "{closed}");
}

/// The lifetime's end is an error, so that another SDK's client reads it
/// as a lost stream (TypeScript: `closed` is `remote`; Python:
/// `SubscriptionLost`, from `-32004`), which their docs answer with a new
/// listen; `complete` would read as the server being done.
#[tokio::test]
async fn the_typescript_and_python_clients_read_a_lifetimes_end_as_lost_and_listen_again() {
    let server = HttpServer::start(&["--max-stream-lifetime-secs", "2"]).await;
    for (app, lost) in [
        (ListeningApp::TypeScript, "closed 1 remote"),
        (ListeningApp::Python, "lost 1 -32004"),
    ] {
        let (program, args) = app.command(&server.mcp_url());
        let run = tokio::process::Command::new(&program)
            .args(&args)
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .unwrap_or_else(|_| panic!("{app:?} ends within 60 s"))
            .unwrap_or_else(|err| panic!("{app:?} runs ({program:?}): {err}"));
        let printed = String::from_utf8_lossy(&output.stdout);
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(
            lines,
            ["acknowledged 1", lost, "acknowledged 2"],
            "{app:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let closed = &server.stats().await["listeners_closed"];
    assert!(closed["lifetime"].as_u64().unwrap() >= 2, "{closed}");
}

/// The admission options: a principal's listens past its rate are
/// answered 429, and `/stats` counts them by limit.
#[tokio::test]
async fn the_listen_rate_per_principal_refuses_the_excess_with_429() {
    let server = HttpServer::start(&[
        "--bearer-token",
        "alice:alice-token",
        "--bearer-token",
        "bob:bob-token",
        "--listen-rate-per-principal",
        "0.001:2",
    ])
    .await;
    let listen =
        |id: u64| crate::support::http::listen(json!(id), json!({"toolsListChanged": true}), &[]);
    let as_alice = [("authorization", "Bearer alice-token")];
    let mut held = Vec::new();
    for id in 1..=2 {
        let mut stream = crate::support::http::post(&server.base, &listen(id), &as_alice).await;
        assert!(stream.next().await.is_some(), "acknowledged");
        held.push(stream);
    }
    let refused = crate::support::http::post(&server.base, &listen(3), &as_alice).await;
    assert_eq!(refused.status, 429);
    assert!(refused.header("retry-after").is_some());
    let body = refused.json().await;
    assert_eq!(body["error"]["data"]["limit"], "listens_per_principal");
    let as_bob = [("authorization", "Bearer bob-token")];
    let mut bob = crate::support::http::post(&server.base, &listen(4), &as_bob).await;
    assert!(bob.next().await.is_some(), "another principal is served");
    let stats = server.stats().await;
    assert_eq!(
        stats["connections"]["rate_limited"]["listens_per_principal"],
        1
    );
}
