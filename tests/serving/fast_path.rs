//! The socket path answers exactly as hyper does: each request is sent,
//! byte for byte, to a server that answers held streams on the socket and
//! to one that leaves everything to hyper, and the status, the headers
//! (`connection` and `date` aside) and the body, unframed, must be equal.

#![cfg(all(feature = "http", feature = "tasks"))]

use std::time::Duration;

use mcp_subscriptions::http::Server;
use mcp_subscriptions::{Event, Hub, ListenService, WithSubscriptions};
use rmcp::ServerHandler;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::StreamableHttpServerConfig;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone)]
struct Tools;

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// A server of the example's kind, with its hub.
async fn start(server: Server) -> (String, Hub) {
    let hub = Hub::new();
    let listen = ListenService::new(hub.clone());
    let sessions = WithSubscriptions::factory(&listen, || Tools);
    let http = mcp_subscriptions::http::endpoint(
        listen,
        sessions,
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let app = axum::Router::new().route("/mcp", http.into_method_router());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap().to_string();
    tokio::spawn(server.serve(tcp, app, std::future::pending()));
    (addr, hub)
}

/// One response, read off the socket: status, headers (names lowercased,
/// sorted) and the body with its framing taken off.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

/// One HTTP/1.1 response being read from `socket`, chunked or with a
/// length.
struct Reader {
    socket: TcpStream,
    buf: Vec<u8>,
}

impl Reader {
    async fn more(&mut self) {
        let mut chunk = [0; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), self.socket.read(&mut chunk))
            .await
            .expect("the response goes on within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "the connection closed mid-response: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
        self.buf.extend_from_slice(&chunk[..n]);
    }

    /// Reads until `text` has come (in the raw bytes: events are small
    /// enough to arrive in one chunk).
    async fn until(&mut self, text: &str) {
        while !String::from_utf8_lossy(&self.buf).contains(text) {
            self.more().await;
        }
    }

    async fn answer(mut self) -> Answer {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at + 4;
            }
            self.more().await;
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let mut headers: Vec<(String, String)> = lines
            .filter(|line| !line.is_empty())
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        let length = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .map(|(_, value)| value.parse::<usize>().unwrap());
        let body = match length {
            Some(length) => {
                while self.buf.len() < head_end + length {
                    self.more().await;
                }
                self.buf[head_end..head_end + length].to_vec()
            }
            None => self.unchunk(head_end).await,
        };
        headers.retain(|(name, _)| name != "connection" && name != "date");
        headers.sort();
        Answer {
            status,
            headers,
            body: String::from_utf8(body).unwrap(),
        }
    }

    async fn unchunk(&mut self, mut at: usize) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(end) = find(&self.buf[at..], b"\r\n") {
                    break at + end;
                }
                self.more().await;
            };
            let size_text = std::str::from_utf8(&self.buf[at..line_end]).unwrap();
            let size = usize::from_str_radix(size_text.trim(), 16).unwrap();
            let data = line_end + 2;
            while self.buf.len() < data + size + 2 {
                self.more().await;
            }
            if size == 0 {
                return body;
            }
            body.extend_from_slice(&self.buf[data..data + size]);
            at = data + size + 2;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

async fn send(addr: &str, request: &[u8]) -> Reader {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(request).await.unwrap();
    Reader {
        socket,
        buf: Vec::new(),
    }
}

/// Sends `request` to both servers; for a listen stream, once both are
/// acknowledged, publishes a change and completes both hubs, so that each
/// stream has the same event and its end. Returns the two answers, the
/// socket path's first.
async fn both(request: &str, streams: bool) -> (Answer, Answer) {
    let (socket_addr, socket_hub) = start(Server::new()).await;
    let (hyper_addr, hyper_hub) = start(Server::new().with_streams_on_the_socket(false)).await;
    let request = request.replace("{host}", "127.0.0.1");
    let mut on_socket = send(&socket_addr, request.as_bytes()).await;
    let mut on_hyper = send(&hyper_addr, request.as_bytes()).await;
    if streams {
        on_socket.until("subscriptions/acknowledged").await;
        on_hyper.until("subscriptions/acknowledged").await;
        for hub in [&socket_hub, &hyper_hub] {
            hub.publish(Event::tools_list_changed());
            hub.complete();
        }
    }
    // Hyper answers with `connection: close` only when asked to; the
    // socket path always does, so this says which path answered.
    let head = on_socket_head(&mut on_socket).await;
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "the socket path answered it: {head}"
    );
    (on_socket.answer().await, on_hyper.answer().await)
}

/// The raw head the socket path sent, read ahead.
async fn on_socket_head(reader: &mut Reader) -> String {
    while find(&reader.buf, b"\r\n\r\n").is_none() {
        reader.more().await;
    }
    let end = find(&reader.buf, b"\r\n\r\n").unwrap();
    String::from_utf8_lossy(&reader.buf[..end]).into_owned()
}

fn post(headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {{host}}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

const USUAL: &str = "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                     MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n";

fn listen_body(id: serde_json::Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "differential", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "notifications": {"toolsListChanged": true},
    }})
    .to_string()
}

#[tokio::test]
async fn listen_streams_are_answered_on_the_socket_as_hyper_answers_them() {
    let shouted = USUAL
        .to_ascii_uppercase()
        .replace("SUBSCRIPTIONS/LISTEN", "subscriptions/listen")
        .replace(
            "APPLICATION/JSON, TEXT/EVENT-STREAM",
            "application/json, text/event-stream",
        )
        .replace("APPLICATION/JSON\r", "application/json\r");
    let requests = [
        post(USUAL, &listen_body(json!("listen-1"))),
        post(USUAL, &listen_body(json!(42))),
        post(USUAL, &listen_body(json!(0))),
        post(&shouted, &listen_body(json!(1))),
        post(
            &format!(
                "{USUAL}User-Agent: differential/1\r\nX-Request-Id: abc\r\nAccept-Encoding: gzip\r\n"
            ),
            &listen_body(json!(2)),
        ),
        // The listen route answers a stream whatever the client accepts:
        // the same on both.
        post(
            &USUAL.replace("application/json, text/event-stream", "application/json"),
            &listen_body(json!(3)),
        ),
    ];
    for request in requests {
        let (on_socket, on_hyper) = both(&request, true).await;
        assert_eq!(on_socket.status, 200, "{request}");
        assert!(
            on_socket.body.contains("notifications/tools/list_changed"),
            "{on_socket:?}"
        );
        assert!(on_socket.body.contains("\"complete\""), "{on_socket:?}");
        assert_eq!(on_socket, on_hyper, "{request}");
    }
}

#[tokio::test]
async fn refusals_and_event_stream_gets_are_answered_on_the_socket_as_hyper_answers_them() {
    let requests = [
        // Params that do not parse.
        post(
            USUAL,
            r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":"x"}}}"#,
        ),
        // No params at all.
        post(
            USUAL,
            r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}"#,
        ),
        // The method header says something else.
        post(
            &USUAL.replace("Mcp-Method: subscriptions/listen", "Mcp-Method: tools/list"),
            &listen_body(json!(1)),
        ),
        // A protocol version the server does not speak.
        post(
            &USUAL.replace("2026-07-28", "1999-01-01"),
            &listen_body(json!(1)),
        ),
        // Not JSON's content type.
        post(
            &USUAL.replace("Content-Type: application/json", "Content-Type: text/plain"),
            &listen_body(json!(1)),
        ),
        // No id.
        post(
            USUAL,
            r#"{"jsonrpc":"2.0","method":"subscriptions/listen","params":{}}"#,
        ),
        // A request to another path.
        post(USUAL, &listen_body(json!(1))).replace("POST /mcp ", "POST /elsewhere "),
        // Event stream GETs: no session, another path, an older revision's.
        "GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".to_owned(),
        "GET /nowhere HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".to_owned(),
        "GET /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: none\r\n\r\n"
            .to_owned(),
    ];
    for request in requests {
        let (on_socket, on_hyper) = both(&request, false).await;
        assert_eq!(on_socket, on_hyper, "{request}");
    }
}
