//! What a gateway holds of each upstream, for `/stats` and for tests.

use serde::Serialize;

/// One upstream's figures ([`Gateway::stats`](crate::Gateway::stats)): a
/// `Copy`-free snapshot, taken under a short lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UpstreamStats {
    /// The upstream's name.
    pub name: String,
    /// Whether the catalog's listen stream (the list changes) is open.
    pub lists_live: bool,
    /// The streams of the URI listen: none while no downstream listener
    /// watches one of its URIs, then one per 1,000 URIs (its
    /// `max_uris_per_stream`).
    pub uri_streams: usize,
    /// The upstream URIs the URI listen was granted, in order.
    pub uris: Vec<String>,
    /// `resources/updated` events heard upstream and published downstream.
    pub events: u64,
    /// Times the URIs were resynced downstream (the upstream listen
    /// re-listened, lagged or was opened again).
    pub resyncs: u64,
    /// Times the upstream listen ended abruptly and listened again.
    pub relistens: u64,
    /// Copies dropped while the URI listen's filter changed.
    pub duplicates: u64,
    /// URIs refused to downstream listens: the upstream refused them or
    /// left them out of its grant.
    pub refused: u64,
}

impl UpstreamStats {
    pub(super) fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            lists_live: false,
            uri_streams: 0,
            uris: Vec::new(),
            events: 0,
            resyncs: 0,
            relistens: 0,
            duplicates: 0,
            refused: 0,
        }
    }

    /// The upstream listens held: the catalog's, and the URI streams.
    pub fn listens(&self) -> usize {
        usize::from(self.lists_live) + self.uri_streams
    }
}

/// What a downstream client may cache of one of the gateway's merged lists
/// ([`Gateway::cache_hint`](crate::Gateway::cache_hint)): its upstreams'
/// hints merged pessimistically.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheHint {
    /// The shortest `ttlMs` any upstream gave for the list.
    pub ttl: Option<std::time::Duration>,
    /// Private when any upstream's list is private.
    pub scope: Option<rmcp::model::CacheScope>,
}
