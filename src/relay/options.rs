//! A relay's options.

use std::sync::Arc;
use std::time::Duration;

use crate::event::Event;
use crate::util::hook::Hook;

/// A relay's options; [`Default`] suits most deployments.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RelayOptions {
    /// The first part of every channel name, so that several deployments
    /// can share a broker (default `mcp-subscriptions`).
    pub prefix: String,
    /// Events waiting for the broker, at most; more drop the oldest
    /// (default 4,096).
    pub outbound_capacity: usize,
    /// Time between heartbeats on the catalog channel (default 1 s); a
    /// replica silent for three is taken as gone, and its messages as lost.
    pub heartbeat: Duration,
    /// How long a key's channel stays subscribed after its last local
    /// listener left (default 5 s), so that a client listening again at
    /// once does not cost an unsubscribe and a subscribe.
    pub grace: Duration,
    /// A resync is sent after a random delay up to this (default 1 s), so
    /// that replicas reconnecting together do not all send theirs at once.
    pub resync_jitter: Duration,
    /// The bound of the first wait before connecting again (default
    /// 100 ms); doubled up
    /// to [`backoff_max`](Self::backoff_max); each wait is drawn between
    /// half its bound and the bound, as the client's re-listening is.
    pub backoff_min: Duration,
    /// The longest wait before connecting again (default 5 s).
    pub backoff_max: Duration,
    /// The longest a broker operation (connecting, subscribing, a batch of
    /// publishes, a heartbeat) may take before the connection is taken as
    /// lost (default 2 s). It is also the redis client's connection and
    /// response timeout and the NATS client's connection and request
    /// timeout, so a broker stall shorter than it never drops a
    /// connection.
    pub timeout: Duration,
    /// On a Redis Cluster, the hash slots the key channels spread over
    /// (default 48, at least 1, at most 16,384): a key's channel is on the
    /// slot of its shard, so that a replica's subscriptions go to the
    /// cluster in at most this many commands per batch, whatever the
    /// number of keys. The shards' slots are spread evenly over the
    /// cluster's, so on a cluster whose nodes serve equal slot ranges each
    /// node holds as many shards as any other, give or take one: pick a
    /// multiple of the node count, or several times it (48 is even on 2,
    /// 3, 4, 6, 8, 12, 16 or 24 nodes). More shards, more pipelines for a
    /// batch of publishes that spans them.
    pub shards: u16,
    /// What this replica resends when another one resyncs (see
    /// [`with_resend`](Self::with_resend)).
    pub(crate) resend: Option<Hook<dyn Fn() -> Vec<Event> + Send + Sync>>,
}

impl Default for RelayOptions {
    fn default() -> Self {
        Self {
            prefix: "mcp-subscriptions".to_owned(),
            outbound_capacity: 4_096,
            heartbeat: Duration::from_secs(1),
            grace: Duration::from_secs(5),
            resync_jitter: Duration::from_secs(1),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            timeout: Duration::from_secs(2),
            shards: 48,
            resend: None,
        }
    }
}

impl RelayOptions {
    /// Sets [`prefix`](Self::prefix).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets [`outbound_capacity`](Self::outbound_capacity) (at least 1).
    pub fn with_outbound_capacity(mut self, capacity: usize) -> Self {
        self.outbound_capacity = capacity.max(1);
        self
    }

    /// Sets [`heartbeat`](Self::heartbeat).
    pub fn with_heartbeat(mut self, heartbeat: Duration) -> Self {
        self.heartbeat = heartbeat;
        self
    }

    /// Sets [`grace`](Self::grace).
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Sets [`resync_jitter`](Self::resync_jitter).
    pub fn with_resync_jitter(mut self, jitter: Duration) -> Self {
        self.resync_jitter = jitter;
        self
    }

    /// Sets [`backoff_min`](Self::backoff_min) and
    /// [`backoff_max`](Self::backoff_max).
    pub fn with_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff_min = min;
        self.backoff_max = max.max(min);
        self
    }

    /// Sets [`timeout`](Self::timeout).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`shards`](Self::shards) (at least 1).
    pub fn with_shards(mut self, shards: u16) -> Self {
        self.shards = shards.max(1);
        self
    }

    /// What this replica sends again when another replica resyncs: the
    /// latest event of each key it owns whose loss a resync's list changes
    /// and URI updates do not mend, each live task's latest status above
    /// all (`tasks::event`, with the `tasks` feature). A relay that resyncs
    /// asks the others for this on the catalog channel; each sends what its
    /// hook returns on the events' own channels, so only the replicas that
    /// watch a key receive it, and a listener that already had a status
    /// gets it once more, as it gets the other signals of a resync. Without
    /// a hook a replica resends nothing, and a task whose status was lost
    /// on the way is heard of again only at its next status.
    ///
    /// The hook runs on the relay's task: return what is at hand (a copy of
    /// the task store's latest statuses), without blocking.
    pub fn with_resend(mut self, hook: impl Fn() -> Vec<Event> + Send + Sync + 'static) -> Self {
        self.resend = Some(Hook(Arc::new(hook)));
        self
    }
}
