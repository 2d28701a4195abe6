//! A stop signal for many long-lived tasks that costs each of them one
//! atomic load per poll.
//!
//! `CancellationToken::cancelled` locks the token's waiter list on every
//! poll to refresh its waker; a connection task is polled once per event it
//! writes, and thousands share one token. Here each task registers its
//! waker once, and a poll reads a flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Waker};

use parking_lot::Mutex;

/// Tells every [`Watch`] to stop and wakes its task.
#[derive(Default)]
pub(in crate::transport::http) struct Stop {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    stopped: AtomicBool,
    wakers: Mutex<Slots>,
}

/// The registered wakers; a dropped watch's slot is reused.
#[derive(Default)]
struct Slots {
    wakers: Vec<Option<Waker>>,
    free: Vec<usize>,
}

impl Stop {
    pub(in crate::transport::http) fn watch(&self) -> Watch {
        Watch {
            shared: Arc::clone(&self.shared),
            slot: None,
            told: false,
        }
    }

    /// Stops every watch, those made later included.
    pub(in crate::transport::http) fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let wakers: Vec<Waker> = {
            let mut slots = self.shared.wakers.lock();
            slots.wakers.iter_mut().filter_map(Option::take).collect()
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// One task's view of a [`Stop`].
///
/// Its waker is registered on the first poll only: a watch belongs to the
/// root future of a spawned task, and any waker of a tokio task wakes that
/// task.
pub(in crate::transport::http) struct Watch {
    shared: Arc<Shared>,
    slot: Option<usize>,
    told: bool,
}

impl Watch {
    /// True once, on the first poll after the stop.
    pub(in crate::transport::http) fn stopped_now(&mut self, cx: &Context<'_>) -> bool {
        if self.told {
            return false;
        }
        if self.slot.is_none() {
            self.slot = Some(self.register(cx.waker()));
        }
        // Read after registering: a stop that came first is seen here, and
        // one that comes later finds the waker.
        self.told = self.shared.stopped.load(Ordering::SeqCst);
        self.told
    }

    fn register(&self, waker: &Waker) -> usize {
        let mut slots = self.shared.wakers.lock();
        let waker = Some(waker.clone());
        match slots.free.pop() {
            Some(slot) => {
                slots.wakers[slot] = waker;
                slot
            }
            None => {
                slots.wakers.push(waker);
                slots.wakers.len() - 1
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            let mut slots = self.shared.wakers.lock();
            slots.wakers[slot] = None;
            slots.free.push(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    use super::*;

    #[derive(Default)]
    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Counted>, Waker) {
        let counted = Arc::new(Counted::default());
        (Arc::clone(&counted), Waker::from(counted))
    }

    #[test]
    fn a_stop_wakes_each_registered_watch_once_and_is_seen_once() {
        let stop = Stop::default();
        let (wakes, waker) = waker();
        let cx = Context::from_waker(&waker);
        let mut watches = [stop.watch(), stop.watch()];
        for watch in &mut watches {
            assert!(!watch.stopped_now(&cx));
            assert!(!watch.stopped_now(&cx), "polls again, registers once");
        }
        assert_eq!(stop.shared.wakers.lock().wakers.len(), 2);

        stop.stop();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
        for watch in &mut watches {
            assert!(watch.stopped_now(&cx));
            assert!(!watch.stopped_now(&cx), "told once");
        }
    }

    #[test]
    fn a_watch_first_polled_after_the_stop_sees_it() {
        let stop = Stop::default();
        let mut watch = stop.watch();
        stop.stop();
        let (wakes, waker) = waker();
        assert!(watch.stopped_now(&Context::from_waker(&waker)));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_dropped_watch_frees_its_slot_for_the_next() {
        let stop = Stop::default();
        let (_, waker) = waker();
        let cx = Context::from_waker(&waker);
        for _ in 0..100 {
            let mut watch = stop.watch();
            watch.stopped_now(&cx);
        }
        let slots = stop.shared.wakers.lock();
        assert_eq!((slots.wakers.len(), slots.free.len()), (1, 1));
    }
}
