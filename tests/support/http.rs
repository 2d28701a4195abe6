//! An in-process Streamable HTTP server around any listen service, and a
//! raw client that reads its SSE streams message by message.

use std::time::Duration;

use serde_json::Value;

/// Serves `app` on a free loopback port; its base URL.
pub async fn serve(app: axum::Router) -> String {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", tcp.local_addr().unwrap());
    tokio::spawn(mcp_subscriptions::http::serve(
        tcp,
        app,
        std::future::pending(),
    ));
    url
}

/// An app whose `/mcp` serves listen streams from `listen`; every other
/// message gets 404 (these tests send none).
pub fn app<S>(listen: mcp_subscriptions::ListenService<S>) -> axum::Router
where
    S: mcp_subscriptions::Source + 'static,
    S::Handle: 'static,
{
    let http = mcp_subscriptions::http::HttpTransport::new(listen, axum::Router::new());
    axum::Router::new().route("/mcp", http.into_method_router())
}

/// One answer to a POST: a JSON body, or a stream read message by message.
pub struct Answer {
    pub status: u16,
    response: reqwest::Response,
    buffer: String,
}

/// POSTs `body` to `url`/mcp with `headers` (name, value pairs), and the
/// headers a 2026-07-28 client sends: the protocol version, and the
/// method (and tool name) that the body names.
pub async fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> Answer {
    post_from(None, url, body, headers).await
}

/// [`post`], on a connection of its own from the local address `from`
/// (a loopback address of the test's choosing), where one is given.
pub async fn post_from(
    from: Option<std::net::IpAddr>,
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Answer {
    let client = reqwest::Client::builder()
        .local_address(from)
        .build()
        .unwrap();
    post_on(&client, url, body, headers).await
}

/// [`post`] through `client`, whose pooled connections it may reuse.
pub async fn post_on(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = client
        .post(format!("{url}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .body(body.to_string());
    if let Some(method) = body["method"].as_str() {
        request = request.header("mcp-method", method);
    }
    if let Some(name) = body["params"]["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    Answer {
        status: response.status().as_u16(),
        response,
        buffer: String::new(),
    }
}

impl Answer {
    /// A header of the answer, if it has it.
    pub fn header(&self, name: &str) -> Option<String> {
        self.response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    }

    /// Whether the answer is an SSE stream (not a JSON reply).
    pub fn is_stream(&self) -> bool {
        self.response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
    }

    /// The next SSE message, parsed; `None` once the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data: "))
                    .collect();
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some(serde_json::from_str(&data).unwrap());
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), self.response.chunk())
                .await
                .expect("the stream says something within 5 s")
                .unwrap()?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Whether nothing arrives within `within`.
    pub async fn is_quiet(&mut self, within: Duration) -> bool {
        tokio::time::timeout(within, self.next()).await.is_err()
    }

    /// Whether the response ends (cleanly or cut) within `within`, whatever
    /// it says before.
    pub async fn ends_within(&mut self, within: Duration) -> bool {
        let ending = async { while let Ok(Some(_)) = self.response.chunk().await {} };
        tokio::time::timeout(within, ending).await.is_ok()
    }

    /// The whole body of a plain JSON answer.
    pub async fn json(self) -> Value {
        serde_json::from_slice(&self.response.bytes().await.unwrap()).unwrap()
    }

    /// A request's reply, whether plain JSON or an event stream of one
    /// message (as rmcp may answer).
    pub async fn reply(mut self) -> Value {
        if self.is_stream() {
            self.next().await.expect("a reply")
        } else {
            self.json().await
        }
    }
}

/// A listen request's body: `notifications`, and a `_meta` that declares
/// `extensions` in the client's capabilities.
pub fn listen(id: Value, notifications: Value, extensions: &[&str]) -> Value {
    let declared: serde_json::Map<String, Value> = extensions
        .iter()
        .map(|id| ((*id).to_owned(), serde_json::json!({})))
        .collect();
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"extensions": declared},
                "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1.0.0"},
            },
            "notifications": notifications,
        }
    })
}

/// `app` behind a layer that makes the `x-user` header the request's
/// [`Principal`](mcp_subscriptions::audience::Principal), as an authentication layer
/// in front would; a request without the header has no principal.
pub fn with_user_header(app: axum::Router) -> axum::Router {
    use axum::extract::Request;
    use axum::middleware::Next;
    let layer = axum::middleware::from_fn(|mut request: Request, next: Next| async move {
        let user = request
            .headers()
            .get("x-user")
            .and_then(|v| v.to_str().ok())
            .map(mcp_subscriptions::audience::Principal::new);
        if let Some(user) = user {
            request.extensions_mut().insert(user);
        }
        next.run(request).await
    });
    app.layer(layer)
}
