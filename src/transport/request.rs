//! A peek at JSON-RPC requests, to tell the ones the crate answers from
//! those it hands to rmcp.

use rmcp::model::RequestId;
use serde_json::Value;

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
