//! What a broker connection reads, whichever the broker.

/// What a connection reads.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A message on a subscribed channel.
    Message { channel: String, payload: Vec<u8> },
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
