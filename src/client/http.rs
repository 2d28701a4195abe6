//! Listening over Streamable HTTP: one POST per stream, answered with SSE
//! (parsed by `sse-stream`), closed to cancel.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::{Stream, StreamExt};
use rmcp::model::{ErrorData, RequestId};
use serde_json::Value;
use sse_stream::{Sse, SseStream};

use super::error::{ProtocolError, SubscribeError};
use super::item::End;
use super::options::SubscribeOptions;
use super::protocol::{Expect, PROTOCOL_VERSION, listen_request, plain_url};
use super::pump::Connect;
use super::subscription::Subscription;
use super::wire::{Received, Wire, WireStream};
use crate::filter::Filter;
use crate::source::Next;

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

struct Http {
    client: reqwest::Client,
    url: String,
    next_id: AtomicU64,
}

/// One stream's SSE answer.
struct Response(Events);

impl Wire for Response {
    /// SSE comments and events without data (keep-alives) are skipped.
    async fn recv(&mut self) -> Result<Received, String> {
        loop {
            match self.0.next().await {
                None => return Err("the response ended without a result".into()),
                Some(Err(err)) => return Err(err.to_string()),
                Some(Ok(Sse { data: None, .. })) => {}
                Some(Ok(Sse {
                    data: Some(data), ..
                })) => {
                    return Ok(serde_json::from_str(&data)
                        .map_err(|err| ProtocolError::InvalidJson(err.to_string())));
                }
            }
        }
    }

    /// Dropping the response body closes its connection: the server reads
    /// that as a cancel.
    fn cancel(self) {}
}

impl Connect for Http {
    type Stream = WireStream<Response>;

    async fn open(
        &self,
        requested: &Filter,
        options: &SubscribeOptions,
    ) -> Result<(Filter, Self::Stream), SubscribeError> {
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
        let response = request.send().await.map_err(|err| {
            // A URL or header reqwest will not send is no passing failure.
            if err.is_builder() {
                SubscribeError::Invalid(error_chain(&err))
            } else {
                SubscribeError::Connect(error_chain(&err))
            }
        })?;
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
                None => SubscribeError::Status {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&body).into_owned(),
                },
            });
        }
        let events = SseStream::from_bytes_stream(response.bytes_stream());
        WireStream::acknowledged(Response(Box::pin(events)), Expect::new(&id, requested)).await
    }

    fn end(stream: &Self::Stream, last: Next) -> End {
        stream.end(last)
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
    /// Only `http://` URLs: the client carries no TLS stack, and an
    /// `https://` URL fails at once with [`SubscribeError::Invalid`].
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
        let url = url.into();
        plain_url(&url, "http")?;
        let connect = Http {
            client: reqwest::Client::new(),
            url,
            next_id: AtomicU64::new(1),
        };
        Self::open(Arc::new(connect), requested, options).await
    }
}
