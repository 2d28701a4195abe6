//! The line of connections waiting on their client, and each one's
//! ticket: its phase, its deadline, and whether it was shed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Waker;

use futures_util::task::AtomicWaker;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::limits::Limits;
use super::stats::Counters;

/// A running server's connections: the waiting ones in the order they
/// began to wait, its limits and its counters.
pub(in crate::transport::http) struct Connections {
    limits: Limits,
    /// Waiting connections by the order they began to wait (a sequence
    /// number): the first is the one to shed.
    waiting: Mutex<Waiting>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Waiting {
    next: u64,
    tickets: BTreeMap<u64, Arc<Ticket>>,
}

/// Why the watchdog closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::transport::http) enum Closed {
    RequestTimeout,
    IdleTimeout,
    Shed,
}

impl Connections {
    pub(in crate::transport::http) fn new(limits: Limits, counters: Arc<Counters>) -> Arc<Self> {
        Arc::new(Self {
            limits,
            waiting: Mutex::default(),
            counters,
        })
    }

    /// A connection just accepted: it is open, and reading its first
    /// request from now.
    pub(in crate::transport::http) fn accepted(self: &Arc<Self>) -> (Open, Tracked) {
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        (Open::new(self), Tracked::new(Ticket::reading(self)))
    }

    pub(in crate::transport::http) fn turned_away(&self) {
        self.counters.turned_away.fetch_add(1, Ordering::Relaxed);
    }

    fn closed(&self, why: Closed) {
        let counter = match why {
            Closed::RequestTimeout => &self.counters.request_timeouts,
            Closed::IdleTimeout => &self.counters.idle_timeouts,
            // Counted when it was decided, in `wait`.
            Closed::Shed => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Puts `ticket` last among the waiting, and sheds the first while
    /// more wait than the limit allows; returns its place.
    fn wait(&self, ticket: &Arc<Ticket>) -> u64 {
        let (place, shed) = {
            let mut waiting = self.waiting.lock();
            let place = waiting.next;
            waiting.next += 1;
            waiting.tickets.insert(place, Arc::clone(ticket));
            let over = waiting
                .tickets
                .len()
                .saturating_sub(self.limits.max_waiting);
            let shed: Vec<Arc<Ticket>> = (0..over)
                .filter_map(|_| waiting.tickets.pop_first().map(|(_, ticket)| ticket))
                .collect();
            self.counters
                .waiting
                .store(waiting.tickets.len() as u64, Ordering::Relaxed);
            (place, shed)
        };
        self.counters
            .shed
            .fetch_add(shed.len() as u64, Ordering::Relaxed);
        // Told outside the lock: telling wakes their tasks.
        for ticket in &shed {
            ticket.shed();
        }
        place
    }

    /// Takes the ticket at `place` out of the waiting, if it is still there
    /// (not shed meanwhile).
    fn stop_waiting(&self, place: u64) {
        let mut waiting = self.waiting.lock();
        waiting.tickets.remove(&place);
        self.counters
            .waiting
            .store(waiting.tickets.len() as u64, Ordering::Relaxed);
    }
}

/// A connection's place among its server's connections: counted open
/// while it lives, held streams included.
pub(in crate::transport::http) struct Open(Arc<Connections>);

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

/// A connection's hold on its [`Ticket`]: it waits no more once dropped.
pub(in crate::transport::http) struct Tracked(Arc<Ticket>);

impl Tracked {
    pub(super) fn new(ticket: Arc<Ticket>) -> Self {
        Self(ticket)
    }

    pub(super) fn ticket(&self) -> &Arc<Ticket> {
        &self.0
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.leave();
    }
}
