//! The synchronization primitives the crate is built on, swapped for loom's
//! model-checked versions under `--cfg mcp_subscriptions_loom` (the way
//! tokio does it), so the queue's model test exercises the very code that
//! ships. The cfg is ours rather than plain `loom` because `--cfg loom`
//! would also switch tokio, which our dev-dependencies build on, into its
//! own loom mode, where it lacks its network types.
//!
//! Every lock of the core goes through here; nothing above names
//! `parking_lot` or `std::sync` locks directly.

#[cfg(mcp_subscriptions_census)]
pub(crate) mod census;
mod park;

pub use park::block_on_timeout;
pub(crate) use park::{park_until, unparking};

#[cfg(not(mcp_subscriptions_loom))]
mod imp {
    #[cfg(mcp_subscriptions_census)]
    pub(crate) use crate::sync::counted::{AtomicBool, AtomicU64, AtomicUsize};
    pub(crate) use std::sync::atomic::Ordering;
    #[cfg(not(mcp_subscriptions_census))]
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
    pub(crate) use std::sync::{Arc, OnceLock};

    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    /// `parking_lot`'s mutex: no poisoning, and the uncontended path is one
    /// atomic swap, which is the common case for a per-listener queue.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(parking_lot::Mutex::new(value))
        }

        #[cfg_attr(mcp_subscriptions_census, track_caller)]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            #[cfg(mcp_subscriptions_census)]
            crate::sync::census::note(self, std::panic::Location::caller());
            self.0.lock()
        }
    }

    /// `parking_lot`'s read-write lock: readers share it without writing to
    /// a shared counter's cache line more than once, and a waiting writer
    /// is not starved by a stream of readers.
    #[derive(Debug, Default)]
    pub(crate) struct RwLock<T>(parking_lot::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(parking_lot::RwLock::new(value))
        }

        #[cfg_attr(mcp_subscriptions_census, track_caller)]
        pub(crate) fn read(&self) -> parking_lot::RwLockReadGuard<'_, T> {
            #[cfg(mcp_subscriptions_census)]
            crate::sync::census::note(self, std::panic::Location::caller());
            self.0.read()
        }

        #[cfg_attr(mcp_subscriptions_census, track_caller)]
        pub(crate) fn write(&self) -> parking_lot::RwLockWriteGuard<'_, T> {
            #[cfg(mcp_subscriptions_census)]
            crate::sync::census::note(self, std::panic::Location::caller());
            self.0.write()
        }
    }
}

/// The atomics, each write noted by the census (`census`).
#[cfg(mcp_subscriptions_census)]
mod counted {
    use std::panic::Location;
    use std::sync::atomic::{self, Ordering};

    use crate::sync::census::note;

    macro_rules! counted {
        ($name:ident, $value:ty, $($rmw:ident),*) => {
            #[derive(Debug, Default)]
            pub(crate) struct $name(atomic::$name);

            #[allow(dead_code, reason = "each atomic uses some of them")]
            impl $name {
                pub(crate) const fn new(value: $value) -> Self {
                    Self(atomic::$name::new(value))
                }

                pub(crate) fn load(&self, order: Ordering) -> $value {
                    self.0.load(order)
                }

                #[track_caller]
                pub(crate) fn store(&self, value: $value, order: Ordering) {
                    note(self, Location::caller());
                    self.0.store(value, order);
                }

                $(
                    #[track_caller]
                    pub(crate) fn $rmw(&self, value: $value, order: Ordering) -> $value {
                        note(self, Location::caller());
                        self.0.$rmw(value, order)
                    }
                )*
            }
        };
    }

    counted!(AtomicBool, bool, swap);
    counted!(AtomicU64, u64, swap, fetch_add, fetch_sub);
    counted!(AtomicUsize, usize, swap, fetch_add, fetch_sub);
}

#[cfg(mcp_subscriptions_loom)]
mod imp {
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    // Loom has no `OnceLock`. The ring's chunks are set only by the writer,
    // under the lane's lock, before the tail that leads a reader to them
    // moves (a loom atomic), so std's serves the models as it is.
    pub(crate) use std::sync::OnceLock;

    // A panic while holding a lock is a bug in the model, not something to
    // recover from: the `unwrap`s below only surface it.

    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap()
        }
    }

    #[derive(Debug)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::RwLock::new(value))
        }

        pub(crate) fn read(&self) -> loom::sync::RwLockReadGuard<'_, T> {
            self.0.read().unwrap()
        }

        pub(crate) fn write(&self) -> loom::sync::RwLockWriteGuard<'_, T> {
            self.0.write().unwrap()
        }
    }
}

pub(crate) use imp::*;
