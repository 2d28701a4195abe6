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
//! The line of waiting connections and each one's ticket are `waiting`;
//! the connection's task holds its ticket ([`Tracked`]) and is polled
//! through a [`Watchdog`], and the service hyper calls moves the ticket
//! between phases (`service`); `stats` counts. A stream answered on the
//! socket leaves its ticket the moment its request is read, so a held
//! stream carries none.

mod limits;
mod service;
mod stats;
mod waiting;
mod watchdog;

pub(super) use limits::{Limits, default_max_waiting};
pub(super) use service::TrackedService;
pub use stats::ConnectionStats;
pub(super) use stats::Counters;
pub(super) use waiting::{Connections, Open, Tracked};
pub(super) use watchdog::Watchdog;
