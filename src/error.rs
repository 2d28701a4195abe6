//! Every public error of the crate, one type per operation.
//!
//! Each error knows the JSON-RPC error it becomes on the wire
//! ([`to_error_data`](OpenError::to_error_data)), so a transport never has to
//! guess a code: malformed listen params are `-32602`, a full server is
//! `-32603` with the message `Subscription limit reached`, and a listener
//! disconnected for overflow ends with [`OVERFLOW_ERROR_CODE`] and
//! `data: {"reason":"overflow","dropped":N}`; one revoked or expired ends with
//! [`REVOKED_ERROR_CODE`] and `data: {"reason":"revoked"}` (or `"expired"`).

use std::fmt;

use rmcp::model::{ErrorCode, ErrorData, RequestId};
use serde_json::json;

use crate::wire::request_id_json;
use crate::wire::response::error_response;

/// The JSON-RPC error code that ends a stream whose listener was disconnected
/// because its queue overflowed (a server-defined code, so that a client can
/// tell it from a source failure and simply listen again).
pub const OVERFLOW_ERROR_CODE: ErrorCode = ErrorCode(-32000);

/// The JSON-RPC error code that ends a stream whose authorization ended:
/// its principal or label was revoked, or the expiry it was granted with
/// passed. `error.data.reason` says which (`"revoked"` or `"expired"`). A
/// server-defined code apart from overflow's, so that a client can tell
/// that listening again with the same credentials is pointless.
pub const REVOKED_ERROR_CODE: ErrorCode = ErrorCode(-32003);

/// The JSON-RPC error code that ends a stream at the end of the lifetime
/// its server gives every stream
/// (`ListenService::with_max_stream_lifetime`, with a transport feature),
/// with `data: {"reason":"lifetime"}`. Nothing is wrong: the client is to
/// listen again at once (and, behind a load balancer, may land on another
/// replica). A server-defined code apart from the others, so that a client
/// can tell it from a failure.
pub const LIFETIME_ERROR_CODE: ErrorCode = ErrorCode(-32004);

/// The JSON-RPC error code that ends a stream whose place a newer stream
/// of the same principal took, at the principal's cap
/// ([`CapPolicy::ReplaceOldest`](crate::CapPolicy::ReplaceOldest)), with
/// `data: {"reason":"replaced"}`. A server-defined code apart from the
/// others: the client's user listens elsewhere now, so listening again at
/// once would only take that place back.
pub const REPLACED_ERROR_CODE: ErrorCode = ErrorCode(-32005);

/// Why a message posted to the MCP endpoint was refused before anything
/// looked at what it asks: it is not JSON, not a JSON-RPC message, or its
/// headers disagree with it.
///
/// Each becomes HTTP 400 (see [`status`](Self::status)) with a JSON-RPC
/// error body ([`to_error_data`](Self::to_error_data)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The body is not JSON: empty, truncated or not JSON at all (`-32700`).
    NotJson,
    /// The body is JSON but not a valid JSON-RPC message (`-32600`).
    InvalidMessage {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A header says something else than the body (`-32020`).
    HeaderMismatch {
        /// The header, as spelled in the specification.
        header: &'static str,
        /// What the header says.
        header_value: String,
        /// What the body says.
        body_value: String,
    },
    /// The request names a protocol version the server does not speak
    /// (`-32022`).
    UnsupportedVersion {
        /// The version the request named.
        requested: String,
        /// The versions the server speaks.
        supported: Vec<String>,
    },
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson => f.write_str("the body is not JSON"),
            Self::InvalidMessage { reason } => write!(f, "not a valid JSON-RPC message: {reason}"),
            Self::HeaderMismatch {
                header,
                header_value,
                body_value,
            } => write!(
                f,
                "the {header} header ({header_value}) does not match the request ({body_value})"
            ),
            Self::UnsupportedVersion { requested, .. } => {
                write!(f, "unsupported protocol version {requested}")
            }
        }
    }
}

impl std::error::Error for RequestError {}

impl RequestError {
    /// The HTTP status to answer with: 400 Bad Request for every variant.
    pub fn status(&self) -> u16 {
        400
    }

    /// The JSON-RPC error: `-32700` (parse error), `-32600` (invalid
    /// request), `ErrorCode::HEADER_MISMATCH` (-32020), or
    /// `ErrorCode::UNSUPPORTED_PROTOCOL_VERSION` (-32022) with
    /// `data: {"supported": [...], "requested": "..."}`.
    pub fn to_error_data(&self) -> ErrorData {
        match self {
            Self::NotJson => ErrorData::new(ErrorCode::PARSE_ERROR, "Parse error", None),
            Self::InvalidMessage { .. } => {
                ErrorData::new(ErrorCode::INVALID_REQUEST, self.to_string(), None)
            }
            Self::HeaderMismatch { .. } => {
                ErrorData::new(ErrorCode::HEADER_MISMATCH, self.to_string(), None)
            }
            Self::UnsupportedVersion {
                requested,
                supported,
            } => ErrorData::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                Some(json!({ "supported": supported, "requested": requested })),
            ),
        }
    }
}

/// Why the params of a `subscriptions/listen` request were refused.
///
/// Every variant becomes JSON-RPC error `-32602` (invalid params), sent before
/// anything else on the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenParamsError {
    /// The request has no `params` object at all.
    MissingParams,
    /// `params.notifications` is absent.
    MissingNotifications,
    /// `params.notifications` is present but not an object.
    NotificationsNotObject,
    /// A kind flag such as `toolsListChanged` is not a boolean.
    FlagNotBoolean {
        /// The offending field, as spelled on the wire.
        field: &'static str,
    },
    /// `resourceSubscriptions` is not an array.
    UrisNotArray,
    /// An element of `resourceSubscriptions` is not a string.
    UriNotString {
        /// Its position in the array.
        index: usize,
    },
    /// More distinct URIs than the server accepts in one request.
    TooManyUris {
        /// How many URIs the request named.
        count: usize,
        /// The configured limit.
        limit: usize,
    },
    /// A `_meta` entry the serving layer reads (the client's capabilities
    /// or info) is present but malformed.
    InvalidMeta {
        /// The `_meta` key.
        key: &'static str,
    },
    /// An extension's filter field failed that extension's validation.
    InvalidExtensionField {
        /// The field, as spelled on the wire (for example `taskIds`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for ListenParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingParams => f.write_str("missing params"),
            Self::MissingNotifications => f.write_str("missing params.notifications"),
            Self::NotificationsNotObject => f.write_str("params.notifications must be an object"),
            Self::FlagNotBoolean { field } => {
                write!(f, "params.notifications.{field} must be a boolean")
            }
            Self::UrisNotArray => f.write_str(
                "params.notifications.resourceSubscriptions must be an array of strings",
            ),
            Self::UriNotString { index } => write!(
                f,
                "params.notifications.resourceSubscriptions[{index}] must be a string"
            ),
            Self::TooManyUris { count, limit } => write!(
                f,
                "too many resource subscriptions: {count} requested, at most {limit} allowed"
            ),
            Self::InvalidMeta { key } => write!(f, "params._meta[{key:?}] is malformed"),
            Self::InvalidExtensionField { field, reason } => {
                write!(f, "params.notifications.{field} {reason}")
            }
        }
    }
}

impl std::error::Error for ListenParamsError {}

impl ListenParamsError {
    /// The JSON-RPC error for this refusal: code `-32602`, this error's text
    /// as the message.
    pub fn to_error_data(&self) -> ErrorData {
        ErrorData::new(ErrorCode::INVALID_PARAMS, self.to_string(), None)
    }
}

/// Why a listener could not be opened.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OpenError {
    /// The requested filter is invalid (for example too many URIs).
    InvalidParams(ListenParamsError),
    /// The hub already serves its maximum number of listeners.
    LimitReached {
        /// The configured maximum.
        limit: usize,
    },
    /// The principal already holds its maximum number of streams.
    PrincipalLimitReached {
        /// The configured maximum per principal.
        limit: usize,
    },
    /// The request names a filter field of an extension the client did not
    /// declare in its capabilities, and the extension requires it.
    CapabilityRequired {
        /// The extension's identifier, such as
        /// `io.modelcontextprotocol/tasks`.
        extension: String,
    },
    /// The hub was completed and accepts no new listeners.
    Completed,
    /// A hand-written [`Source`](crate::Source) refused with its own error.
    Refused(ErrorData),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidParams(err) => write!(f, "invalid listen params: {err}"),
            Self::LimitReached { limit } => {
                write!(f, "subscription limit reached ({limit} listeners)")
            }
            Self::PrincipalLimitReached { limit } => {
                write!(
                    f,
                    "subscription limit reached ({limit} streams per principal)"
                )
            }
            Self::CapabilityRequired { extension } => {
                write!(f, "the client must declare the extension {extension}")
            }
            Self::Completed => f.write_str("the hub is complete and accepts no new listeners"),
            Self::Refused(data) => write!(f, "refused: {}", data.message),
        }
    }
}

// The inner error is part of the message, so it is not also a `source`:
// reporters would print it twice.
impl std::error::Error for OpenError {}

impl From<ListenParamsError> for OpenError {
    fn from(err: ListenParamsError) -> Self {
        Self::InvalidParams(err)
    }
}

impl OpenError {
    /// The JSON-RPC error to answer the listen request with.
    ///
    /// [`LimitReached`](Self::LimitReached) and
    /// [`PrincipalLimitReached`](Self::PrincipalLimitReached) are `-32603`
    /// with the exact message `Subscription limit reached` that the protocol
    /// names; [`CapabilityRequired`](Self::CapabilityRequired) is
    /// `ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY` (-32021) with
    /// `data: {"requiredCapabilities": {"extensions": {"<id>": {}}}}`.
    pub fn to_error_data(&self) -> ErrorData {
        match self {
            Self::InvalidParams(err) => err.to_error_data(),
            Self::LimitReached { limit } => ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                "Subscription limit reached",
                Some(json!({ "limit": limit })),
            ),
            Self::PrincipalLimitReached { limit } => ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                "Subscription limit reached",
                Some(json!({ "limit": limit, "scope": "principal" })),
            ),
            Self::CapabilityRequired { extension } => ErrorData::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("Missing required client capability: extension {extension}"),
                Some(json!({ "requiredCapabilities": { "extensions": { extension: {} } } })),
            ),
            Self::Completed => {
                ErrorData::new(ErrorCode::INTERNAL_ERROR, "Server is shutting down", None)
            }
            Self::Refused(data) => data.clone(),
        }
    }
}

/// Why a stream ended in failure rather than gracefully.
///
/// A transport answers the listen request with
/// [`to_error_data`](Self::to_error_data) so that the client can tell this
/// apart from a graceful completion and listen again.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamError {
    /// The listener's queue overflowed under the
    /// [`Disconnect`](crate::Overflow::Disconnect) policy.
    Overflow {
        /// How many events the listener lost: the one that did not fit and
        /// everything still queued at that moment.
        dropped: u64,
    },
    /// The stream's principal or label was revoked
    /// ([`Hub::revoke`](crate::Hub::revoke)): what it held was discarded.
    Revoked,
    /// The stream reached the expiry its authorizer gave it
    /// ([`Grant::with_expiry`](crate::Grant::with_expiry)).
    Expired,
    /// The stream reached the lifetime its service gives every stream
    /// (`ListenService::with_max_stream_lifetime`).
    Lifetime,
    /// A newer stream of the same principal took its place at the
    /// principal's cap ([`CapPolicy::ReplaceOldest`](crate::CapPolicy::ReplaceOldest)).
    Replaced,
    /// A hand-written [`Source`](crate::Source) failed with its own error.
    /// Boxed, so that every [`Next`](crate::Next) a reader moves stays
    /// small (24 bytes, not 80).
    Source(Box<ErrorData>),
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Overflow { dropped } => {
                write!(
                    f,
                    "listener disconnected for overflow after losing {dropped} events"
                )
            }
            Self::Revoked => f.write_str("stream revoked"),
            Self::Expired => f.write_str("stream expired"),
            Self::Lifetime => f.write_str("stream lifetime reached"),
            Self::Replaced => f.write_str("stream replaced by a newer one of its principal"),
            Self::Source(data) => write!(f, "source failed: {}", data.message),
        }
    }
}

impl std::error::Error for StreamError {}

impl StreamError {
    /// The JSON-RPC error that ends the stream.
    ///
    /// [`Overflow`](Self::Overflow) is [`OVERFLOW_ERROR_CODE`] with
    /// `data: {"reason":"overflow","dropped":N}`.
    /// [`Revoked`](Self::Revoked) and [`Expired`](Self::Expired) are
    /// [`REVOKED_ERROR_CODE`] with `data: {"reason":"revoked"}` or
    /// `{"reason":"expired"}`. [`Lifetime`](Self::Lifetime) is
    /// [`LIFETIME_ERROR_CODE`] with `data: {"reason":"lifetime"}`.
    /// [`Replaced`](Self::Replaced) is [`REPLACED_ERROR_CODE`] with
    /// `data: {"reason":"replaced"}`.
    pub fn to_error_data(&self) -> ErrorData {
        match self {
            Self::Overflow { dropped } => ErrorData::new(
                OVERFLOW_ERROR_CODE,
                "Subscription overflow",
                Some(json!({ "reason": "overflow", "dropped": dropped })),
            ),
            Self::Revoked => ErrorData::new(
                REVOKED_ERROR_CODE,
                "Subscription revoked",
                Some(json!({ "reason": "revoked" })),
            ),
            Self::Expired => ErrorData::new(
                REVOKED_ERROR_CODE,
                "Subscription expired",
                Some(json!({ "reason": "expired" })),
            ),
            Self::Lifetime => ErrorData::new(
                LIFETIME_ERROR_CODE,
                "Subscription lifetime reached",
                Some(json!({ "reason": "lifetime" })),
            ),
            Self::Replaced => ErrorData::new(
                REPLACED_ERROR_CODE,
                "Subscription replaced",
                Some(json!({ "reason": "replaced" })),
            ),
            Self::Source(data) => (**data).clone(),
        }
    }
}

/// A string that names no [`Overflow`](crate::Overflow) policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseOverflowError(pub(crate) String);

impl fmt::Display for ParseOverflowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown overflow policy {:?}: expected drop-oldest or disconnect",
            self.0
        )
    }
}

impl std::error::Error for ParseOverflowError {}

/// A listen request refused before its acknowledgement.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    id: RequestId,
    error: ErrorData,
}

impl Refusal {
    pub(crate) fn new(id: RequestId, error: ErrorData) -> Self {
        Self { id, error }
    }

    /// The JSON-RPC error the request is answered with.
    pub fn error(&self) -> &ErrorData {
        &self.error
    }

    /// The error response, as the bytes to write.
    pub fn to_message(&self) -> Vec<u8> {
        error_response(&request_id_json(&self.id), &self.error)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "listen refused ({}): {}",
            self.error.code.0, self.error.message
        )
    }
}

impl std::error::Error for Refusal {}

/// Why a notification-channel frame could not be decoded.
#[cfg(feature = "channel")]
#[derive(Debug)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame has no bytes at all.
    Empty,
    /// The tag byte is neither `0` (notification) nor `1` (error).
    UnknownTag(u8),
    /// The body is not valid JSON for its tag.
    InvalidBody {
        /// The frame's tag.
        tag: u8,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
}

#[cfg(feature = "channel")]
impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty channel frame"),
            Self::UnknownTag(tag) => write!(f, "unknown channel frame tag {tag}"),
            Self::InvalidBody { tag, source } => {
                write!(f, "invalid body for channel frame tag {tag}: {source}")
            }
        }
    }
}

// The JSON error is part of the message, so it is not also a `source`.
#[cfg(feature = "channel")]
impl std::error::Error for FrameError {}
