//! Serving streams over real transports.
//!
//! rmcp answers `subscriptions/listen` itself only after sending the
//! acknowledgement, cannot refuse a request with `-32602` or `-32603`
//! first, drops extension filter fields such as `taskIds`, and over HTTP
//! hands each notification to an in-memory buffer rather than the socket.
//! So the rmcp adapters take listen requests before rmcp sees them and serve
//! them with a [`ListenStream`](crate::ListenStream); every other message
//! goes to rmcp unchanged. The WebSocket adapter serves the Diverge
//! notification channel with a [`ChannelStream`](crate::ChannelStream).

#[cfg(feature = "rmcp")]
mod http;
#[cfg(feature = "rmcp")]
mod stdio;
mod streams;
#[cfg(feature = "channel")]
mod websocket;

#[cfg(feature = "rmcp")]
pub use http::http_endpoint;
#[cfg(feature = "rmcp")]
pub use stdio::StdioTransport;
pub use streams::Streams;
#[cfg(feature = "channel")]
pub use websocket::ChannelEndpoint;

#[cfg(feature = "rmcp")]
use rmcp::model::RequestId;
#[cfg(feature = "rmcp")]
use serde_json::Value;

/// The id of a request for `method`, or `None` for any other message.
#[cfg(feature = "rmcp")]
fn request_id<'a>(message: &'a Value, method: &str) -> Option<&'a Value> {
    (message.get("method")?.as_str()? == method)
        .then(|| message.get("id"))
        .flatten()
}

/// The id of a `subscriptions/listen` request; `None` for any other message,
/// and for an id rmcp would not accept either (rmcp then refuses it).
#[cfg(feature = "rmcp")]
fn listen_request(message: &Value) -> Option<RequestId> {
    let id = request_id(message, "subscriptions/listen")?;
    serde_json::from_value(id.clone()).ok()
}
