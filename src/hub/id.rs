//! A listener's identity.

use std::fmt;

/// A listener's identity within its hub, unique for the hub's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ListenerId(pub(crate) u64);

impl ListenerId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ListenerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
