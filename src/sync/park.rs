//! Waiting on this thread: parking until a wake or a deadline, and driving a
//! future to completion without an executor. The blocking readers
//! (`Listener::next_timeout`, `SourceHandle::next_timeout`) are built on
//! these.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Parks this thread until unparked or `deadline`; `false` once the
/// deadline has passed.
pub(crate) fn park_until(deadline: Option<Instant>) -> bool {
    match deadline {
        None => thread::park(),
        Some(deadline) => {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            thread::park_timeout(deadline - now);
        }
    }
    true
}

/// A waker that unparks `thread`.
pub(crate) fn unparking(thread: Thread) -> Waker {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    Waker::from(Arc::new(Unpark(thread)))
}

/// Polls `future` on this thread until it is ready or `timeout` passes.
pub fn block_on_timeout<F: Future>(future: F, timeout: Duration) -> Option<F::Output> {
    // A timeout too large to add (`Duration::MAX`) means no deadline.
    let deadline = Instant::now().checked_add(timeout);
    let waker = unparking(thread::current());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
        // A wake between the poll and this park leaves the unpark token set,
        // so the park returns at once instead of missing it.
        if !park_until(deadline) {
            return None;
        }
    }
}
