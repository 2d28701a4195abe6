//! What a broker connection reads, whichever the broker.

/// Messages a Redis link hands the relay's task in one batch, at most: a
/// burst wakes the task once, not once a message.
#[cfg(feature = "redis")]
pub(crate) const RECEIVE_BATCH: usize = 256;

/// One message on a channel: read from a subscription, or sent.
#[derive(Debug)]
pub(crate) struct BusMessage {
    pub(crate) channel: String,
    pub(crate) payload: Vec<u8>,
}

/// What a connection reads.
#[derive(Debug)]
pub(crate) enum LinkEvent {
    /// Messages that arrived on subscribed channels. Whatever the
    /// connection read before any of them is in this batch or an earlier
    /// one, so sorting a batch by each origin's order restores the order
    /// the broker delivered them in, even when the client hands each
    /// subscription its messages apart (NATS).
    Messages(Vec<BusMessage>),
    /// The client lost its connection and is making it again itself
    /// (NATS); messages sent meanwhile are lost.
    // Only the NATS client reconnects by itself.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    Down,
    /// The client has its connection back, subscriptions included.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    Up,
}

/// A broker operation's outcome; the error is the client's message.
pub(crate) type Result<T> = std::result::Result<T, String>;
