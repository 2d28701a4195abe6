//! What reading a subscription yields, and how it ends.

use std::fmt;
use std::time::Duration;

use rmcp::model::ErrorData;

use crate::error::{ProtocolError, SubscribeError};
use mcp_subscriptions::Event;
use mcp_subscriptions::Filter;
use mcp_subscriptions::Next;
use mcp_subscriptions::error::{
    LIFETIME_ERROR_CODE, OVERFLOW_ERROR_CODE, REVOKED_ERROR_CODE, StreamError,
};

/// One item read from a [`Subscription`](crate::Subscription).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Item {
    /// A notification, in the order the server sent it. Its `_meta`
    /// subscription id is removed; [`Event::kind`] says what changed.
    Event(Event),
    /// This many events were lost since the last item: evicted from the
    /// client's buffer under [`BufferPolicy::DropOldest`](crate::BufferPolicy),
    /// or (in process) from the source's own queue. The subscription goes on.
    Lagged(u64),
    /// The stream ended abruptly and the client is about to listen again
    /// (one item per attempt).
    Relistening(Relistening),
    /// A new acknowledgement arrived after re-listening: nothing in between
    /// was replayed, so refetch what this filter names (the granted
    /// list kinds and URIs). Events after it come from the new stream.
    Resynced(Filter),
    /// The subscription ended; nothing follows.
    End(End),
}

impl Item {
    /// Whether nothing follows this item.
    pub fn is_end(&self) -> bool {
        matches!(self, Self::End(_))
    }
}

/// One attempt to listen again.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Relistening {
    /// 1 for the first attempt after an end, counting up.
    pub attempt: u32,
    /// How long the client waits before this attempt (backoff and jitter).
    pub delay: Duration,
    /// Why: the end that started re-listening, or why the previous attempt
    /// failed.
    pub reason: String,
}

/// How a subscription ended. Each case is one the caller can act on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum End {
    /// The server completed the stream gracefully (its `complete` result;
    /// on the notification channel, a clean close after a frame).
    Complete,
    /// The server ended the stream with a JSON-RPC error; an overflow of
    /// the server's queue carries [`OVERFLOW_ERROR_CODE`] and
    /// `data: {"reason":"overflow","dropped":N}` ([`End::is_server_overflow`]).
    Failed(ErrorData),
    /// The transport closed without a result (a killed server, a dropped
    /// connection).
    Abrupt(String),
    /// On the notification channel: the server closed the channel cleanly
    /// without sending a single frame, so the ask was not served.
    NotServed,
    /// The application cancelled the subscription.
    Cancelled,
    /// The client's own buffer overflowed under
    /// [`BufferPolicy::Disconnect`](crate::BufferPolicy::Disconnect).
    Overflowed {
        /// The events lost: the one that did not fit and every event still
        /// buffered.
        dropped: u64,
    },
    /// The server broke the protocol; the stream was closed.
    Protocol(ProtocolError),
    /// The server revoked the authorization the stream was opened with
    /// ([`REVOKED_ERROR_CODE`], `data: {"reason":"revoked"}`). Never
    /// re-listened with the same credentials: only when a
    /// [`Credentials`](crate::Credentials) hook gives new ones.
    Revoked(ErrorData),
    /// Listening again was refused for good (see
    /// [`SubscribeError::is_transient`](crate::SubscribeError::is_transient):
    /// a 401, a request the server will never grant), and no
    /// [`Credentials`](crate::Credentials) hook gave new credentials.
    Refused(SubscribeError),
    /// The authorization the stream was opened with expired
    /// ([`REVOKED_ERROR_CODE`], `data: {"reason":"expired"}`); re-listened
    /// as [`End::Revoked`] is.
    Expired(ErrorData),
}

impl End {
    /// The end a server's JSON-RPC error makes: [`End::Revoked`] or
    /// [`End::Expired`] for [`REVOKED_ERROR_CODE`] with that reason,
    /// [`End::Failed`] for any other.
    pub(super) fn failed(error: ErrorData) -> Self {
        let reason = error.data.as_ref().and_then(|data| data.get("reason"));
        match reason.and_then(|reason| reason.as_str()) {
            Some("revoked") if error.code == REVOKED_ERROR_CODE => Self::Revoked(error),
            Some("expired") if error.code == REVOKED_ERROR_CODE => Self::Expired(error),
            _ => Self::Failed(error),
        }
    }

    /// The server's JSON-RPC error, for the ends that carry one.
    pub fn error(&self) -> Option<&ErrorData> {
        match self {
            Self::Failed(error) | Self::Revoked(error) | Self::Expired(error) => Some(error),
            _ => None,
        }
    }

    /// Whether the server ended the stream for its authorization: revoked
    /// or expired.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, Self::Revoked(_) | Self::Expired(_))
    }

    /// Whether the server dropped us for overflowing its queue.
    pub fn is_server_overflow(&self) -> bool {
        matches!(self, Self::Failed(error) if error.code == OVERFLOW_ERROR_CODE)
    }

    /// Whether the server ended the stream at the end of the lifetime it
    /// gives every stream ([`LIFETIME_ERROR_CODE`]): nothing is wrong, and
    /// the stream is listened to again at once.
    pub fn is_server_lifetime(&self) -> bool {
        matches!(self, Self::Failed(error) if error.code == LIFETIME_ERROR_CODE)
    }

    /// Whether a re-listen may follow this end: an abrupt end, an unserved
    /// channel ask, a server overflow or lifetime, or (with new
    /// credentials) a revoked or expired authorization; never a cancel, a
    /// protocol error, any other server error (a stream replaced by a
    /// newer one of its principal among them: listening again would take
    /// that one's place in turn) or (unless `after_complete`) a graceful end.
    pub(crate) fn may_relisten(&self, after_complete: bool) -> bool {
        match self {
            Self::Abrupt(_) | Self::NotServed | Self::Revoked(_) | Self::Expired(_) => true,
            Self::Failed(_) => self.is_server_overflow() || self.is_server_lifetime(),
            Self::Complete => after_complete,
            _ => false,
        }
    }

    /// A served stream's end, as the client reports it: in process, and
    /// wherever a transport knows no more than [`Next`] says.
    pub(super) fn of(last: Next) -> Self {
        match last {
            Next::Complete => Self::Complete,
            Next::Failed(err) => Self::failed(err.to_error_data()),
            _ => Self::Abrupt("the source closed the stream".into()),
        }
    }

    /// This end as a served stream's last item: a graceful end completes,
    /// every other is a failure with its JSON-RPC error.
    pub(super) fn as_next(&self) -> Next {
        let error = match self {
            Self::Complete => return Next::Complete,
            Self::Failed(error) | Self::Revoked(error) | Self::Expired(error) => error.clone(),
            other => ErrorData::internal_error(other.to_string(), None),
        };
        Next::Failed(StreamError::Source(Box::new(error)))
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Complete => f.write_str("completed by the server"),
            Self::Failed(error) => write!(f, "failed ({}): {}", error.code.0, error.message),
            Self::Abrupt(why) => write!(f, "ended abruptly: {why}"),
            Self::NotServed => f.write_str("the channel was closed without being served"),
            Self::Cancelled => f.write_str("cancelled"),
            Self::Overflowed { dropped } => {
                write!(f, "the client's buffer overflowed, losing {dropped} events")
            }
            Self::Protocol(err) => write!(f, "protocol error: {err}"),
            Self::Revoked(error) => write!(f, "revoked by the server: {}", error.message),
            Self::Refused(err) => write!(f, "listening again was refused: {err}"),
            Self::Expired(error) => write!(f, "expired: {}", error.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_error_ends_as_revoked_expired_or_failed_by_its_code_and_reason() {
        let end = |err: StreamError| End::failed(err.to_error_data());
        assert!(matches!(end(StreamError::Revoked), End::Revoked(_)));
        assert!(matches!(end(StreamError::Expired), End::Expired(_)));
        assert!(end(StreamError::Overflow { dropped: 2 }).is_server_overflow());
        // The reason alone, or the code alone, is not enough.
        let other_code =
            ErrorData::internal_error("x", Some(serde_json::json!({"reason": "revoked"})));
        assert!(matches!(End::failed(other_code), End::Failed(_)));
        let no_reason = ErrorData::new(REVOKED_ERROR_CODE, "x", None);
        assert!(matches!(End::failed(no_reason), End::Failed(_)));
        let revoked = end(StreamError::Revoked);
        assert!(revoked.is_unauthorized() && revoked.may_relisten(false));
        assert_eq!(revoked.error().map(|e| e.code), Some(REVOKED_ERROR_CODE));
        let replaced = end(StreamError::Replaced);
        assert!(matches!(replaced, End::Failed(_)));
        assert!(
            !replaced.may_relisten(true),
            "two streams would evict each other"
        );
        assert_eq!(
            revoked.as_next(),
            Next::Failed(StreamError::Source(Box::new(
                revoked.error().unwrap().clone()
            )))
        );
    }
}
