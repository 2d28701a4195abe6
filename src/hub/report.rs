//! What one publish did.

/// The outcome of one [`Hub::publish`](crate::Hub::publish), counted in
/// listeners.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PublishReport {
    /// Listeners whose granted filter matched the event.
    pub matched: usize,
    /// Listeners that queued it.
    pub queued: usize,
    /// Listeners that evicted their oldest event to queue it
    /// ([`DropOldest`](crate::Overflow::DropOldest)); also counted in
    /// `queued`.
    pub dropped: usize,
    /// Listeners disconnected because it did not fit
    /// ([`Disconnect`](crate::Overflow::Disconnect)).
    pub disconnected: usize,
}
