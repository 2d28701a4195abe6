//! What the hub delivered, dropped and still holds.

use super::id::ListenerId;
use crate::filter::Filter;
use crate::queue::Counts;
use crate::queue::Overflow;
use crate::source::CloseReason;

/// Why a listener left the registry.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Retirement {
    Closed(CloseReason),
    Overflow,
    Revoked,
}

impl Retirement {
    /// Its name in logs and metrics labels.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Closed(reason) => reason.as_str(),
            Self::Overflow => "overflow",
            Self::Revoked => "revoked",
        }
    }
}

/// A listener that just left, for the log line written once the registry
/// is unlocked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retired {
    pub(crate) id: ListenerId,
    pub(crate) why: Retirement,
    pub(crate) events: Counts,
}

impl Retired {
    /// The `closed` lifecycle event.
    pub(crate) fn trace(&self) {
        let events = &self.events;
        tracing::info!(
            target: "mcp_subscriptions",
            listener = self.id.as_u64(),
            reason = self.why.as_str(),
            matched = events.matched,
            delivered = events.delivered,
            dropped = events.dropped,
            coalesced = events.coalesced,
            discarded = events.discarded,
            "listener closed"
        );
    }
}

/// How many listeners ended, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ClosedCounts {
    /// Cancelled by the client.
    pub cancelled: u64,
    /// Gone with their transport, or dropped.
    pub disconnected: u64,
    /// Ended gracefully after the hub completed.
    pub complete: u64,
    /// Closed because of an error.
    pub error: u64,
    /// Disconnected by the [`Disconnect`](Overflow::Disconnect) policy.
    pub overflow: u64,
    /// Ended by [`Hub::revoke`](crate::Hub::revoke).
    pub revoked: u64,
    /// Ended at the expiry they were granted with.
    pub expired: u64,
    /// Ended at the lifetime their service gives every stream, to listen
    /// again.
    pub lifetime: u64,
    /// Ended because their client stopped acknowledging what was written
    /// (it vanished from the network).
    pub unacknowledged: u64,
    /// Ended to make room for a newer stream of their principal at its cap.
    pub replaced: u64,
}

impl ClosedCounts {
    /// All listeners ended, whatever the reason.
    pub fn total(&self) -> u64 {
        self.cancelled
            + self.disconnected
            + self.complete
            + self.error
            + self.overflow
            + self.revoked
            + self.expired
            + self.lifetime
            + self.unacknowledged
            + self.replaced
    }

    pub(crate) fn count(&mut self, why: Retirement) {
        let slot = match why {
            Retirement::Closed(CloseReason::Cancelled) => &mut self.cancelled,
            Retirement::Closed(CloseReason::Disconnected) => &mut self.disconnected,
            Retirement::Closed(CloseReason::Complete) => &mut self.complete,
            Retirement::Closed(CloseReason::Error) => &mut self.error,
            Retirement::Closed(CloseReason::Expired) => &mut self.expired,
            Retirement::Closed(CloseReason::Lifetime) => &mut self.lifetime,
            Retirement::Closed(CloseReason::Unacknowledged) => &mut self.unacknowledged,
            Retirement::Closed(CloseReason::Replaced) => &mut self.replaced,
            Retirement::Overflow => &mut self.overflow,
            Retirement::Revoked => &mut self.revoked,
        };
        *slot += 1;
    }
}

/// A snapshot of the hub's delivery figures.
///
/// [`HubStats`] is a `Copy` snapshot taken on demand: each live listener's
/// counts are read under its own short lock and added to the totals of
/// listeners already gone. Counting happens where the work happens (in each
/// listener's queue, under the lock the push or pull already holds), so
/// publishing and reading touch no shared counter beyond one
/// `events_published` increment per publish. Its [`events`](Self::events)
/// keep the [accounting identity](Counts#the-accounting-identity).
///
/// # Metrics
///
/// With the `metrics` feature, `record` writes a snapshot to whatever
/// [`metrics`](https://docs.rs/metrics) recorder is installed (a Prometheus
/// exporter, for instance), under these names:
///
/// | name | type | meaning |
/// | --- | --- | --- |
/// | `mcp_subscriptions_listeners_active` | gauge | listeners open now |
/// | `mcp_subscriptions_listeners_opened_total` | counter | listeners ever opened |
/// | `mcp_subscriptions_listeners_closed_total` | counter, label `reason` | listeners gone, by `cancelled`, `disconnected`, `complete`, `error`, `overflow`, `revoked`, `expired`, `lifetime`, `unacknowledged`, `replaced` |
/// | `mcp_subscriptions_events_published_total` | counter | events published |
/// | `mcp_subscriptions_events_matched_total` | counter | event × listener matches |
/// | `mcp_subscriptions_events_delivered_total` | counter | events handed to readers |
/// | `mcp_subscriptions_events_dropped_total` | counter | events lost to an overflow policy |
/// | `mcp_subscriptions_events_coalesced_total` | counter | duplicate signals absorbed by a pending copy |
/// | `mcp_subscriptions_events_discarded_total` | counter | events still queued when their listener closed |
/// | `mcp_subscriptions_events_queued` | gauge | events waiting in queues now |
/// | `mcp_subscriptions_queue_depth_max` | gauge | the deepest any queue has been |
/// | `mcp_subscriptions_bytes_queued` | gauge | the rendered size of the events waiting in queues now |
///
/// Call it when the exporter is scraped (or on a timer): the figures are
/// absolute, so recording twice counts nothing twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct HubStats {
    /// Listeners open now.
    pub listeners_active: u64,
    /// Listeners ever opened.
    pub listeners_opened: u64,
    /// Listeners ended, by reason.
    pub listeners_closed: ClosedCounts,
    /// Events published, whether or not anyone matched.
    pub events_published: u64,
    /// Where every matched event is now, summed over every listener,
    /// live or gone.
    pub events: Counts,
    /// The deepest any listener's queue has been.
    pub max_queue_depth: u64,
    /// The rendered size of the events waiting in queues now, in bytes.
    pub queued_bytes: u64,
}

impl HubStats {
    /// Writes this snapshot to the installed `metrics` recorder under the
    /// names in [the type's docs](Self#metrics).
    #[cfg(feature = "metrics")]
    pub fn record(&self) {
        use metrics::{counter, gauge};

        gauge!("mcp_subscriptions_listeners_active").set(self.listeners_active as f64);
        counter!("mcp_subscriptions_listeners_opened_total").absolute(self.listeners_opened);
        let closed = self.listeners_closed;
        for (reason, count) in [
            (CloseReason::Cancelled.as_str(), closed.cancelled),
            (CloseReason::Disconnected.as_str(), closed.disconnected),
            (CloseReason::Complete.as_str(), closed.complete),
            (CloseReason::Error.as_str(), closed.error),
            (Retirement::Overflow.as_str(), closed.overflow),
            (Retirement::Revoked.as_str(), closed.revoked),
            (CloseReason::Expired.as_str(), closed.expired),
            (CloseReason::Lifetime.as_str(), closed.lifetime),
            (CloseReason::Unacknowledged.as_str(), closed.unacknowledged),
            (CloseReason::Replaced.as_str(), closed.replaced),
        ] {
            counter!("mcp_subscriptions_listeners_closed_total", "reason" => reason)
                .absolute(count);
        }
        counter!("mcp_subscriptions_events_published_total").absolute(self.events_published);
        let events = self.events;
        counter!("mcp_subscriptions_events_matched_total").absolute(events.matched);
        counter!("mcp_subscriptions_events_delivered_total").absolute(events.delivered);
        counter!("mcp_subscriptions_events_dropped_total").absolute(events.dropped);
        counter!("mcp_subscriptions_events_coalesced_total").absolute(events.coalesced);
        counter!("mcp_subscriptions_events_discarded_total").absolute(events.discarded);
        gauge!("mcp_subscriptions_events_queued").set(events.queued as f64);
        gauge!("mcp_subscriptions_queue_depth_max").set(self.max_queue_depth as f64);
        gauge!("mcp_subscriptions_bytes_queued").set(self.queued_bytes as f64);
    }
}

/// A snapshot of one listener.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct ListenerStats {
    /// Which listener.
    pub id: ListenerId,
    /// The filter it was granted.
    pub filter: Filter,
    /// Where every event that matched it is now.
    pub events: Counts,
    /// Events lost to drop-oldest that its reader has not yet been told
    /// about through [`Next::Lagged`](crate::Next::Lagged).
    pub lag: u64,
    /// The deepest its queue has been.
    pub max_queue_depth: u64,
    /// The rendered size of the events in its queue now, in bytes.
    pub queued_bytes: u64,
    /// The most bytes its queue holds.
    pub max_queued_bytes: usize,
    /// Its queue capacity.
    pub capacity: usize,
    /// Its overflow policy.
    pub overflow: Overflow,
    /// Whether its queue coalesces duplicate signals.
    pub coalesce: bool,
}
