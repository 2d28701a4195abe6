//! What each connection is waiting for, its deadline, and who goes first
//! when too many wait.
//!
//! A connection is always in one of three phases:
//!
//! - **reading** a request: from its accept (or, on a keep-alive
//!   connection, from the moment hyper has the next request's head) until
//!   the request's body has ended. The whole request must come within the
//!   request deadline, counted from the accept for a first request, so a
//!   client that sends nothing, half a head, a byte now and then, or a
//!   body that never ends is closed at the deadline whatever it trickles.
//! - **answering** it: no deadline, however long the answer takes. A held
//!   listen stream is an answer that lasts hours; its keepalives are what
//!   tell a dead client, not a timer here.
//! - **idle** between requests, on a keep-alive connection: closed after
//!   the idle timeout.
//!
//! A connection reading or idle is *waiting* on its client. Waiting
//! connections take open files that held streams need, so their number is
//! bounded ([`Server::with_max_waiting`](super::Server::with_max_waiting)):
//! one more sheds the one that has waited longest, which is the one most
//! likely never to finish. A connection whose request came whole just as it
//! was shed is still answered: the watchdog looks at the connection before
//! at its fate.
//!
//! The connection's task carries its [`Ticket`], polled through a
//! [`Watchdog`]; the service hyper calls moves the ticket between phases
//! (`service`). A stream answered on the socket leaves its ticket the
//! moment its request is read, so a held stream carries none.

mod limits;
mod service;
mod ticket;
mod watchdog;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

pub(super) use limits::default_max_waiting;
pub(super) use service::TrackedService;
pub(super) use ticket::Open;
use ticket::Ticket;
pub(super) use watchdog::{Tracked, Watchdog};

/// A snapshot of a server's connections
/// ([`Server::connections`](super::Server::connections)).
///
/// With the `metrics` feature, [`record`](Self::record) writes it as the
/// `mcp_subscriptions_http_connections_*` gauges and counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// Connections open now, held streams included (upgraded WebSockets
    /// leave the count once upgraded).
    pub open: u64,
    /// Of those, connections waiting on their client now: reading a
    /// request or idle between requests.
    pub waiting: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections closed because a request did not come whole within the
    /// request deadline.
    pub request_timeouts: u64,
    /// Keep-alive connections closed after the idle timeout.
    pub idle_timeouts: u64,
    /// Waiting connections closed to make room: past the most that may
    /// wait, the one that waited longest goes.
    pub shed: u64,
    /// Connections accepted and closed at once because the process was out
    /// of open files.
    pub turned_away: u64,
}

impl ConnectionStats {
    /// Writes this snapshot to the installed `metrics` recorder:
    /// `mcp_subscriptions_http_connections_open` and `_waiting` (gauges),
    /// `_accepted_total`, `_request_timeouts_total`, `_idle_timeouts_total`,
    /// `_shed_total` and `_turned_away_total` (counters).
    #[cfg(feature = "metrics")]
    pub fn record(&self) {
        use metrics::{counter, gauge};
        gauge!("mcp_subscriptions_http_connections_open").set(self.open as f64);
        gauge!("mcp_subscriptions_http_connections_waiting").set(self.waiting as f64);
        for (name, value) in [
            ("accepted", self.accepted),
            ("request_timeouts", self.request_timeouts),
            ("idle_timeouts", self.idle_timeouts),
            ("shed", self.shed),
            ("turned_away", self.turned_away),
        ] {
            counter!(format!("mcp_subscriptions_http_connections_{name}_total")).absolute(value);
        }
    }
}

/// The deadlines and the bound every connection of a server keeps.
#[derive(Debug, Clone, Copy)]
pub(in crate::http) struct Limits {
    pub(in crate::http) request_deadline: Duration,
    pub(in crate::http) idle_timeout: Duration,
    pub(in crate::http) max_waiting: usize,
}

/// A server's counters, kept across its runs and read by its clones.
#[derive(Debug, Default)]
pub(in crate::http) struct Counters {
    open: AtomicU64,
    waiting: AtomicU64,
    accepted: AtomicU64,
    request_timeouts: AtomicU64,
    idle_timeouts: AtomicU64,
    shed: AtomicU64,
    turned_away: AtomicU64,
}

impl Counters {
    /// The counters now.
    pub(in crate::http) fn snapshot(&self) -> ConnectionStats {
        ConnectionStats {
            open: self.open.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            request_timeouts: self.request_timeouts.load(Ordering::Relaxed),
            idle_timeouts: self.idle_timeouts.load(Ordering::Relaxed),
            shed: self.shed.load(Ordering::Relaxed),
            turned_away: self.turned_away.load(Ordering::Relaxed),
        }
    }
}

/// A running server's connections: the waiting ones in the order they
/// began to wait, its limits and its counters.
pub(in crate::http) struct Connections {
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
pub(in crate::http) enum Closed {
    RequestTimeout,
    IdleTimeout,
    Shed,
}

impl Connections {
    pub(in crate::http) fn new(limits: Limits, counters: Arc<Counters>) -> Arc<Self> {
        Arc::new(Self {
            limits,
            waiting: Mutex::default(),
            counters,
        })
    }

    /// A connection just accepted: it is open, and reading its first
    /// request from now.
    pub(in crate::http) fn accepted(self: &Arc<Self>) -> (Open, Tracked) {
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        (Open::new(self), Tracked::new(Ticket::reading(self)))
    }

    pub(in crate::http) fn turned_away(&self) {
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
