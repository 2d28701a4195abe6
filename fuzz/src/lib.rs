//! The bodies of the fuzz targets, one function per target.
//!
//! Each binary in `fuzz_targets/` is a one-line `fuzz_target!` over one of
//! these functions, and the stable test `tests/fuzz_corpus.rs` includes this
//! very file as a module and replays every corpus file through the same
//! functions: what the fuzzer found interesting stays checked on every CI
//! run, without nightly.
//!
//! A function takes the fuzzer's bytes as they come. It must neither panic
//! nor hang on any of them, and beyond that it asserts what the crate
//! promises about its answer: a filter that parses serializes back to
//! itself, a frame that decodes re-encodes to bytes that decode to the same
//! frame, every line the stdio transport writes is a JSON-RPC message,
//! every HTTP answer that is not a listen stream is a JSON-RPC error with
//! the status and code the front door's table names, and the socket path
//! holds only a whole, plain request that holds a stream, exactly as sent.

use std::future::poll_fn;
use std::io::{self, Cursor};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::header::{ACCEPT, CONTENT_TYPE, HOST};
use axum::http::{HeaderValue, Method, Request, Response, StatusCode, Uri, Version};
use mcp_subscriptions::channel::Frame;
use mcp_subscriptions::http::first_request::{Classified, classify as classify_first};
use mcp_subscriptions::http::{HttpTransport, Incoming, classify};
use mcp_subscriptions::hub::DEFAULT_MAX_URIS;
use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::{Filter, Hub, ListenService};
use rmcp::transport::Transport;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWrite;
use tower_service::Service;

/// The largest input the transports are driven with: enough for many lines
/// and nested messages, small enough that one run stays fast.
const MAX_INPUT: usize = 64 * 1024;

/// The most of the stdio transport's output that is kept to check.
const MAX_OUTPUT: usize = 1024 * 1024;

/// How long a transport may take over one input before it counts as hung:
/// far beyond what any input of [`MAX_INPUT`] bytes needs.
const DEADLINE: Duration = Duration::from_secs(10);

/// Listen params: `Filter::from_listen_params` and `Filter::from_notifications`.
///
/// The first byte picks the URI limit (small ones, so that the limit is
/// reached, or the default); the rest is parsed as JSON when it is JSON,
/// and is also read as a recipe for a JSON value built from the bytes (see
/// [`JsonRecipe`]), which reaches well-formed but odd params far more often
/// than random text does.
pub fn listen_params(data: &[u8]) {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let max_uris = match limit {
        u8::MAX => DEFAULT_MAX_URIS,
        limit => usize::from(limit % 8),
    };
    assert!(Filter::from_listen_params(None, max_uris).is_err());
    if let Ok(value) = serde_json::from_slice::<Value>(rest) {
        check_params(&value, max_uris);
    }
    check_params(&JsonRecipe::new(rest).value(0), max_uris);
}

/// `value` as the params of a listen request and as its `notifications`.
fn check_params(value: &Value, max_uris: usize) {
    let as_params = Filter::from_listen_params(Some(value), max_uris);
    if let Some(notifications) = value.get("notifications") {
        assert_eq!(
            as_params,
            Filter::from_notifications(notifications, max_uris),
            "params parse as their notifications object"
        );
    }
    if let Ok(filter) = as_params {
        check_filter(&filter, &value["notifications"], max_uris);
    }
    let as_notifications = Filter::from_notifications(value, max_uris);
    let wrapped = json!({ "notifications": value });
    assert_eq!(
        Filter::from_listen_params(Some(&wrapped), max_uris),
        as_notifications,
        "a notifications object parses the same inside params"
    );
    match as_notifications {
        Ok(filter) => check_filter(&filter, value, max_uris),
        Err(err) => assert!(!err.to_string().is_empty()),
    }
}

/// What holds for every filter that parsed from `notifications`.
fn check_filter(filter: &Filter, notifications: &Value, max_uris: usize) {
    assert!(filter.resource_subscriptions().len() <= max_uris);
    assert!(!filter.is_everything(), "no request asks for everything");
    let wire = serde_json::to_value(filter).expect("a filter serializes");
    assert_eq!(
        Filter::from_notifications(&wire, max_uris).as_ref(),
        Ok(filter),
        "a filter's wire form parses back to it: {wire}"
    );
    // Deserialize has no URI limit; within the limit it agrees.
    let deserialized = serde_json::from_value::<Filter>(notifications.clone())
        .expect("what parses with a limit parses without one");
    assert_eq!(&deserialized, filter);
    assert_eq!(&filter.intersect(filter), filter);
    assert_eq!(&filter.intersect(&Filter::everything()), filter);
    assert_eq!(&Filter::everything().intersect(filter), filter);
    assert!(filter.intersect(&Filter::new()).is_empty());
}

/// The channel's frame decoder: `Frame::decode`, and for every frame it
/// accepts, encode → decode → encode gives the same bytes twice.
pub fn channel_frame(data: &[u8]) {
    let frame = match Frame::decode(data) {
        Ok(frame) => frame,
        Err(err) => {
            assert!(!err.to_string().is_empty());
            return;
        }
    };
    let mut once = Vec::new();
    frame.encode(&mut once);
    assert_eq!(once.first(), data.first(), "the tag is kept");
    let again = Frame::decode(&once).unwrap_or_else(|err| {
        panic!(
            "an encoded frame decodes ({err}): {}",
            String::from_utf8_lossy(&once)
        )
    });
    let mut twice = Vec::new();
    again.encode(&mut twice);
    let json = |bytes: &[u8]| serde_json::from_slice::<Value>(&bytes[1..]).expect("JSON");
    assert!(
        same_json(&json(&once), &json(&twice)),
        "encode is stable across a decode: {} then {}",
        String::from_utf8_lossy(&once),
        String::from_utf8_lossy(&twice),
    );
}

/// Equal JSON, but for floats within a few ULPs of each other: serde_json
/// (without its `float_roundtrip` feature, which nothing in the tree
/// enables) parses a float to within one ULP, not always to the nearest,
/// so `1.0000000000000001e90` printed and read again is `1e90`.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs())
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same_json(a, b)))
        }
        _ => a == b,
    }
}

/// The stdio transport's line reader: the bytes are its whole input,
/// read with rmcp's `Transport::receive` until it returns `None`, on a
/// current-thread runtime, into an output that keeps what it is given up to
/// [`MAX_OUTPUT`].
///
/// Every message handed to rmcp comes from a line of its own, and every
/// line written back is a JSON-RPC 2.0 message.
pub fn stdio_reader(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let output = Output::default();
    let written = output.0.clone();
    let lines = data.split(|&byte| byte == b'\n').count();
    runtime().block_on(async {
        let mut transport = StdioTransport::new(
            ListenService::new(Hub::new()),
            Cursor::new(data.to_vec()),
            output,
        );
        let streams = transport.streams();
        let read = async {
            let mut messages = 0;
            while transport.receive().await.is_some() {
                messages += 1;
                assert!(messages <= lines, "one message per line at most");
            }
            transport.close().await.expect("closing never fails");
            streams.finished().await;
        };
        tokio::time::timeout(DEADLINE, read)
            .await
            .expect("the transport ends with its input");
    });
    let written = written.lock().unwrap_or_else(PoisonError::into_inner);
    if written.len() >= MAX_OUTPUT {
        return;
    }
    assert!(written.is_empty() || written.ends_with(b"\n"));
    for line in written
        .split(|&byte| byte == b'\n')
        .filter(|l| !l.is_empty())
    {
        let message: Value = serde_json::from_slice(line).unwrap_or_else(|err| {
            panic!(
                "a written line is JSON ({err}): {}",
                String::from_utf8_lossy(line)
            )
        });
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
    }
}

/// The most a first request may take to be held on the socket: the socket
/// path's `BUFFER` (hyper's buffer).
const FIRST_REQUEST_BUFFER: usize = 8 * 1024;

/// The most headers the checks below parse a head with: hyper's limit,
/// above the socket path's own (32), so that the checks see every head the
/// classifier does.
const MAX_HEADERS: usize = 100;

/// How many cut points of a long held request are tried as its prefixes
/// (a short one is cut everywhere).
const PREFIX_CUTS: usize = 64;

/// The socket path's classifier of a connection's first bytes
/// (`http::first_request::classify`), checked against httparse.
///
/// `Held` only for a whole, plain request of at most
/// [`FIRST_REQUEST_BUFFER`] bytes and nothing after it: a complete
/// HTTP/1.1 head, no `Transfer-Encoding`, `Expect` or `Upgrade`, at most
/// one digits-only `Content-Length` that ends the body exactly where the
/// input ends, a `POST` whose body names `subscriptions/listen` as its
/// method or a `GET` that accepts an event stream; the request handed on
/// has the input's method, target, version, headers (in order, per name,
/// byte for byte) and body. Every strict prefix of a held request is `Partial`, and one
/// byte more makes it `Other`. `Partial` only while the input can still
/// become such a request: httparse wants more of the head, or the head is
/// complete and plain and the body is shorter than its length.
pub fn first_request(data: &[u8]) {
    match classify_first(data) {
        Classified::Partial => check_partial(data),
        Classified::Held(request) => check_held(data, *request),
        Classified::Other => {}
    }
}

/// What holds for input the classifier wants more of.
fn check_partial(data: &[u8]) {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    match head.parse(data) {
        Ok(httparse::Status::Partial) => {}
        Ok(httparse::Status::Complete(head_len)) => {
            let end = head_len.saturating_add(plain_body_len(&head));
            assert!(
                data.len() < end && end <= FIRST_REQUEST_BUFFER,
                "partial with a whole head: the body ({} of {end} bytes) is short",
                data.len()
            );
        }
        Err(err) => panic!("partial, but httparse refuses it: {err}"),
    }
}

/// What holds for a held request: see [`first_request`].
fn check_held(data: &[u8], request: Request<Body>) {
    assert!(data.len() <= FIRST_REQUEST_BUFFER, "held beyond the buffer");
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    let head_len = match head.parse(data) {
        Ok(httparse::Status::Complete(len)) => len,
        parsed => panic!("held, but httparse says {parsed:?}"),
    };
    let body_len = plain_body_len(&head);
    assert_eq!(
        head_len.saturating_add(body_len),
        data.len(),
        "nothing after the body"
    );
    let body = &data[head_len..];

    assert_eq!(request.version(), Version::HTTP_11);
    assert_eq!(Some(request.method().as_str()), head.method);
    let target = head.path.expect("a whole head has a target");
    assert_eq!(
        Some(request.uri()),
        Uri::try_from(target).ok().as_ref(),
        "the target as sent"
    );
    match *request.method() {
        Method::POST => {
            // The classifier reads `method` alone, borrowed (so unescaped),
            // and skips the rest without checking all of it (a string it
            // skips may hold bytes that are not UTF-8; the router answers
            // that): the method is in the body as it is, and where the
            // body is JSON, it is its `method`, or (serde filling a struct
            // from an array too) a one-element array's.
            let listen = br#""subscriptions/listen""#;
            assert!(
                body.windows(listen.len()).any(|window| window == listen),
                "a held POST names the listen method"
            );
            if let Ok(message) = serde_json::from_slice::<Value>(body) {
                let method = message.get("method").or_else(|| message.get(0));
                assert_eq!(
                    method.and_then(Value::as_str),
                    Some("subscriptions/listen"),
                    "a held POST is a listen request: {message}"
                );
            }
        }
        Method::GET => assert!(
            head.headers.iter().any(|header| {
                header.name.eq_ignore_ascii_case("accept")
                    && header
                        .value
                        .to_ascii_lowercase()
                        .windows(b"text/event-stream".len())
                        .any(|window| window == b"text/event-stream")
            }),
            "a held GET accepts an event stream"
        ),
        ref method => panic!("held a {method}"),
    }

    let held = request.headers();
    assert_eq!(held.len(), head.headers.len(), "every header, once");
    for (i, header) in head.headers.iter().enumerate() {
        let same_name = |other: &httparse::Header<'_>| other.name.eq_ignore_ascii_case(header.name);
        if head.headers[..i].iter().any(same_name) {
            continue;
        }
        let sent: Vec<&[u8]> = head
            .headers
            .iter()
            .filter(|other| same_name(other))
            .map(|other| other.value)
            .collect();
        let kept: Vec<&[u8]> = held
            .get_all(header.name)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect();
        assert_eq!(kept, sent, "the values of {}", header.name);
    }

    let held_body = runtime()
        .block_on(to_bytes(request.into_body(), usize::MAX))
        .expect("a held body is whole");
    assert_eq!(&held_body[..], body, "the body as sent");

    let cuts: Vec<usize> = if data.len() < 1024 {
        (0..data.len()).collect()
    } else {
        (0..PREFIX_CUTS)
            .map(|i| i * data.len() / PREFIX_CUTS)
            .chain([head_len - 1, head_len, data.len() - 1])
            .filter(|&cut| cut < data.len())
            .collect()
    };
    for cut in cuts {
        assert!(
            matches!(classify_first(&data[..cut]), Classified::Partial),
            "a held request cut at {cut} is partial"
        );
    }
    let mut more = data.to_vec();
    more.push(b'G');
    assert!(
        matches!(classify_first(&more), Classified::Other),
        "a byte after a held request's body makes it hyper's"
    );
}

/// The body length of a whole head the socket path may take: HTTP/1.1,
/// no `Transfer-Encoding`, `Expect` or `Upgrade`, and at most one
/// `Content-Length` (0 without one), of digits alone. Panics on any other.
fn plain_body_len(head: &httparse::Request<'_, '_>) -> usize {
    assert_eq!(head.version, Some(1), "HTTP/1.1 only");
    let mut lengths = Vec::new();
    for header in head.headers.iter() {
        for refused in ["transfer-encoding", "expect", "upgrade"] {
            assert!(
                !header.name.eq_ignore_ascii_case(refused),
                "taken with {}",
                header.name
            );
        }
        if header.name.eq_ignore_ascii_case("content-length") {
            lengths.push(header.value);
        }
    }
    match lengths[..] {
        [] => 0,
        [value] => {
            let value = std::str::from_utf8(value)
                .map(str::trim)
                .unwrap_or_default();
            assert!(
                !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()),
                "taken with Content-Length {value:?}"
            );
            value.parse().expect("a length that fits")
        }
        _ => panic!("taken with {} lengths", lengths.len()),
    }
}

/// The front door's body classification (`http::classify`), then the whole
/// route (`HttpTransport::into_method_router`, with an empty router behind
/// it) called as a tower service with the bytes as a POST body, twice: with
/// the headers a careful client derives from its body, and with fixed
/// headers that name a listen request of the supported version.
pub fn http_body(data: &[u8]) {
    let classified = classify(data);
    match &classified {
        Ok(incoming) => {
            let message = incoming.message();
            assert_eq!(message["jsonrpc"], "2.0");
            assert!(message.is_object());
            match incoming {
                Incoming::Request(message) => assert!(message["method"].is_string()),
                Incoming::Notification(message) => assert!(message.get("id").is_none()),
                Incoming::Response(message) => assert!(message.get("method").is_none()),
                _ => {}
            }
        }
        Err(err) => {
            let code = err.to_error_data().code.0;
            if serde_json::from_slice::<Value>(data).is_err() {
                assert_eq!(code, -32700, "not JSON: a parse error");
            } else {
                assert_eq!(
                    code, -32600,
                    "JSON but no JSON-RPC message: invalid request"
                );
            }
            assert_eq!(err.status(), 400);
        }
    }
    if data.len() > MAX_INPUT {
        return;
    }
    let expected_error = classified
        .as_ref()
        .err()
        .map(|err| err.to_error_data().code.0);
    runtime().block_on(async {
        let mut route = HttpTransport::new(ListenService::new(Hub::new()), axum::Router::new())
            .into_method_router();
        let requests = [
            derived_headers(data),
            vec![
                (
                    "mcp-protocol-version",
                    HeaderValue::from_static("2026-07-28"),
                ),
                (
                    "mcp-method",
                    HeaderValue::from_static("subscriptions/listen"),
                ),
            ],
        ];
        for headers in requests {
            let mut request = Request::post("/mcp")
                .header(HOST, "localhost")
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "application/json, text/event-stream");
            for (name, value) in headers {
                request = request.header(name, value);
            }
            let request = request
                .body(Body::from(data.to_vec()))
                .expect("a well-formed request");
            let answer = async {
                poll_fn(|cx| Service::<Request<Body>>::poll_ready(&mut route, cx))
                    .await
                    .unwrap_or_else(|never| match never {});
                let response = route
                    .call(request)
                    .await
                    .unwrap_or_else(|never| match never {});
                check_answer(response, expected_error).await;
            };
            tokio::time::timeout(DEADLINE, answer)
                .await
                .expect("the route answers");
        }
    });
}

/// The `MCP-Protocol-Version` and `Mcp-Method` headers a careful client
/// sends with `data`: its `_meta` version (or the supported one) and its
/// method, where they make valid header values.
fn derived_headers(data: &[u8]) -> Vec<(&'static str, HeaderValue)> {
    let message = serde_json::from_slice::<Value>(data).unwrap_or_default();
    let version = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("2026-07-28");
    let method = message.get("method").and_then(Value::as_str);
    [
        ("mcp-protocol-version", Some(version)),
        ("mcp-method", method),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, HeaderValue::from_str(value?).ok()?)))
    .collect()
}

/// A listen stream, or a JSON-RPC error in JSON: for a body `classify`
/// refused, 400 with its code.
async fn check_answer(response: Response<Body>, expected_error: Option<i32>) {
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if content_type == "text/event-stream" {
        assert_eq!(status, StatusCode::OK);
        assert_eq!(expected_error, None, "garbage never opens a stream");
        // Dropping the body is the client going away.
        return;
    }
    assert!(
        content_type.starts_with("application/json"),
        "{status}: every other answer is JSON, not {content_type:?}"
    );
    let body = to_bytes(response.into_body(), MAX_OUTPUT)
        .await
        .expect("an error body is small and complete");
    let answer: Value = serde_json::from_slice(&body).unwrap_or_else(|err| {
        panic!(
            "{status}: the body is JSON ({err}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    if let Some(code) = expected_error {
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
    }
}

/// A fresh current-thread runtime for one input, with timers for the
/// deadline and the transports' keep-alives.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
}

/// An output that never blocks and keeps at most [`MAX_OUTPUT`] bytes
/// (past it, it keeps exactly that many and drops the rest).
#[derive(Default)]
struct Output(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let room = MAX_OUTPUT - kept.len();
        kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Reads bytes as a recipe for a JSON value: each byte picks what comes
/// next, object keys mostly from the listen params' own vocabulary and
/// strings mostly from a few URIs, so that duplicates, wrong types in
/// known fields and unknown fields all come up often. Bounded in depth and
/// width; an exhausted recipe reads as zeros (nulls).
struct JsonRecipe<'a> {
    bytes: &'a [u8],
}

impl<'a> JsonRecipe<'a> {
    const MAX_DEPTH: usize = 4;
    const MAX_WIDTH: u8 = 6;
    const KEYS: [&'static str; 9] = [
        "notifications",
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
        "resourceSubscriptions",
        "taskIds",
        "_meta",
        "x-future",
        "",
    ];
    const STRINGS: [&'static str; 4] = ["file:///a", "file:///b", "t1", ""];

    /// A recipe from `bytes`.
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&byte, rest)) => {
                self.bytes = rest;
                byte
            }
            None => 0,
        }
    }

    /// The next value, `depth` levels down.
    fn value(&mut self, depth: usize) -> Value {
        let choice = self.byte();
        let choice = if depth >= Self::MAX_DEPTH {
            choice % 5
        } else {
            choice % 8
        };
        match choice {
            0 => Value::Null,
            1 => Value::Bool(self.byte() & 1 == 1),
            2 => {
                let n = i64::from(i8::from_le_bytes([self.byte()]));
                Value::from(n)
            }
            3 => Value::from(f64::from(self.byte()) / 4.0),
            4 => Value::String(self.string()),
            5 => {
                let width = self.byte() % Self::MAX_WIDTH;
                (0..width).map(|_| self.value(depth + 1)).collect()
            }
            _ => {
                let width = self.byte() % Self::MAX_WIDTH;
                let mut object = Map::new();
                for _ in 0..width {
                    let key = self.key();
                    let value = self.value(depth + 1);
                    object.insert(key, value);
                }
                Value::Object(object)
            }
        }
    }

    fn key(&mut self) -> String {
        let choice = self.byte();
        match Self::KEYS.get(usize::from(choice)) {
            Some(key) => (*key).to_owned(),
            None if choice < 128 => Self::KEYS[usize::from(choice) % Self::KEYS.len()].to_owned(),
            None => self.raw_string(),
        }
    }

    fn string(&mut self) -> String {
        let choice = self.byte();
        match Self::STRINGS.get(usize::from(choice % 8)) {
            Some(string) => (*string).to_owned(),
            None => self.raw_string(),
        }
    }

    fn raw_string(&mut self) -> String {
        let len = usize::from(self.byte() % 16).min(self.bytes.len());
        let (text, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        String::from_utf8_lossy(text).into_owned()
    }
}
