//! Why a gateway could not open.

use std::fmt;

use mcp_subscriptions_client::SubscribeError;

/// Why [`GatewayBuilder::open`](crate::GatewayBuilder::open) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum GatewayError {
    /// No upstream was given.
    NoUpstreams,
    /// An upstream's name is not one a namespace can carry (see
    /// [`Upstream`](crate::Upstream)).
    InvalidName(String),
    /// Two upstreams have this name.
    DuplicateName(String),
    /// This upstream could not be discovered or listened to.
    Upstream {
        /// Its name.
        name: String,
        /// What failed.
        error: SubscribeError,
    },
}

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoUpstreams => f.write_str("a gateway needs at least one upstream"),
            Self::InvalidName(name) => write!(
                f,
                "upstream name {name:?} must start with a letter and hold only letters, digits, '-' and '.'"
            ),
            Self::DuplicateName(name) => write!(f, "two upstreams are named {name:?}"),
            Self::Upstream { name, error } => write!(f, "upstream {name}: {error}"),
        }
    }
}

impl std::error::Error for GatewayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Upstream { error, .. } => Some(error),
            _ => None,
        }
    }
}
