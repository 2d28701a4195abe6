//! The relay's one error: a broker it cannot be joined to, or a hub that
//! already has a relay.

use std::fmt;

/// Why [`Broker::from_url`](super::Broker::from_url) refused a URL, or
/// [`Relay::new`](super::Relay::new) a hub.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayError {
    /// A scheme this build cannot relay through (its feature off, or no
    /// such broker).
    Unsupported(String),
    /// The broker's client refused the URL.
    InvalidUrl {
        /// The URL.
        url: String,
        /// What the client said.
        reason: String,
    },
    /// The hub already has a relay attached: a hub publishes through one.
    AlreadyAttached,
}

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(url) => write!(
                f,
                "no relay for {url} (redis:// needs feature `redis`, nats:// feature `nats`)"
            ),
            Self::InvalidUrl { url, reason } => write!(f, "invalid broker url {url}: {reason}"),
            Self::AlreadyAttached => f.write_str("the hub already has a relay attached"),
        }
    }
}

impl std::error::Error for RelayError {}
