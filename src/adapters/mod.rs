//! Serving streams over real transports.
//!
//! rmcp answers `subscriptions/listen` itself only after sending the
//! acknowledgement, cannot refuse a request with `-32602` or `-32603`
//! first, and drops extension filter fields such as `taskIds`.
//! So the rmcp adapters take listen requests before rmcp sees them and serve
//! them with a [`ListenStream`](crate::ListenStream); every other message
//! goes to rmcp unchanged. The WebSocket adapter serves the Diverge
//! notification channel with a [`ChannelStream`](crate::ChannelStream).

#[cfg(feature = "rmcp")]
mod http;
#[cfg(feature = "rmcp")]
mod sse;
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

use axum::http::HeaderMap;
use axum::http::header::{HOST, ORIGIN};
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

/// An error response to the request whose raw JSON id is `id` (it may be
/// `null`, or an id rmcp would not accept).
#[cfg(feature = "rmcp")]
fn error_reply(id: &Value, error: rmcp::model::ErrorData) -> Vec<u8> {
    crate::serve::framing::error_response(&id.to_string(), &error)
}

/// The id of a `subscriptions/listen` request; `None` for any other message,
/// and for an id rmcp would not accept either (rmcp then refuses it).
#[cfg(feature = "rmcp")]
fn listen_request(message: &Value) -> Option<RequestId> {
    let id = request_id(message, "subscriptions/listen")?;
    serde_json::from_value(id.clone()).ok()
}

/// Whether the request's `Host` (and `Origin`, when present) name an
/// allowed host: the same guard against DNS rebinding that rmcp applies to
/// every other request.
fn host_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    if allowed.is_empty() {
        return true;
    }
    let is_allowed = |authority: &str| allowed.iter().any(|h| h == host_name(authority));
    let host = headers.get(HOST).and_then(|v| v.to_str().ok());
    let origin = headers.get(ORIGIN).and_then(|v| v.to_str().ok());
    host.is_some_and(is_allowed)
        && origin.is_none_or(|origin| {
            let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
            is_allowed(authority.split('/').next().unwrap_or_default())
        })
}

/// The host name of `host[:port]` or `[v6]:port`.
fn host_name(authority: &str) -> &str {
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_str(host).unwrap());
        if let Some(origin) = origin {
            headers.insert(ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        headers
    }

    #[test]
    fn host_and_origin_must_name_an_allowed_host() {
        let allowed = ["localhost", "127.0.0.1", "::1"].map(String::from);
        assert!(host_allowed(&headers("127.0.0.1:8808", None), &allowed));
        assert!(host_allowed(
            &headers("[::1]:80", Some("http://localhost:3000")),
            &allowed
        ));
        assert!(!host_allowed(&headers("evil.example:8808", None), &allowed));
        assert!(!host_allowed(
            &headers("localhost", Some("https://evil.example")),
            &allowed
        ));
        assert!(!host_allowed(&HeaderMap::new(), &allowed));
        assert!(host_allowed(&headers("anything", None), &[]));
    }
}
