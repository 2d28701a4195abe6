//! What a server counts of its connections.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::transport::http::admission::RateLimited;

/// A snapshot of a server's connections
/// ([`Server::connections`](crate::http::Server::connections)).
///
/// With the `metrics` feature, `record` writes it as the
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
    /// Requests refused by an admission limit, by limit
    /// ([`Server::with_admission_limits`](crate::http::Server::with_admission_limits)).
    pub rate_limited: RateLimited,
}

impl ConnectionStats {
    /// Writes this snapshot to the installed `metrics` recorder:
    /// `mcp_subscriptions_http_connections_open` and `_waiting` (gauges),
    /// `_accepted_total`, `_request_timeouts_total`, `_idle_timeouts_total`,
    /// `_shed_total` and `_turned_away_total` (counters), and
    /// `mcp_subscriptions_http_rate_limited_total` with a `limit` label
    /// (`connections_per_address`, `connections_per_principal`,
    /// `listens_per_address`, `listens_per_principal`).
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
        let limited = self.rate_limited;
        for (limit, value) in [
            ("connections_per_address", limited.connections_per_address),
            (
                "connections_per_principal",
                limited.connections_per_principal,
            ),
            ("listens_per_address", limited.listens_per_address),
            ("listens_per_principal", limited.listens_per_principal),
        ] {
            counter!("mcp_subscriptions_http_rate_limited_total", "limit" => limit).absolute(value);
        }
    }
}

/// A server's counters, kept across its runs and read by its clones.
#[derive(Debug, Default)]
pub(in crate::transport::http) struct Counters {
    pub(super) open: AtomicU64,
    pub(super) waiting: AtomicU64,
    pub(super) accepted: AtomicU64,
    pub(super) request_timeouts: AtomicU64,
    pub(super) idle_timeouts: AtomicU64,
    pub(super) shed: AtomicU64,
    pub(super) turned_away: AtomicU64,
}

impl Counters {
    /// The counters now.
    pub(in crate::transport::http) fn snapshot(&self) -> ConnectionStats {
        ConnectionStats {
            open: self.open.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            request_timeouts: self.request_timeouts.load(Ordering::Relaxed),
            idle_timeouts: self.idle_timeouts.load(Ordering::Relaxed),
            shed: self.shed.load(Ordering::Relaxed),
            turned_away: self.turned_away.load(Ordering::Relaxed),
            // The server's admission limits count their own.
            rate_limited: RateLimited::default(),
        }
    }
}
