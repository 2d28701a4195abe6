//! The client's errors: why a subscription could not be opened, and how a
//! server broke the protocol.

use std::fmt;
use std::time::Duration;

use rmcp::model::ErrorData;
use serde_json::Value;

use mcp_subscriptions::Filter;

/// How a server broke the listen protocol. The subscription ends with
/// [`End::Protocol`](crate::End::Protocol) (or, before the acknowledgement,
/// fails to open with [`SubscribeError::Protocol`]); the stream is closed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A message that is not JSON.
    InvalidJson(String),
    /// JSON that is not a JSON-RPC message the stream may carry.
    InvalidMessage(String),
    /// A notification, or a result, before the acknowledgement.
    BeforeAcknowledgement {
        /// What arrived instead: a method, or `result`.
        what: String,
    },
    /// The acknowledgement's `notifications` is missing or malformed.
    InvalidAcknowledgement(String),
    /// The acknowledgement grants something the request did not ask for.
    GrantedMore {
        /// What the server said it granted.
        granted: Filter,
    },
    /// A notification stamped with another subscription's id, or none.
    WrongSubscriptionId {
        /// The id it carried, if any.
        found: Option<Value>,
    },
    /// A core notification the acknowledgement did not grant.
    NotGranted {
        /// Its method.
        method: String,
    },
    /// No acknowledgement arrived within the configured time.
    NoAcknowledgement {
        /// How long the client waited.
        waited: Duration,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidJson(err) => {
                write!(f, "the server sent a message that is not JSON: {err}")
            }
            Self::InvalidMessage(what) => {
                write!(f, "the server sent an invalid JSON-RPC message: {what}")
            }
            Self::BeforeAcknowledgement { what } => {
                write!(f, "the server sent {what} before the acknowledgement")
            }
            Self::InvalidAcknowledgement(why) => write!(f, "invalid acknowledgement: {why}"),
            Self::GrantedMore { granted } => write!(
                f,
                "the acknowledgement grants more than was asked: {}",
                serde_json::to_string(granted).unwrap_or_default()
            ),
            Self::WrongSubscriptionId { found: Some(id) } => {
                write!(
                    f,
                    "a notification stamped with another subscription id {id}"
                )
            }
            Self::WrongSubscriptionId { found: None } => {
                f.write_str("a notification without a subscription id")
            }
            Self::NotGranted { method } => {
                write!(f, "the server sent {method}, which it did not grant")
            }
            Self::NoAcknowledgement { waited } => {
                write!(f, "no acknowledgement within {waited:?}")
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

/// Why a subscription could not be opened.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The transport could not reach the server (connection refused, a
    /// reset, a process that would not start).
    Connect(String),
    /// The request could not be made at all: a malformed URL, a header
    /// that is not valid, a root certificate that does not parse, or an
    /// `https://` URL without the `tls` feature.
    Invalid(String),
    /// The TLS handshake failed: the server's certificate is not trusted,
    /// has expired or names another host.
    Tls(String),
    /// The server answered with an HTTP status other than success and no
    /// JSON-RPC error in its body: a 401 from an authentication layer, a
    /// 404, a 503 from a proxy.
    Status {
        /// The HTTP status.
        status: u16,
        /// The body, as text.
        body: String,
    },
    /// The server answered with a JSON-RPC error: a listen request before
    /// any acknowledgement (`-32602` invalid params, `-32603` `Subscription
    /// limit reached`, `-32021` a missing client capability), or any other
    /// request (`-32601` for a method the server does not serve).
    Refused(ErrorData),
    /// The server broke the protocol before acknowledging.
    Protocol(ProtocolError),
    /// The transport closed before the acknowledgement (on the notification
    /// channel: a clean close without a frame, the ask not served).
    Closed,
}

impl fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(why) => write!(f, "cannot reach the server: {why}"),
            Self::Invalid(why) => write!(f, "the request cannot be made: {why}"),
            Self::Tls(why) => write!(f, "TLS failed: {why}"),
            Self::Status { status, body } => write!(f, "HTTP {status}: {body}"),
            Self::Refused(error) => {
                write!(f, "refused ({}): {}", error.code.0, error.message)
            }
            Self::Protocol(err) => write!(f, "protocol error: {err}"),
            Self::Closed => f.write_str("the transport closed before the acknowledgement"),
        }
    }
}

impl SubscribeError {
    /// Whether trying again later may succeed: the server unreachable, an
    /// HTTP 408, 425, 429 or 5xx, a full hub or a principal at its limit
    /// (`-32603` `Subscription limit reached`), no acknowledgement in time,
    /// or a transport closed before it. Everything else (a 4xx such as
    /// 401 or 403, a refusal for the request itself, a protocol error) is
    /// permanent: the same request gets the same answer.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Connect(_) | Self::Closed => true,
            Self::Invalid(_) | Self::Tls(_) => false,
            Self::Status { status, .. } => says_try_later(*status),
            Self::Refused(error) => error.message == LIMIT_REACHED,
            Self::Protocol(err) => matches!(err, ProtocolError::NoAcknowledgement { .. }),
        }
    }
}

/// Whether an HTTP status says to try again later.
pub(super) fn says_try_later(status: u16) -> bool {
    matches!(status, 408 | 425 | 429 | 500..)
}

/// The message of a listen refused for a limit, which frees as streams end.
const LIMIT_REACHED: &str = "Subscription limit reached";

// The inner error is part of the message, so it is not also a `source`.
impl std::error::Error for SubscribeError {}

impl From<ProtocolError> for SubscribeError {
    fn from(err: ProtocolError) -> Self {
        Self::Protocol(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_subscriptions::error::{OpenError, StreamError};

    #[test]
    fn transient_failures_are_those_that_trying_later_may_cure() {
        let status = |status| SubscribeError::Status {
            status,
            body: String::new(),
        };
        let limit = OpenError::LimitReached { limit: 1 }.to_error_data();
        for transient in [
            SubscribeError::Connect("refused".into()),
            SubscribeError::Closed,
            status(503),
            status(429),
            SubscribeError::Refused(limit),
            ProtocolError::NoAcknowledgement {
                waited: Duration::from_secs(1),
            }
            .into(),
        ] {
            assert!(transient.is_transient(), "{transient}");
        }
        for permanent in [
            SubscribeError::Invalid("https".into()),
            status(401),
            status(404),
            SubscribeError::Refused(ErrorData::invalid_params("no", None)),
            SubscribeError::Refused(StreamError::Revoked.to_error_data()),
            ProtocolError::InvalidJson("x".into()).into(),
        ] {
            assert!(!permanent.is_transient(), "{permanent}");
        }
    }
}
