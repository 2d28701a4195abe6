//! The service that opens listen streams from a source.

use std::sync::Arc;

use rmcp::model::{ErrorData, Implementation, RequestId};
use serde_json::Value;

use super::stream::ListenStream;
use crate::error::{OpenError, Refusal};
use crate::filter::Filter;
use crate::source::{OpenContext, Source};

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
    source: Arc<S>,
    server_info: Arc<Implementation>,
}

impl<S> Clone for ListenService<S> {
    fn clone(&self) -> Self {
        Self {
            source: self.source.clone(),
            server_info: self.server_info.clone(),
        }
    }
}

impl<S: Source> ListenService<S> {
    /// Serves `source`, naming this crate as the server in `complete`
    /// results until [`with_server_info`](Self::with_server_info) says
    /// otherwise.
    pub fn new(source: S) -> Self {
        Self {
            source: Arc::new(source),
            server_info: Arc::new(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            )),
        }
    }

    /// Sets the server info every stream's `complete` result carries.
    pub fn with_server_info(mut self, server_info: Implementation) -> Self {
        self.server_info = Arc::new(server_info);
        self
    }

    /// The source served.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The server info the `complete` result carries.
    pub fn server_info(&self) -> &Implementation {
        &self.server_info
    }

    /// Validates a listen request and opens its stream. Nothing is sent
    /// before this succeeds.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] carrying the JSON-RPC error response to send instead:
    /// `-32602` for malformed params or more URIs than the source's
    /// [`max_uris`](Source::max_uris), or whatever the source refused with
    /// (`-32603` `Subscription limit reached` for a full hub).
    pub fn open(
        &self,
        id: RequestId,
        params: Option<&Value>,
    ) -> Result<ListenStream<S::Handle>, Refusal> {
        let refuse = |error: ErrorData| Refusal::new(id.clone(), error);
        let requested = Filter::from_listen_params(params, self.source.max_uris())
            .map_err(|err| refuse(err.to_error_data()))?;
        self.open_filter(id.clone(), &requested)
            .map_err(|err| refuse(err.to_error_data()))
    }

    /// Opens a stream for an already parsed filter.
    ///
    /// # Errors
    ///
    /// The source's [`OpenError`].
    pub fn open_filter(
        &self,
        id: RequestId,
        requested: &Filter,
    ) -> Result<ListenStream<S::Handle>, OpenError> {
        let context = OpenContext::default().with_subscription_id(id.clone());
        let opened = self.source.open(requested, &context)?;
        Ok(ListenStream::new(
            opened.handle,
            id,
            opened.granted,
            self.server_info.clone(),
        ))
    }
}

impl<S> std::fmt::Debug for ListenService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenService")
            .field("server_info", &self.server_info)
            .finish_non_exhaustive()
    }
}
