//! The relay's counters, and their `Copy` snapshot.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A snapshot of a relay's counters ([`Relay::stats`](super::Relay::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RelayStats {
    /// Events sent to the broker.
    pub published: u64,
    /// Batches that sent them: events go to the broker in batches of
    /// whatever is queued (up to 64), each one round trip (on a Redis
    /// Cluster, one for each shard it reaches). `published / batches` is
    /// the mean batch.
    pub batches: u64,
    /// Events from other replicas published into the local hub.
    pub received: u64,
    /// Messages this replica sent that came back to it, ignored.
    pub echo_skipped: u64,
    /// Revocations ([`Hub::revoke`](crate::Hub::revoke)) sent to the other
    /// replicas.
    pub revocations_sent: u64,
    /// Revocations from other replicas applied to the local hub.
    pub revocations_received: u64,
    /// Events lost before reaching the broker: dropped by the outbound
    /// queue because it was full (the broker slow or away), or in a batch
    /// the broker did not acknowledge in time (counted whole).
    pub outbound_dropped: u64,
    /// Idempotent signals not queued because an identical one was.
    pub outbound_coalesced: u64,
    /// Events waiting in the outbound queue.
    pub outbound_queued: u64,
    /// Connections made again after the first.
    pub reconnects: u64,
    /// Resyncs sent to local listeners.
    pub resyncs: u64,
    /// Lost messages seen: a gap in an origin's sequence, a rise in what
    /// it dropped, or its heartbeats stopping.
    pub sequence_gaps: u64,
    /// Other replicas heard for the first time (or heard again after they
    /// were taken as gone for their silence). One costs nothing, unless a
    /// replica taken as gone for its silence is outstanding (see the
    /// [module](super) docs): then it causes a resync, as the process that
    /// follows one that may have died holding changes it never sent.
    pub replicas_joined: u64,
    /// Events sent again because another replica resynced (what
    /// [`RelayOptions::with_resend`](super::RelayOptions::with_resend)
    /// gives: each live task's latest status).
    pub resent: u64,
    /// Other replicas that said goodbye: stopped gracefully, after sending
    /// what they held, so their going causes no resync.
    pub replicas_left: u64,
    /// Updates of watched URIs sent to their local listeners right after
    /// the URI's channel was subscribed: those listeners were acknowledged
    /// before the subscription took effect (see the [module](super) docs,
    /// "At most once, and resyncs").
    pub keys_caught_up: u64,
    /// Other replicas heard from now (each within three heartbeats).
    pub replicas: u64,
    /// Whether the relay is connected to the broker now (`false`:
    /// degraded, local delivery only).
    pub connected: bool,
    /// Per-key channels subscribed now.
    pub subscribed_keys: u64,
}

impl RelayStats {
    /// Records the snapshot to the installed `metrics` recorder, as
    /// `mcp_subscriptions_relay_*` counters and gauges.
    #[cfg(feature = "metrics")]
    pub fn record(&self) {
        use metrics::{counter, gauge};
        counter!("mcp_subscriptions_relay_published_total").absolute(self.published);
        counter!("mcp_subscriptions_relay_batches_total").absolute(self.batches);
        counter!("mcp_subscriptions_relay_received_total").absolute(self.received);
        counter!("mcp_subscriptions_relay_echo_skipped_total").absolute(self.echo_skipped);
        counter!("mcp_subscriptions_relay_revocations_sent_total").absolute(self.revocations_sent);
        counter!("mcp_subscriptions_relay_revocations_received_total")
            .absolute(self.revocations_received);
        counter!("mcp_subscriptions_relay_outbound_dropped_total").absolute(self.outbound_dropped);
        counter!("mcp_subscriptions_relay_outbound_coalesced_total")
            .absolute(self.outbound_coalesced);
        counter!("mcp_subscriptions_relay_reconnects_total").absolute(self.reconnects);
        counter!("mcp_subscriptions_relay_resyncs_total").absolute(self.resyncs);
        counter!("mcp_subscriptions_relay_sequence_gaps_total").absolute(self.sequence_gaps);
        counter!("mcp_subscriptions_relay_replicas_joined_total").absolute(self.replicas_joined);
        counter!("mcp_subscriptions_relay_replicas_left_total").absolute(self.replicas_left);
        counter!("mcp_subscriptions_relay_resent_total").absolute(self.resent);
        counter!("mcp_subscriptions_relay_keys_caught_up_total").absolute(self.keys_caught_up);
        gauge!("mcp_subscriptions_relay_replicas").set(self.replicas as f64);
        gauge!("mcp_subscriptions_relay_outbound_queued").set(self.outbound_queued as f64);
        gauge!("mcp_subscriptions_relay_connected").set(u8::from(self.connected));
        gauge!("mcp_subscriptions_relay_subscribed_keys").set(self.subscribed_keys as f64);
    }
}

/// The live counters, shared by the handles and the relay's task.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) published: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) echo_skipped: AtomicU64,
    pub(crate) revocations_sent: AtomicU64,
    pub(crate) revocations_received: AtomicU64,
    pub(crate) outbound_dropped: AtomicU64,
    pub(crate) outbound_coalesced: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) resyncs: AtomicU64,
    pub(crate) sequence_gaps: AtomicU64,
    pub(crate) replicas_joined: AtomicU64,
    pub(crate) replicas_left: AtomicU64,
    pub(crate) resent: AtomicU64,
    pub(crate) keys_caught_up: AtomicU64,
    pub(crate) replicas: AtomicU64,
    pub(crate) connected: AtomicBool,
    pub(crate) subscribed_keys: AtomicU64,
}

/// One more: counters are read for reports only, so no ordering is needed.
pub(crate) fn bump(counter: &AtomicU64) {
    add(counter, 1);
}

/// `n` more, as [`bump`].
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn snapshot(&self, outbound_queued: usize) -> RelayStats {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RelayStats {
            published: read(&self.published),
            batches: read(&self.batches),
            received: read(&self.received),
            echo_skipped: read(&self.echo_skipped),
            revocations_sent: read(&self.revocations_sent),
            revocations_received: read(&self.revocations_received),
            outbound_dropped: read(&self.outbound_dropped),
            outbound_coalesced: read(&self.outbound_coalesced),
            outbound_queued: outbound_queued as u64,
            reconnects: read(&self.reconnects),
            resyncs: read(&self.resyncs),
            sequence_gaps: read(&self.sequence_gaps),
            replicas_joined: read(&self.replicas_joined),
            replicas_left: read(&self.replicas_left),
            resent: read(&self.resent),
            keys_caught_up: read(&self.keys_caught_up),
            replicas: read(&self.replicas),
            connected: self.connected.load(Ordering::Relaxed),
            subscribed_keys: read(&self.subscribed_keys),
        }
    }
}
