//! A queue's bounds and policy, the one struct the hub, a stream's context
//! and the client's buffer all take.

use super::overflow::Overflow;

/// A queue's capacity unless configured otherwise.
///
/// Why 1,024: a listener watches at most
/// [`DEFAULT_MAX_URIS`](crate::hub::DEFAULT_MAX_URIS) URIs and three
/// lists, so a queue this deep holds one pending signal of every key it can
/// watch (an update of each of its 1,000 URIs, all at once, loses nothing),
/// and a queue grows on demand, so an idle listener pays nothing for the
/// depth. The anchors leave it to the user (`tokio::sync::broadcast` takes
/// a capacity, with no default) or do not bound it at all (the TypeScript
/// and Python SDKs write each notification straight to the transport).
pub const DEFAULT_CAPACITY: usize = 1_024;

/// The most bytes (the rendered size of the events) one queue holds
/// unless configured otherwise: 16 MiB.
///
/// Why: change signals are a hundred bytes or so, so the count bound acts
/// first for them; this bound is for events that carry data (a task's
/// status, an extension's payload), where 1,024 of them at 16 KiB each is
/// as much as one slow listener should hold.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// A queue's bounds and policy: how many events and rendered bytes it
/// holds, what a push into a full queue does, and whether a pending signal
/// absorbs its duplicates.
///
/// ```
/// use mcp_subscriptions::Overflow;
/// use mcp_subscriptions::queue::Settings;
///
/// let settings = Settings::new(64)
///     .with_overflow(Overflow::Disconnect)
///     .with_max_bytes(64 * 1024)
///     .with_coalesce(true);
/// assert_eq!(settings.capacity(), 64);
/// assert_eq!(Settings::default().overflow(), Overflow::DropOldest);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Settings {
    pub(crate) capacity: usize,
    pub(crate) max_bytes: usize,
    pub(crate) overflow: Overflow,
    pub(crate) coalesce: bool,
}

impl Default for Settings {
    /// [`DEFAULT_CAPACITY`] events, as [`new`](Self::new) says.
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl Settings {
    /// At most `capacity` events and [`DEFAULT_MAX_QUEUED_BYTES`], under
    /// [`Overflow::DropOldest`], not coalescing. A queue grows on demand up
    /// to its capacity, so an idle one holds no buffer.
    ///
    /// # Panics
    ///
    /// When `capacity` is zero.
    #[must_use]
    pub const fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a queue's capacity must be at least 1");
        Self {
            capacity,
            max_bytes: DEFAULT_MAX_QUEUED_BYTES,
            overflow: Overflow::DropOldest,
            coalesce: false,
        }
    }

    /// At most `capacity` events.
    ///
    /// # Panics
    ///
    /// When `capacity` is zero.
    #[must_use]
    pub const fn with_capacity(self, capacity: usize) -> Self {
        assert!(capacity > 0, "a queue's capacity must be at least 1");
        Self { capacity, ..self }
    }

    /// At most `max_bytes` of rendered events. A push that would exceed it
    /// applies the overflow policy, as a full queue does; an event larger
    /// than the bound is still queued, alone.
    #[must_use]
    pub const fn with_max_bytes(self, max_bytes: usize) -> Self {
        Self { max_bytes, ..self }
    }

    /// What a push into a full queue does.
    #[must_use]
    pub const fn with_overflow(self, overflow: Overflow) -> Self {
        Self { overflow, ..self }
    }

    /// Whether a pending idempotent signal (a list-changed kind, an update
    /// of one URI) absorbs its duplicates, counted as coalesced, instead of
    /// their taking a slot. The pending copy keeps its place.
    #[must_use]
    pub const fn with_coalesce(self, coalesce: bool) -> Self {
        Self { coalesce, ..self }
    }

    /// The most events the queue holds.
    pub const fn capacity(&self) -> usize {
        self.capacity
    }

    /// The most rendered bytes the queue holds.
    pub const fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// What a push into a full queue does.
    pub const fn overflow(&self) -> Overflow {
        self.overflow
    }

    /// Whether a pending signal absorbs its duplicates.
    pub const fn coalesce(&self) -> bool {
        self.coalesce
    }
}
