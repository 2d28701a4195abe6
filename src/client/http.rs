//! Listening over Streamable HTTP: one POST per stream, answered with SSE
//! (parsed by `sse-stream`), closed to cancel.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, Stream, StreamExt};
use rmcp::model::{ErrorData, RequestId};
use serde_json::Value;
use sse_stream::{Sse, SseStream};

use super::error::SubscribeError;
use super::item::End;
use super::options::SubscribeOptions;
use super::protocol::{Expect, PROTOCOL_VERSION, Step, acknowledged, arrival, listen_request};
use super::pump::{Arrival, Connect, Feed, Opening};
use super::subscription::Subscription;
use crate::filter::Filter;

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

struct Http {
    client: reqwest::Client,
    url: String,
    next_id: AtomicU64,
}

struct HttpFeed {
    events: Events,
    expect: Expect,
}

impl HttpFeed {
    /// The next step of the stream: SSE comments and events without data
    /// (keep-alives) are skipped.
    async fn step(&mut self) -> Result<Step, End> {
        loop {
            match self.events.next().await {
                None => return Err(End::Abrupt("the response ended without a result".into())),
                Some(Err(err)) => return Err(End::Abrupt(err.to_string())),
                Some(Ok(Sse { data: None, .. })) => {}
                Some(Ok(Sse {
                    data: Some(data), ..
                })) => match self.expect.text(&data) {
                    Ok(Step::Skip) => {}
                    Ok(step) => return Ok(step),
                    Err(err) => return Err(End::Protocol(err)),
                },
            }
        }
    }
}

impl Connect for Http {
    fn open<'a>(&'a self, requested: &'a Filter, options: &'a SubscribeOptions) -> Opening<'a> {
        async move {
            let n = self.next_id.fetch_add(1, Ordering::Relaxed);
            let id = RequestId::String(format!("listen-{n}").into());
            let mut request = self
                .client
                .post(&self.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", PROTOCOL_VERSION)
                .header("mcp-method", "subscriptions/listen")
                .body(listen_request(&id, requested, options).to_string());
            for (name, value) in &options.headers {
                request = request.header(name, value);
            }
            let response = request
                .send()
                .await
                .map_err(|err| SubscribeError::Connect(error_chain(&err)))?;
            let status = response.status();
            let is_stream = response
                .headers()
                .get("content-type")
                .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            if !is_stream {
                // A refusal comes as one JSON-RPC error, whatever the status.
                let body = response.bytes().await.unwrap_or_default();
                let refusal = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("error").cloned())
                    .and_then(|e| serde_json::from_value::<ErrorData>(e).ok());
                return Err(match refusal {
                    Some(error) => SubscribeError::Refused(error),
                    None => SubscribeError::Connect(format!(
                        "HTTP {status}: {}",
                        String::from_utf8_lossy(&body)
                    )),
                });
            }
            let mut feed = HttpFeed {
                events: Box::pin(SseStream::from_bytes_stream(response.bytes_stream())),
                expect: Expect::new(&id, requested),
            };
            let first = feed.step().await;
            acknowledged(first, feed)
        }
        .boxed()
    }
}

impl Feed for HttpFeed {
    fn next(&mut self) -> BoxFuture<'_, Arrival> {
        async move { arrival(self.step().await) }.boxed()
    }

    fn cancel(self: Box<Self>) -> BoxFuture<'static, ()> {
        // Dropping the response body closes its connection: the server
        // reads that as a cancel.
        drop(self);
        std::future::ready(()).boxed()
    }
}

/// An error and its causes on one line (reqwest's own text names only the
/// outermost).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Subscription {
    /// Listens over Streamable HTTP at `url` (the server's MCP endpoint,
    /// such as `http://127.0.0.1:8808/mcp`), as a 2026-07-28 client: the
    /// `MCP-Protocol-Version` and `Mcp-Method` headers, `_meta` with the
    /// protocol version, client info and capabilities. The SSE answer is
    /// parsed by `sse-stream`; dropping the response cancels.
    ///
    /// Only `http://` URLs: the client carries no TLS stack.
    ///
    /// # Errors
    ///
    /// A [`SubscribeError`]: the server unreachable, a refusal, a protocol
    /// error or no acknowledgement within the options' timeout.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn http(
        url: impl Into<String>,
        requested: &Filter,
        options: SubscribeOptions,
    ) -> Result<Self, SubscribeError> {
        let connect = Http {
            client: reqwest::Client::new(),
            url: url.into(),
            next_id: AtomicU64::new(1),
        };
        Self::open(Arc::new(connect), requested, options).await
    }
}
