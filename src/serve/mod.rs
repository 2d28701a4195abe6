//! Serving `subscriptions/listen` streams from any [`Source`], whatever the
//! transport.
//!
//! [`ListenService`] validates a listen request and opens a
//! [`ListenStream`]; the stream yields the messages to write, in order, and
//! enforces the protocol's serving rules. The rmcp adapters (stdio and
//! Streamable HTTP) are thin loops around it.

mod advertise;
pub(crate) mod framing;
pub(crate) mod pull;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ErrorData, Implementation, RequestId};
use serde_json::Value;

pub use advertise::Advertise;
pub use stream::ListenStream;

use crate::error::Refusal;
use crate::filter::{DEFAULT_MAX_URIS, Filter};
use crate::source::{OpenContext, Source};

/// How often an idle HTTP stream sends a keep-alive comment unless
/// configured otherwise.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(5);

/// Options for serving listen streams.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ListenOptions {
    /// The most distinct resource URIs one request may name; more is
    /// refused with `-32602` (default [`DEFAULT_MAX_URIS`]).
    pub max_uris: usize,
    /// How often an idle Streamable HTTP stream sends an SSE comment line
    /// (default [`DEFAULT_KEEPALIVE`]).
    pub keepalive: Duration,
    /// The server's info, carried by the `complete` result.
    pub server_info: Implementation,
    /// The host names the HTTP and WebSocket endpoints accept in `Host`
    /// and `Origin` (default: `localhost`, `127.0.0.1`, `::1`, as rmcp's
    /// Streamable HTTP server), against DNS rebinding; empty accepts any.
    pub allowed_hosts: Vec<String>,
}

impl Default for ListenOptions {
    fn default() -> Self {
        Self {
            max_uris: DEFAULT_MAX_URIS,
            keepalive: DEFAULT_KEEPALIVE,
            server_info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
        }
    }
}

impl ListenOptions {
    /// Sets the most distinct URIs one request may name.
    pub fn with_max_uris(mut self, max_uris: usize) -> Self {
        self.max_uris = max_uris;
        self
    }

    /// Sets the keep-alive interval of HTTP streams.
    pub fn with_keepalive(mut self, keepalive: Duration) -> Self {
        self.keepalive = keepalive;
        self
    }

    /// Sets the server info the `complete` result carries.
    pub fn with_server_info(mut self, server_info: Implementation) -> Self {
        self.server_info = server_info;
        self
    }

    /// Sets the host names accepted in `Host` and `Origin`; keep it in step
    /// with rmcp's `StreamableHttpServerConfig::allowed_hosts`.
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }
}

/// Serves listen streams from one source; cheap to clone.
///
/// ```
/// use mcp_subscriptions::{Hub, ListenService};
/// use rmcp::model::RequestId;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let hub = Hub::new();
/// let service = ListenService::new(hub.clone());
/// let params = json!({"notifications": {"toolsListChanged": true}});
/// let mut stream = service.open(RequestId::Number(1), Some(&params)).unwrap();
///
/// let ack = stream.next_message().await.unwrap();
/// assert!(String::from_utf8(ack.to_vec()).unwrap().contains("subscriptions/acknowledged"));
/// hub.notify_tools_list_changed();
/// let event = stream.next_message().await.unwrap();
/// assert!(String::from_utf8(event.to_vec()).unwrap().contains("tools/list_changed"));
/// # });
/// ```
pub struct ListenService<S> {
    inner: Arc<Inner<S>>,
}

struct Inner<S> {
    source: S,
    options: ListenOptions,
}

impl<S> Clone for ListenService<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<S: Source> ListenService<S> {
    /// Serves `source` with default options.
    pub fn new(source: S) -> Self {
        Self::with_options(source, ListenOptions::default())
    }

    /// Serves `source` with `options`.
    pub fn with_options(source: S, options: ListenOptions) -> Self {
        Self {
            inner: Arc::new(Inner { source, options }),
        }
    }

    /// The source served.
    pub fn source(&self) -> &S {
        &self.inner.source
    }

    /// The serving options.
    pub fn options(&self) -> &ListenOptions {
        &self.inner.options
    }

    /// Validates a listen request and opens its stream. Nothing is sent
    /// before this succeeds.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] carrying the JSON-RPC error response to send instead:
    /// `-32602` for malformed params or too many URIs, or whatever the
    /// source refused with (`-32603` `Subscription limit reached` for a full
    /// hub).
    pub fn open(&self, id: RequestId, params: Option<&Value>) -> Result<ListenStream<S>, Refusal> {
        let refuse = |error: ErrorData| Refusal::new(id.clone(), error);
        let requested = Filter::from_listen_params(params, self.inner.options.max_uris)
            .map_err(|err| refuse(err.to_error_data()))?;
        self.open_filter(id.clone(), &requested)
            .map_err(|err| refuse(err.to_error_data()))
    }

    /// Opens a stream for an already parsed filter.
    ///
    /// # Errors
    ///
    /// The source's [`OpenError`](crate::OpenError).
    pub fn open_filter(
        &self,
        id: RequestId,
        requested: &Filter,
    ) -> Result<ListenStream<S>, crate::OpenError> {
        let context = OpenContext::default().with_subscription_id(id.clone());
        let opened = self.inner.source.open(requested, &context)?;
        Ok(ListenStream::new(
            self.clone(),
            opened.handle,
            id,
            opened.granted,
        ))
    }
}

impl<S> std::fmt::Debug for ListenService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenService")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}
