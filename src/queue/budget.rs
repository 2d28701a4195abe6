//! The hub-wide bound on queued bytes: one counter every listener's queue
//! adds to when it queues an event and takes from when the event leaves.
//!
//! Each queue checks it under its own lock only, so two publishers pushing
//! to different listeners at once may both pass the check: the bound can be
//! exceeded by at most one event per concurrent publisher. Hubs without a
//! hub-wide bound have no budget and pay nothing for it.

use crate::sync::{AtomicUsize, Ordering};

#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicUsize,
    max: usize,
}

impl Budget {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            used: AtomicUsize::new(0),
            max,
        }
    }

    /// Whether `bytes` more still fit.
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        // Relaxed: the figure is a bound checked per push, not a fence for
        // any other memory.
        self.used.load(Ordering::Relaxed).saturating_add(bytes) <= self.max
    }

    pub(crate) fn take(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}
