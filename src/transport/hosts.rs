//! The guard against DNS rebinding: which host names an HTTP-based
//! transport accepts in `Host` and `Origin`.

use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::ErrorData;

use crate::wire::response::error_response;

/// The host names accepted in `Host` and `Origin`: by default the loopback
/// names rmcp's Streamable HTTP server accepts; empty accepts any.
#[derive(Debug, Clone)]
pub(crate) struct AllowedHosts(Vec<String>);

impl Default for AllowedHosts {
    fn default() -> Self {
        Self::new(["localhost", "127.0.0.1", "::1"])
    }
}

impl AllowedHosts {
    pub(crate) fn new(hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self(hosts.into_iter().map(Into::into).collect())
    }

    /// Whether the request's `Host` (and `Origin`, when present) name an
    /// allowed host: the same guard that rmcp applies to every other
    /// request.
    pub(crate) fn admit(&self, headers: &HeaderMap) -> bool {
        if self.0.is_empty() {
            return true;
        }
        // An entry names a host, or a host and port (as rmcp's do).
        let is_allowed = |authority: &str| {
            self.0
                .iter()
                .any(|h| h == host_name(authority) || h == authority)
        };
        let host = headers.get(HOST).and_then(|v| v.to_str().ok());
        let origin = headers.get(ORIGIN).and_then(|v| v.to_str().ok());
        host.is_some_and(is_allowed)
            && origin.is_none_or(|origin| {
                let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
                is_allowed(authority.split('/').next().unwrap_or_default())
            })
    }
}

/// The answer to a request from a host that is not allowed: 403, with a
/// JSON-RPC error body like every other refusal.
pub(crate) fn forbidden() -> Response {
    let error = ErrorData::invalid_request("Forbidden: Host or Origin not allowed", None);
    (
        StatusCode::FORBIDDEN,
        [(CONTENT_TYPE, "application/json")],
        error_response("null", &error),
    )
        .into_response()
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
        let allowed = AllowedHosts::default();
        assert!(allowed.admit(&headers("127.0.0.1:8808", None)));
        assert!(allowed.admit(&headers("[::1]:80", Some("http://localhost:3000"))));
        assert!(!allowed.admit(&headers("evil.example:8808", None)));
        assert!(!allowed.admit(&headers("localhost", Some("https://evil.example"))));
        assert!(!allowed.admit(&HeaderMap::new()));
        let any = AllowedHosts::new(Vec::<String>::new());
        assert!(any.admit(&headers("anything", None)));
    }

    #[test]
    fn an_entry_with_a_port_admits_that_port_alone() {
        let allowed = AllowedHosts::new(["example.com:8080"]);
        assert!(allowed.admit(&headers("example.com:8080", None)));
        assert!(!allowed.admit(&headers("example.com:9090", None)));
        assert!(!allowed.admit(&headers("example.com", None)));
    }
}
