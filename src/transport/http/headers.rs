//! The 2026-07-28 request headers against the body they travel with:
//! `MCP-Protocol-Version` against `_meta`'s protocol version, `Mcp-Method`
//! against the method, and the version against what the server speaks.

use axum::http::HeaderMap;
use serde_json::Value;

use crate::error::RequestError;

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// Checks a request's headers against its body and the `supported`
/// protocol versions.
///
/// # Errors
///
/// [`RequestError::HeaderMismatch`] when a header says something else than
/// the body; [`RequestError::UnsupportedVersion`] when the request names a
/// version outside `supported`.
pub(crate) fn check(
    headers: &HeaderMap,
    message: &Value,
    supported: &[String],
) -> Result<(), RequestError> {
    let header = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let meta_version = message
        .pointer("/params/_meta")
        .and_then(|meta| meta.get(PROTOCOL_VERSION_META))
        .and_then(Value::as_str);
    let header_version = header(PROTOCOL_VERSION_HEADER);
    if let (Some(in_header), Some(in_body)) = (header_version, meta_version)
        && in_header != in_body
    {
        return Err(RequestError::HeaderMismatch {
            header: "MCP-Protocol-Version",
            header_value: in_header.to_owned(),
            body_value: in_body.to_owned(),
        });
    }
    if let (Some(in_header), Some(method)) = (
        header(METHOD_HEADER),
        message.get("method").and_then(Value::as_str),
    ) && in_header != method
    {
        return Err(RequestError::HeaderMismatch {
            header: "Mcp-Method",
            header_value: in_header.to_owned(),
            body_value: method.to_owned(),
        });
    }
    if let Some(requested) = meta_version.or(header_version)
        && !supported.iter().any(|version| version == requested)
    {
        return Err(RequestError::UnsupportedVersion {
            requested: requested.to_owned(),
            supported: supported.to_vec(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.parse().unwrap(), value.parse().unwrap()))
            .collect()
    }

    fn listen(version: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
            "params": {"_meta": {PROTOCOL_VERSION_META: version}, "notifications": {}}})
    }

    #[test]
    fn headers_must_agree_with_the_body() {
        let supported = ["2026-07-28".to_owned()];
        let agree = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ]);
        assert_eq!(check(&agree, &listen("2026-07-28"), &supported), Ok(()));
        assert_eq!(
            check(&HeaderMap::new(), &listen("2026-07-28"), &supported),
            Ok(())
        );
        let code = |headers: &HeaderMap, body: &Value| {
            check(headers, body, &supported)
                .unwrap_err()
                .to_error_data()
                .code
                .0
        };
        let old = headers(&[("mcp-protocol-version", "2025-06-18")]);
        assert_eq!(code(&old, &listen("2026-07-28")), -32020);
        let other_method = headers(&[("mcp-method", "tools/list")]);
        assert_eq!(code(&other_method, &listen("2026-07-28")), -32020);
        assert_eq!(code(&HeaderMap::new(), &listen("2099-01-01")), -32022);
        let future = headers(&[("mcp-protocol-version", "2099-01-01")]);
        let data = check(&future, &json!({"method": "m"}), &supported)
            .unwrap_err()
            .to_error_data()
            .data;
        assert_eq!(
            data,
            Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))
        );
    }
}
