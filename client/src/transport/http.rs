//! Listening over Streamable HTTP: one POST per stream, answered with SSE
//! (parsed by `sse-stream`), closed to cancel.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::{Stream, StreamExt};
use rmcp::model::RequestId;
use serde_json::{Map, Value};
use sse_stream::{Sse, SseStream};

use crate::connect::Connect;
use crate::error::{ProtocolError, SubscribeError, says_try_later};
use crate::item::End;
use crate::options::SubscribeOptions;
use crate::protocol::Incoming;
use crate::protocol::{Expect, PROTOCOL_VERSION, check_scheme, listen_request};
use crate::request::{Request, message, outcome};
use crate::subscription::Subscription;
use crate::wire::{Received, Wire, WireStream};
use mcp_subscriptions::Filter;
use mcp_subscriptions::Next;

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// One server's MCP endpoint: its listen streams and its other requests
/// share the connection pool.
pub(crate) struct Http {
    client: reqwest::Client,
    url: String,
    next_id: AtomicU64,
}

impl Http {
    /// The endpoint at `url`, refused at once unless it is `http://` (or,
    /// with the `tls` feature, `https://`, trusting the options' root
    /// certificates besides the system's).
    pub(crate) fn new(url: String, options: &SubscribeOptions) -> Result<Self, SubscribeError> {
        check_scheme(&url, SCHEMES)?;
        Ok(Self {
            client: client(options)?,
            url,
            next_id: AtomicU64::new(1),
        })
    }

    fn next_id(&self, what: &str) -> RequestId {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        RequestId::String(format!("{what}-{n}").into())
    }

    /// POSTs one JSON-RPC request with the 2026-07-28 headers and the
    /// options' own.
    async fn post(
        &self,
        method: &str,
        body: &Value,
        options: &SubscribeOptions,
    ) -> Result<reqwest::Response, SubscribeError> {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .header("mcp-method", method);
        if let Some(name) = mcp_name(method, body) {
            request = request.header("mcp-name", name);
        }
        request = request.body(body.to_string());
        for (name, value) in &options.headers {
            request = request.header(name, value);
        }
        request.send().await.map_err(|err| send_error(&err))
    }
}

/// The `Mcp-Name` header a 2026-07-28 request of `method` carries
/// (SEP-2243), so that whatever routes on headers (rmcp's server checks
/// them) sees what the body names: the tool's or prompt's name, the
/// resource's URI, the task's id. A value a header cannot carry as it is
/// goes Base64-encoded between `=?base64?` and `?=`.
fn mcp_name(method: &str, body: &Value) -> Option<String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    let value = body["params"][field].as_str()?;
    let printable = value.chars().all(|c| c.is_ascii_graphic() || c == ' ');
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = printable && !padded && !sentinel;
    Some(if plain {
        value.to_owned()
    } else {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        format!("=?base64?{encoded}?=")
    })
}

#[cfg(feature = "tls")]
const SCHEMES: &[&str] = &["http", "https"];
#[cfg(not(feature = "tls"))]
const SCHEMES: &[&str] = &["http"];

#[cfg(feature = "tls")]
fn client(options: &SubscribeOptions) -> Result<reqwest::Client, SubscribeError> {
    let roots = options
        .root_certificates
        .iter()
        .map(|pem| {
            reqwest::Certificate::from_pem(pem)
                .map_err(|err| SubscribeError::Invalid(format!("a root certificate: {err}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    builder(options)
        .tls_certs_merge(roots)
        .build()
        .map_err(|err| SubscribeError::Invalid(error_chain(&err)))
}

#[cfg(not(feature = "tls"))]
fn client(options: &SubscribeOptions) -> Result<reqwest::Client, SubscribeError> {
    builder(options)
        .build()
        .map_err(|err| SubscribeError::Invalid(error_chain(&err)))
}

/// Where connections go, whether over TLS or not.
fn builder(options: &SubscribeOptions) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder().local_address(options.local_address);
    #[cfg(unix)]
    if let Some(path) = &options.unix_socket {
        return builder.unix_socket(path.as_path());
    }
    builder
}

/// Why a request could not be sent: a URL or header reqwest will not send,
/// or a certificate refused (no passing failures), or the server out of
/// reach.
fn send_error(err: &reqwest::Error) -> SubscribeError {
    if err.is_builder() {
        return SubscribeError::Invalid(error_chain(err));
    }
    #[cfg(feature = "tls")]
    if tls_refused(err) {
        return SubscribeError::Tls(error_chain(err));
    }
    SubscribeError::Connect(error_chain(err))
}

/// Whether rustls refused the handshake (a certificate not trusted, for
/// one), somewhere in the causes. An I/O error hides the error it carries
/// from `source`, so it is opened by hand.
#[cfg(feature = "tls")]
fn tls_refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(err) = cause {
        if err.is::<rustls::Error>() {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && tls_refused(inner)
        {
            return true;
        }
        cause = err.source();
    }
    false
}

/// Whether the server answered with an SSE stream.
fn is_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// The JSON-RPC message of an answer that is not a stream. An HTTP status
/// other than success with no JSON-RPC error in its body (a 401 from an
/// authentication layer), or one that says to try later (408, 425, 429,
/// 5xx: a proxy's 503, whatever its body), is [`SubscribeError::Status`].
async fn answer(response: reqwest::Response) -> Result<Value, SubscribeError> {
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|err| SubscribeError::Connect(error_chain(&err)))?;
    let later = says_try_later(status.as_u16());
    match serde_json::from_slice::<Value>(&body) {
        Ok(message) if status.is_success() || (message.get("error").is_some() && !later) => {
            Ok(message)
        }
        _ => Err(SubscribeError::Status {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body).into_owned(),
        }),
    }
}

impl Request for Http {
    /// The answer is JSON, or an SSE stream whose response to this id is
    /// the answer (notifications before it are skipped).
    async fn request(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &SubscribeOptions,
    ) -> Result<Value, SubscribeError> {
        let id = self.next_id("request");
        let response = self
            .post(method, &message(&id, method, params, options), options)
            .await?;
        if !is_stream(&response) {
            return outcome(answer(response).await?);
        }
        let id = serde_json::to_value(&id).expect("an id serializes");
        let mut events = Response(Box::pin(SseStream::from_bytes_stream(
            response.bytes_stream(),
        )));
        loop {
            let message = events.recv().await.map_err(SubscribeError::Connect)??.value;
            if message.get("method").is_none() && message.get("id") == Some(&id) {
                return outcome(message);
            }
        }
    }
}

/// One stream's SSE answer.
pub(crate) struct Response(Events);

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
                    return Ok(Incoming::parse(data));
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
        let id = self.next_id("listen");
        let response = self
            .post(
                "subscriptions/listen",
                &listen_request(&id, requested, options),
                options,
            )
            .await?;
        if !is_stream(&response) {
            // A refusal comes as one JSON-RPC error, whatever the status.
            return Err(match answer(response).await.map(outcome) {
                Ok(Err(refused)) => refused,
                Ok(Ok(_)) => {
                    ProtocolError::InvalidMessage("a result before the acknowledgement".into())
                        .into()
                }
                Err(err) => err,
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
    /// `https://` URLs need the `tls` feature (rustls, trusting the
    /// system's roots and `SubscribeOptions::with_root_certificate`'s);
    /// without it they fail at once with [`SubscribeError::Invalid`].
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
        let connect = Http::new(url.into(), &options)?;
        Self::open(Arc::new(connect), requested, options).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_request_naming_a_tool_prompt_resource_or_task_says_so_in_a_header() {
        let name = |method, params: Value| mcp_name(method, &json!({ "params": params }));
        let named = json!({"name": "a/search"});
        assert_eq!(name("tools/call", named).as_deref(), Some("a/search"));
        let read = json!({"uri": "file:///x"});
        assert_eq!(name("resources/read", read).as_deref(), Some("file:///x"));
        let task = json!({"taskId": "t1"});
        assert_eq!(name("tasks/get", task).as_deref(), Some("t1"));
        assert_eq!(name("tools/list", json!({})), None);
        // Not plain ASCII, or a space at an end: Base64 in its sentinel.
        let accented = json!({"name": "café"});
        assert_eq!(
            name("prompts/get", accented).as_deref(),
            Some("=?base64?Y2Fmw6k=?=")
        );
        let spaced = json!({"name": " x"});
        assert_eq!(
            name("prompts/get", spaced).as_deref(),
            Some("=?base64?IHg=?=")
        );
    }
}
