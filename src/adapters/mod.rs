//! Serving listen streams over rmcp's transports.
//!
//! rmcp answers `subscriptions/listen` itself only after sending the
//! acknowledgement, cannot refuse a request with `-32602` or `-32603`
//! first, drops extension filter fields such as `taskIds`, and over HTTP
//! hands each notification to an in-memory buffer rather than the socket.
//! So the adapters take listen requests before rmcp sees them and serve them
//! with a [`ListenStream`](crate::ListenStream); every other message goes to
//! rmcp unchanged.

mod http;
mod stdio;

pub use http::http_endpoint;
pub use stdio::{StdioStreams, StdioTransport};

use rmcp::model::RequestId;
use serde_json::Value;

/// The id of a request for `method`, or `None` for any other message.
fn request_id<'a>(message: &'a Value, method: &str) -> Option<&'a Value> {
    (message.get("method")?.as_str()? == method)
        .then(|| message.get("id"))
        .flatten()
}

/// The id of a `subscriptions/listen` request; `None` for any other message,
/// and for an id rmcp would not accept either (rmcp then refuses it).
fn listen_request(message: &Value) -> Option<RequestId> {
    let id = request_id(message, "subscriptions/listen")?;
    serde_json::from_value(id.clone()).ok()
}
