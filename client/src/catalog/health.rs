//! How a catalog is doing: its listen stream, and each part's fetches.

use std::collections::BTreeMap;
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
