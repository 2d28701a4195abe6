//! What the relay's handles and its task share.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::outbound::Outbound;
use super::stats::Counters;
use crate::hub::Hub;

/// What the handles and the relay's task share.
pub(crate) struct Inner {
    pub(crate) hub: Hub,
    pub(crate) origin: String,
    /// A short lock: a publisher pushes and the task pops, one event (or
    /// revocation) each, never across an `.await`.
    pub(crate) outbound: Mutex<Outbound>,
    /// Wakes the task for an outbound event or for closing. `notify_one`
    /// keeps a permit when the task is busy, so no wake-up is lost, and it
    /// never blocks a publisher.
    pub(crate) wake: Notify,
    /// Wakes the task for closing alone: while it connects or backs off it
    /// waits on this, not on `wake`, so that publishing (which only
    /// queues) can neither abort a connect nor cut a backoff short.
    pub(crate) closing: Notify,
    pub(crate) counters: Counters,
    pub(crate) closed: AtomicBool,
    /// Set, and waiters woken, when the task has ended, however it ended
    /// (see `Relay::close`).
    pub(crate) ended: AtomicBool,
    pub(crate) ended_notify: Notify,
}

impl Inner {
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}
