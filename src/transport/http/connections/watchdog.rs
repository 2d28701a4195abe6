//! The future that closes a connection when its phase's deadline passes
//! or it is shed.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::time::{Instant, Sleep};

use super::waiting::{Closed, Fate, Tracked};

/// Polls a connection's future, `inner`, and ends it early, with why, when
/// its ticket says so. `inner` is polled first, so what it can finish now
/// is finished even if its deadline just passed.
pub(in crate::transport::http) struct Watchdog<F> {
    inner: F,
    tracked: Tracked,
    /// Made at the first deadline, then reset as the deadline moves.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<F> Watchdog<F> {
    pub(in crate::transport::http) fn new(tracked: Tracked, inner: F) -> Self {
        Self {
            inner,
            tracked,
            sleep: None,
        }
    }

    /// The connection's hold on its ticket, to watch another future with.
    pub(in crate::transport::http) fn into_tracked(self) -> Tracked {
        self.tracked
    }
}

impl<F: Future + Unpin> Future for Watchdog<F> {
    type Output = Result<F::Output, Closed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(output) = Pin::new(&mut this.inner).poll(cx) {
            return Poll::Ready(Ok(output));
        }
        // Read after polling: the poll may have moved the phase (hyper
        // called the service, a body ended).
        let ticket = this.tracked.ticket();
        let Fate::CloseAt(at, why) = ticket.fate(cx.waker()) else {
            return Poll::Pending;
        };
        // A deadline already passed (a shed connection's is now) closes
        // at once: a timer set to now fires a tick later, and a fate read
        // again then would name a later now, for ever.
        if at > Instant::now() {
            let sleep = this
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if sleep.deadline() != at {
                sleep.as_mut().reset(at);
            }
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        ticket.closed(why);
        Poll::Ready(Err(why))
    }
}

#[cfg(test)]
mod tests {
    use std::future::pending;
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::limits::Limits;
    use super::super::stats::Counters;
    use super::super::waiting::Connections;
    use super::*;

    const DEADLINE: Duration = Duration::from_secs(30);

    fn connections(max_waiting: usize) -> (Arc<Connections>, Arc<Counters>) {
        let limits = Limits {
            request_deadline: DEADLINE,
            idle_timeout: DEADLINE,
            max_waiting,
            unacknowledged_timeout: DEADLINE,
        };
        let counters = Arc::new(Counters::default());
        (Connections::new(limits, Arc::clone(&counters)), counters)
    }

    #[tokio::test(start_paused = true)]
    async fn a_shed_connection_is_closed_at_once() {
        let (connections, counters) = connections(1);
        let (_first_open, first) = connections.accepted();
        let started = Instant::now();
        let (_second_open, second) = connections.accepted();
        let closed = Watchdog::new(first, pending::<()>()).await;
        assert_eq!(closed, Err(Closed::Shed));
        assert_eq!(started.elapsed(), Duration::ZERO);
        let stats = counters.snapshot();
        assert_eq!((stats.shed, stats.waiting), (1, 1));
        // The one that shed it waits on, to its own deadline.
        let closed = Watchdog::new(second, pending::<()>()).await;
        assert_eq!(closed, Err(Closed::RequestTimeout));
        let waited = started.elapsed();
        assert!(
            waited >= DEADLINE && waited < DEADLINE + Duration::from_millis(10),
            "{waited:?}"
        );
        assert_eq!(counters.snapshot().request_timeouts, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn what_the_connection_finishes_by_its_deadline_is_not_cut() {
        let (connections, counters) = connections(8);
        let (_open, tracked) = connections.accepted();
        let finished = Watchdog::new(tracked, Box::pin(tokio::time::sleep(DEADLINE / 2))).await;
        assert_eq!(finished, Ok(()));
        assert_eq!(counters.snapshot().waiting, 0);
    }
}
