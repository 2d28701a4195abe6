//! One connection's phase, its deadline, and whether it was shed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Waker;

use futures_util::task::AtomicWaker;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::{Closed, Connections};

/// A connection's place among its server's connections: counted open
/// while it lives, held streams included.
pub(in crate::http) struct Open(Arc<Connections>);

impl Open {
    pub(super) fn new(connections: &Arc<Connections>) -> Self {
        connections.counters.open.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(connections))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.counters.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection's phase, shared by its task's [`Watchdog`](super::Watchdog)
/// and the service hyper calls (`service`), which moves it.
pub(super) struct Ticket {
    connections: Arc<Connections>,
    state: Mutex<State>,
    /// Set by the connection that made the waiting too many; read by the
    /// watchdog, whose task `task` wakes.
    shed: AtomicBool,
    task: AtomicWaker,
}

struct State {
    phase: Phase,
    /// Its place among the waiting while it waits (reading or idle), until
    /// shed.
    place: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Reading a request, which must be whole by then.
    Reading { until: Instant },
    /// Answering one: no deadline.
    Answering,
    /// Idle between requests, until then.
    Idle { until: Instant },
}

/// What the watchdog is to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    /// Nothing unless the phase changes.
    Answering,
    /// Close the connection at `at` unless the phase changes.
    CloseAt(Instant, Closed),
}

impl Ticket {
    /// A connection reading its first request from now, waiting last.
    pub(super) fn reading(connections: &Arc<Connections>) -> Arc<Self> {
        let until = Instant::now() + connections.limits.request_deadline;
        let ticket = Arc::new(Self {
            connections: Arc::clone(connections),
            state: Mutex::new(State {
                phase: Phase::Reading { until },
                place: None,
            }),
            shed: AtomicBool::new(false),
            task: AtomicWaker::new(),
        });
        let place = connections.wait(&ticket);
        ticket.state.lock().place = Some(place);
        ticket
    }

    /// Hyper has the head of a request: on an idle connection, the request
    /// deadline starts now (a first request's started at the accept).
    pub(super) fn request_started(&self) {
        let mut state = self.state.lock();
        if let Phase::Idle { .. } = state.phase {
            state.phase = Phase::Reading {
                until: Instant::now() + self.connections.limits.request_deadline,
            };
            drop(state);
            // The watchdog's deadline changed.
            self.task.wake();
        }
    }

    /// The request is whole (its body ended, or its handler let it go):
    /// answering, with no deadline, and no longer waiting.
    pub(super) fn request_read(&self) {
        let mut state = self.state.lock();
        state.phase = Phase::Answering;
        if let Some(place) = state.place.take() {
            self.connections.stop_waiting(place);
        }
    }

    /// The answer is written: idle until the next request, waiting last.
    /// One shed while it answered stays shed: the watchdog closes it now.
    pub(super) fn answered(self: &Arc<Self>) {
        let mut state = self.state.lock();
        state.phase = Phase::Idle {
            until: Instant::now() + self.connections.limits.idle_timeout,
        };
        if !self.is_shed() && state.place.is_none() {
            state.place = Some(self.connections.wait(self));
        }
        drop(state);
        self.task.wake();
    }

    /// Made to leave by a newer waiting connection.
    pub(super) fn shed(&self) {
        self.shed.store(true, Ordering::Release);
        self.task.wake();
    }

    fn is_shed(&self) -> bool {
        self.shed.load(Ordering::Acquire)
    }

    /// What the watchdog of the task at `waker` is to do now; the task is
    /// woken when that changes.
    pub(super) fn fate(&self, waker: &Waker) -> Fate {
        // Registered before reading: a change made after this read wakes
        // the task again.
        self.task.register(waker);
        let phase = self.state.lock().phase;
        match phase {
            Phase::Answering => Fate::Answering,
            _ if self.is_shed() => Fate::CloseAt(Instant::now(), Closed::Shed),
            Phase::Reading { until } => Fate::CloseAt(until, Closed::RequestTimeout),
            Phase::Idle { until } => Fate::CloseAt(until, Closed::IdleTimeout),
        }
    }

    /// The watchdog closed the connection.
    pub(super) fn closed(&self, why: Closed) {
        self.connections.closed(why);
    }

    /// The connection ends: it waits no more.
    pub(super) fn leave(&self) {
        if let Some(place) = self.state.lock().place.take() {
            self.connections.stop_waiting(place);
        }
    }
}
