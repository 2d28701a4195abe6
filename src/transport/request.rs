//! A peek at JSON-RPC requests, to tell the ones the crate answers from
//! those it hands to rmcp.

use rmcp::model::RequestId;
use serde_json::Value;

/// Marks a request the HTTP transport hands to an rmcp service that serves
/// statelessly: there no older revision's session outlives its request,
/// so none is promised notifications on it.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stateless;

/// The id of a request for `method`, or `None` for any other message.
pub(crate) fn request_id<'a>(message: &'a Value, method: &str) -> Option<&'a Value> {
    (message.get("method")?.as_str()? == method)
        .then(|| message.get("id"))
        .flatten()
}

/// The id of a `subscriptions/listen` request; `None` for any other message,
/// and for an id rmcp would not accept either (rmcp then refuses it).
pub(crate) fn listen_request(message: &Value) -> Option<RequestId> {
    let id = request_id(message, "subscriptions/listen")?;
    serde_json::from_value(id.clone()).ok()
}
