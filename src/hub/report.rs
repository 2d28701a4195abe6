//! What one publish did.

/// The outcome of one [`Hub::publish`](crate::Hub::publish), counted in
/// listeners.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct PublishReport {
    /// Listeners whose granted filter matched the event.
    pub matched: usize,
    /// Listeners that queued it.
    pub queued: usize,
    /// Listeners that evicted their oldest event to queue it
    /// ([`DropOldest`](crate::Overflow::DropOldest)); also counted in
    /// `queued`. Each evicted one event.
    pub evicted: usize,
    /// Listeners that already held the same idempotent signal and absorbed
    /// it (see [`HubBuilder::coalesce`](crate::HubBuilder::coalesce)).
    pub coalesced: usize,
    /// Listeners disconnected because it did not fit
    /// ([`Disconnect`](crate::Overflow::Disconnect)); each lost everything
    /// it held, as [`HubStats::events_dropped`](crate::hub::HubStats) counts.
    pub disconnected: usize,
}
