//! The synchronization primitives the hub is built on, swapped for loom's
//! model-checked versions under `--cfg mcp_subscriptions_loom` (the way
//! tokio does it), so the queue's model test exercises the very code that
//! ships. The cfg is ours rather than plain `loom` because `--cfg loom`
//! would also switch tokio, which our dev-dependencies build on, into its
//! own loom mode, where it lacks its network types.

#[cfg(not(mcp_subscriptions_loom))]
mod imp {
    pub(crate) use std::sync::Arc;
    pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    /// `parking_lot`'s mutex: no poisoning, and the uncontended path is one
    /// atomic swap, which is the common case for a per-listener queue.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(parking_lot::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
            self.0.lock()
        }
    }
}

#[cfg(mcp_subscriptions_loom)]
mod imp {
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            // A panic while holding a queue lock is a bug in the model, not
            // something to recover from.
            self.0.lock().unwrap()
        }
    }
}

pub(crate) use imp::*;
