//! How a catalog is doing: its listen stream, and each part's fetches.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use rmcp::model::CacheScope;

use super::entry::CatalogKind;
use crate::error::SubscribeError;
use crate::item::End;

/// A catalog's health at one moment ([`Catalog::health`](super::Catalog::health)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Health {
    /// The listen stream that tells the catalog what changed.
    pub listen: ListenState,
    /// `server/discover`, fetched on opening and after each re-listen.
    pub discovery: FetchHealth,
    /// Each list the server has, by kind; a kind the server does not
    /// advertise is absent.
    pub lists: BTreeMap<CatalogKind, FetchHealth>,
    /// Each watched resource, by URI.
    pub contents: BTreeMap<String, FetchHealth>,
}

impl Health {
    /// The health of `kind`'s list, if the server has one.
    pub fn list(&self, kind: CatalogKind) -> Option<&FetchHealth> {
        self.lists.get(&kind)
    }
}

/// One line: the listen's state, then the parts whose last fetch failed,
/// as in `re-listening (attempt 3: cannot reach ...); stale: tools`.
impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.listen)?;
        let lists = self
            .lists
            .iter()
            .filter(|(_, health)| health.is_stale())
            .map(|(kind, _)| format!("{kind:?}").to_lowercase());
        let contents = self
            .contents
            .iter()
            .filter(|(_, health)| health.is_stale())
            .map(|(uri, _)| uri.clone());
        let stale: Vec<String> = (self.discovery.is_stale().then(|| "discovery".to_owned()))
            .into_iter()
            .chain(lists)
            .chain(contents)
            .collect();
        if !stale.is_empty() {
            write!(f, "; stale: {}", stale.join(", "))?;
        }
        Ok(())
    }
}

/// The listen stream's state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListenState {
    /// Acknowledged and open: changes arrive as they happen.
    Listening,
    /// Ended abruptly (or gracefully, a server restarting); listening again.
    Relistening {
        /// 1 for the first attempt, counting up.
        attempt: u32,
        /// Why.
        reason: String,
    },
    /// Ended for good: the catalog now refreshes only what has a `ttlMs`.
    Ended(End),
    /// The server advertises no change notifications for anything the
    /// catalog keeps: lists refresh only by their `ttlMs`.
    NotListening,
}

impl ListenState {
    /// Whether the server is there as far as the listen can tell: its
    /// stream is open, or it has no changes to listen to. A server that is
    /// down, restarting or refusing is not.
    pub fn is_up(&self) -> bool {
        matches!(self, Self::Listening | Self::NotListening)
    }
}

impl fmt::Display for ListenState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Listening => f.write_str("listening"),
            Self::Relistening { attempt, reason } => {
                write!(f, "re-listening (attempt {attempt}: {reason})")
            }
            Self::Ended(end) => write!(f, "ended: {end}"),
            Self::NotListening => f.write_str("not listening (nothing to listen to)"),
        }
    }
}

/// One part's fetches: a list, discovery, or a watched resource.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct FetchHealth {
    /// Fetches finished, successful or not.
    pub fetches: u64,
    /// When the last successful fetch finished.
    pub last_success: Option<SystemTime>,
    /// The error of the last fetch, when it failed (cleared by a success).
    pub last_error: Option<SubscribeError>,
    /// Whether a failed fetch will be tried again (after backoff), or
    /// waits for the next change or re-listen ([`SubscribeError::is_transient`]).
    pub retrying: bool,
    /// Whether a listen stream tells of its changes; otherwise it is
    /// refreshed when its `ttlMs` runs out, if it has one.
    pub live: bool,
    /// The server's `ttlMs` for it (SEP-2549), from its last fetch.
    pub ttl: Option<Duration>,
    /// The server's `cacheScope` for it: whether what was fetched may be
    /// shared across users (a gateway cares) or is this user's alone.
    pub cache_scope: Option<CacheScope>,
}

impl FetchHealth {
    /// Whether what the snapshot holds for it may be out of date: its last
    /// fetch failed, and the last good one is what is kept.
    pub fn is_stale(&self) -> bool {
        self.last_error.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_health_is_one_line_naming_its_stale_parts() {
        let stale = FetchHealth {
            last_error: Some(SubscribeError::Invalid("broken page".into())),
            ..FetchHealth::default()
        };
        let mut health = Health {
            listen: ListenState::Relistening {
                attempt: 3,
                reason: "cannot reach the server".into(),
            },
            discovery: FetchHealth::default(),
            lists: BTreeMap::from([
                (CatalogKind::Tools, stale.clone()),
                (CatalogKind::Prompts, FetchHealth::default()),
            ]),
            contents: BTreeMap::from([("file:///a".to_owned(), stale)]),
        };
        assert_eq!(
            health.to_string(),
            "re-listening (attempt 3: cannot reach the server); stale: tools, file:///a"
        );
        health.listen = ListenState::Listening;
        health.lists.clear();
        health.contents.clear();
        assert_eq!(health.to_string(), "listening");
    }
}
