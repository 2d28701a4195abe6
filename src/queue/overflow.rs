//! What a full queue does with one more event.

use crate::error::ParseOverflowError;

/// A listener's overflow policy: what happens when an event arrives for a
/// listener whose queue is at capacity.
///
/// Publishing never waits for a listener, so a full queue must give
/// something up; the policy says what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Overflow {
    /// Evict the oldest queued event to make room. The listener stays
    /// subscribed and learns how many events it lost through
    /// [`Next::Lagged`](crate::Next::Lagged), like
    /// `tokio::sync::broadcast`'s `Lagged`, but per listener and counted in
    /// the statistics.
    #[default]
    DropOldest,
    /// End the listener's stream with
    /// [`StreamError::Overflow`](crate::error::StreamError::Overflow), which says how
    /// many events were lost, discard what it held and free its slot. The
    /// client can tell this from a graceful end and listen again.
    Disconnect,
}

impl Overflow {
    /// The policy's name as used in option values and metrics labels:
    /// `drop-oldest` or `disconnect`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DropOldest => "drop-oldest",
            Self::Disconnect => "disconnect",
        }
    }
}

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Overflow {
    type Err = ParseOverflowError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "drop-oldest" => Ok(Self::DropOldest),
            "disconnect" => Ok(Self::Disconnect),
            _ => Err(ParseOverflowError(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for policy in [Overflow::DropOldest, Overflow::Disconnect] {
            assert_eq!(policy.as_str().parse::<Overflow>(), Ok(policy));
        }
        let err = "drop-newest".parse::<Overflow>().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"unknown overflow policy "drop-newest": expected drop-oldest or disconnect"#
        );
    }
}
