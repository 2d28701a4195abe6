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
pub use stdio::StdioTransport;

/// Whether a JSON-RPC message is a request for `method`, and its id.
fn request_id<'a>(message: &'a serde_json::Value, method: &str) -> Option<&'a serde_json::Value> {
    (message.get("method")?.as_str()? == method)
        .then(|| message.get("id"))
        .flatten()
}
