//! What a gateway holds of each upstream, for `/stats` and for tests.

use serde::Serialize;

/// One upstream's figures ([`Gateway::stats`](crate::Gateway::stats)): a
/// `Copy`-free snapshot, taken under a short lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UpstreamStats {
    /// The upstream's name.
    pub name: String,
    /// The credential scopes holding it open: 1 for a gateway's own, one
    /// per caller with a stream or a recent request when
    /// [per caller](crate::GatewayBuilder::per_caller).
    pub scopes: usize,
    /// Whether some scope's catalog listen stream (the list changes) is
    /// open.
    pub lists_live: bool,
    /// The scopes' catalog listen streams open.
    pub list_streams: usize,
    /// The streams of the scopes' URI listens: none while no downstream
    /// listener watches one of its URIs, then per scope one per 1,000 URIs
    /// (its `max_uris_per_stream`).
    pub uri_streams: usize,
    /// The upstream URIs the URI listens were granted, in order, each
    /// once.
    pub uris: Vec<String>,
    /// The upstream task ids whose status they were granted, in order,
    /// each once.
    pub tasks: Vec<String>,
    /// `resources/updated` and `notifications/tasks` heard upstream and
    /// published downstream.
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
            scopes: 0,
            lists_live: false,
            list_streams: 0,
            uri_streams: 0,
            uris: Vec::new(),
            tasks: Vec::new(),
            events: 0,
            resyncs: 0,
            relistens: 0,
            duplicates: 0,
            refused: 0,
        }
    }

    /// The upstream listens held: the catalogs', and the URI streams.
    pub fn listens(&self) -> usize {
        self.list_streams + self.uri_streams
    }

    /// Adds one scope's figures (whose `lists_live` says whether its
    /// catalog listens).
    pub(super) fn add(&mut self, scope: &Self) {
        self.scopes += 1;
        self.lists_live |= scope.lists_live;
        self.list_streams += usize::from(scope.lists_live);
        self.uri_streams += scope.uri_streams;
        for (all, of_scope) in [
            (&mut self.uris, &scope.uris),
            (&mut self.tasks, &scope.tasks),
        ] {
            all.extend(of_scope.iter().cloned());
            all.sort_unstable();
            all.dedup();
        }
        self.events += scope.events;
        self.resyncs += scope.resyncs;
        self.relistens += scope.relistens;
        self.duplicates += scope.duplicates;
        self.refused += scope.refused;
    }
}

/// What a downstream client may cache of one of the gateway's merged lists
/// ([`View::cache_hint`](crate::View::cache_hint)): its upstreams'
/// hints merged pessimistically.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheHint {
    /// The shortest `ttlMs` any upstream gave for the list.
    pub ttl: Option<std::time::Duration>,
    /// Private when any upstream's list is private.
    pub scope: Option<rmcp::model::CacheScope>,
}
