//! The endpoint's error answers: every one a JSON-RPC error with
//! `Content-Type: application/json`, whoever refused.

use axum::body::{Body, to_bytes};
use axum::http::header::{ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ErrorCode, ErrorData};
use serde_json::Value;

use crate::error::RequestError;
use crate::wire::response::error_reply;

/// The most of a plain-text error body that is kept as the message.
const MAX_MESSAGE: usize = 64 * 1024;

/// `status` with `error` as the body of a response to the message whose id
/// is `id`.
fn json_error(status: StatusCode, id: &Value, error: &ErrorData) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        error_reply(id, error),
    )
        .into_response()
}

/// A message refused before anything looked at it.
pub(super) fn refused(err: &RequestError, id: &Value) -> Response {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_error(status, id, &err.to_error_data())
}

pub(super) fn unsupported_media_type(id: &Value) -> Response {
    let error = ErrorData::invalid_request("Content-Type must be application/json", None);
    json_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, id, &error)
}

pub(super) fn payload_too_large() -> Response {
    let error = ErrorData::invalid_request("the body is larger than 4 MiB", None);
    json_error(StatusCode::PAYLOAD_TOO_LARGE, &Value::Null, &error)
}

pub(super) async fn method_not_allowed() -> Response {
    let error = ErrorData::invalid_request("the MCP endpoint takes POST only", None);
    let mut response = json_error(StatusCode::METHOD_NOT_ALLOWED, &Value::Null, &error);
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

pub(super) fn method_removed(id: &Value, method: &str) -> Response {
    let error = ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} was removed in MCP 2026-07-28; use subscriptions/listen"),
        None,
    );
    json_error(StatusCode::NOT_FOUND, id, &error)
}

/// The service's answer, with an error answered in plain text (rmcp's
/// 406 or 415, say) turned into a JSON-RPC error that keeps its status,
/// its other headers and its text as the message.
pub(super) async fn into_json_error(response: Response, id: &Value) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if is_json || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = to_bytes(body, MAX_MESSAGE).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = match text.trim() {
        "" => status.canonical_reason().unwrap_or("error").to_owned(),
        text => text.to_owned(),
    };
    let code = if status.is_server_error() {
        ErrorCode::INTERNAL_ERROR
    } else {
        ErrorCode::INVALID_REQUEST
    };
    let body = error_reply(id, &ErrorData::new(code, message, None));
    parts.headers.remove(CONTENT_LENGTH);
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(body))
}
