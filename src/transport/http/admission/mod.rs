//! Admission limits: how fast one client address, or one principal, may
//! open connections and listens.
//!
//! Held streams and the connections they need are what a server runs out
//! of, and exhausting them by opening too many, too fast, is a published
//! vulnerability class in other SDKs. Each limit is a token bucket per
//! address or per principal: a burst at once, then a steady rate. They are
//! off by default (tests and load runs open thousands of connections from
//! one loopback address), and each is one option away
//! ([`Server::with_admission_limits`](super::Server::with_admission_limits)).
//!
//! - **Connections per address** are counted at the accept. One over the
//!   limit is still read, and its first request answered `429`, so that
//!   its client learns why; then it is closed.
//! - **Connections per principal** are counted at a connection's first
//!   request to the MCP endpoint, the first moment its principal is known
//!   (set by the authentication layer in front); one over is answered
//!   `429` and closed.
//! - **Listens per address and per principal** are counted at each listen
//!   request, before anything else is done for it: against its address
//!   first, then (if the address allows it) against its principal, so an
//!   address pays for every attempt it makes. One over is answered `429`
//!   alone: the connection and its other requests go on.
//!
//! Every `429` carries `Retry-After` (whole seconds until the bucket has
//! a token) and a JSON-RPC error, [`RATE_LIMITED_ERROR_CODE`], whose
//! `data` says which limit: `{"reason":"rate_limited","limit":
//! "listens_per_principal","retryAfterSecs":2}`. Refusals are counted in
//! [`ConnectionStats::rate_limited`](super::ConnectionStats::rate_limited).

mod bucket;

pub use bucket::Rate;

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::http::header::{CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ErrorCode, ErrorData};
use serde_json::{Value, json};

use crate::audience::Principal;
use crate::wire::response::error_reply;
use bucket::Buckets;

/// The JSON-RPC error code of a request refused by an admission limit
/// (with HTTP `429`); `data.limit` names the limit and `data.retryAfterSecs`
/// when to try again.
pub const RATE_LIMITED_ERROR_CODE: ErrorCode = ErrorCode(-32006);

/// How fast one client address, or one principal, may open connections
/// and listens; each limit off unless set (the default: all off).
///
/// A setting to start from, for a server behind which each user runs a
/// few clients: connections `20/s` with a burst of `100` per address (an
/// office's users may share one behind NAT), `5/s` with `40` per
/// principal; listens `20/s` with `200` per address and `2/s` with `40`
/// per principal (enough for a client to listen again at once after a
/// deployment or a lifetime's end).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct AdmissionLimits {
    /// New connections from one client address.
    pub connections_per_address: Option<Rate>,
    /// New connections of one principal, counted at their first request.
    pub connections_per_principal: Option<Rate>,
    /// Listen requests from one client address.
    pub listens_per_address: Option<Rate>,
    /// Listen requests of one principal.
    pub listens_per_principal: Option<Rate>,
}

impl AdmissionLimits {
    /// Limits new connections from one client address.
    pub fn with_connections_per_address(mut self, rate: Rate) -> Self {
        self.connections_per_address = Some(rate);
        self
    }

    /// Limits new connections of one principal.
    pub fn with_connections_per_principal(mut self, rate: Rate) -> Self {
        self.connections_per_principal = Some(rate);
        self
    }

    /// Limits listen requests from one client address.
    pub fn with_listens_per_address(mut self, rate: Rate) -> Self {
        self.listens_per_address = Some(rate);
        self
    }

    /// Limits listen requests of one principal.
    pub fn with_listens_per_principal(mut self, rate: Rate) -> Self {
        self.listens_per_principal = Some(rate);
        self
    }
}

/// Requests answered `429` by each admission limit
/// ([`AdmissionLimits`](crate::http::AdmissionLimits)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RateLimited {
    /// Connections refused for their address.
    pub connections_per_address: u64,
    /// Connections refused for their principal.
    pub connections_per_principal: u64,
    /// Listens refused for their address.
    pub listens_per_address: u64,
    /// Listens refused for their principal.
    pub listens_per_principal: u64,
}

/// Which limit refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::transport::http) enum Limit {
    ConnectionsPerAddress,
    ConnectionsPerPrincipal,
    ListensPerAddress,
    ListensPerPrincipal,
}

impl Limit {
    fn as_str(self) -> &'static str {
        match self {
            Self::ConnectionsPerAddress => "connections_per_address",
            Self::ConnectionsPerPrincipal => "connections_per_principal",
            Self::ListensPerAddress => "listens_per_address",
            Self::ListensPerPrincipal => "listens_per_principal",
        }
    }
}

/// A server's admission limits at work: their buckets, and its counters.
#[derive(Debug)]
pub(in crate::transport::http) struct Admission {
    connections_per_address: Option<Buckets<IpAddr>>,
    connections_per_principal: Option<Buckets<Principal>>,
    listens_per_address: Option<Buckets<IpAddr>>,
    listens_per_principal: Option<Buckets<Principal>>,
    /// Requests refused, by [`Limit`] in its order.
    refused: [AtomicU64; 4],
}

impl Admission {
    /// The limits at work; `None` when all are off.
    pub(in crate::transport::http) fn new(limits: AdmissionLimits) -> Option<Self> {
        if limits == AdmissionLimits::default() {
            return None;
        }
        Some(Self {
            connections_per_address: limits.connections_per_address.map(Buckets::new),
            connections_per_principal: limits.connections_per_principal.map(Buckets::new),
            listens_per_address: limits.listens_per_address.map(Buckets::new),
            listens_per_principal: limits.listens_per_principal.map(Buckets::new),
            refused: Default::default(),
        })
    }

    /// The requests refused so far, by limit.
    pub(in crate::transport::http) fn rate_limited(&self) -> RateLimited {
        let refused = |limit: Limit| self.refused[limit as usize].load(Ordering::Relaxed);
        RateLimited {
            connections_per_address: refused(Limit::ConnectionsPerAddress),
            connections_per_principal: refused(Limit::ConnectionsPerPrincipal),
            listens_per_address: refused(Limit::ListensPerAddress),
            listens_per_principal: refused(Limit::ListensPerPrincipal),
        }
    }

    /// A connection accepted from `address` (`None` over a Unix socket,
    /// where the limits per address do not apply).
    pub(in crate::transport::http) fn connection(
        &self,
        address: Option<IpAddr>,
    ) -> Result<(), Refused> {
        let Some(address) = address else {
            return Ok(());
        };
        self.take(
            self.connections_per_address.as_ref(),
            &address,
            Limit::ConnectionsPerAddress,
        )
    }

    fn take<K: std::hash::Hash + Eq + Clone>(
        &self,
        buckets: Option<&Buckets<K>>,
        key: &K,
        limit: Limit,
    ) -> Result<(), Refused> {
        let Some(buckets) = buckets else {
            return Ok(());
        };
        buckets.take(key).map_err(|retry_after| {
            self.refused[limit as usize].fetch_add(1, Ordering::Relaxed);
            Refused { limit, retry_after }
        })
    }
}

/// A request refused by a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::transport::http) struct Refused {
    limit: Limit,
    retry_after: Duration,
}

impl Refused {
    /// `429 Too Many Requests` with `Retry-After` and the JSON-RPC error,
    /// to the request whose id is `id`; a refused connection's says
    /// `connection: close`.
    pub(in crate::transport::http) fn response(&self, id: &Value) -> Response {
        // Whole seconds, rounded up: a client that waits them finds a token.
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        let secs = secs.max(1);
        let error = ErrorData::new(
            RATE_LIMITED_ERROR_CODE,
            "Too many requests",
            Some(json!({
                "reason": "rate_limited",
                "limit": self.limit.as_str(),
                "retryAfterSecs": secs,
            })),
        );
        let mut response = (
            StatusCode::TOO_MANY_REQUESTS,
            [
                (CONTENT_TYPE, HeaderValue::from_static("application/json")),
                (RETRY_AFTER, HeaderValue::from(secs)),
            ],
            error_reply(id, &error),
        )
            .into_response();
        if matches!(
            self.limit,
            Limit::ConnectionsPerAddress | Limit::ConnectionsPerPrincipal
        ) {
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// A connection's client as its requests carry it (in their extensions),
/// for the limits counted per request.
#[derive(Debug, Clone)]
pub(in crate::transport::http) struct Peer(Arc<PeerState>);

#[derive(Debug)]
struct PeerState {
    /// `None` over a Unix socket, where the limits per address do not
    /// apply.
    address: Option<IpAddr>,
    admission: Arc<Admission>,
    /// Until its first request to the endpoint is counted.
    first: AtomicBool,
}

impl Peer {
    pub(in crate::transport::http) fn new(
        address: Option<IpAddr>,
        admission: Arc<Admission>,
    ) -> Self {
        Self(Arc::new(PeerState {
            address,
            admission,
            first: AtomicBool::new(true),
        }))
    }

    /// A request to the endpoint, as `principal` (if known): its
    /// connection counts against the principal's limit at its first.
    pub(in crate::transport::http) fn request(
        &self,
        principal: Option<&Principal>,
    ) -> Result<(), Refused> {
        let (Some(principal), true) = (principal, self.0.first.swap(false, Ordering::Relaxed))
        else {
            return Ok(());
        };
        let admission = &self.0.admission;
        admission.take(
            admission.connections_per_principal.as_ref(),
            principal,
            Limit::ConnectionsPerPrincipal,
        )
    }

    /// A listen request, as `principal` (if known).
    pub(in crate::transport::http) fn listen(
        &self,
        principal: Option<&Principal>,
    ) -> Result<(), Refused> {
        let admission = &self.0.admission;
        if let Some(address) = &self.0.address {
            admission.take(
                admission.listens_per_address.as_ref(),
                address,
                Limit::ListensPerAddress,
            )?;
        }
        let Some(principal) = principal else {
            return Ok(());
        };
        admission.take(
            admission.listens_per_principal.as_ref(),
            principal,
            Limit::ListensPerPrincipal,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_a_429_that_says_which_limit_and_when() {
        let refused = Refused {
            limit: Limit::ListensPerPrincipal,
            retry_after: Duration::from_millis(1500),
        };
        let response = refused.response(&json!(7));
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[RETRY_AFTER], "2");
        assert!(
            !response.headers().contains_key(CONNECTION),
            "a listen's refusal leaves the connection be"
        );
        let refused = Refused {
            limit: Limit::ConnectionsPerAddress,
            retry_after: Duration::from_millis(10),
        };
        let response = refused.response(&Value::Null);
        assert_eq!(response.headers()[RETRY_AFTER], "1");
        assert_eq!(response.headers()[CONNECTION], "close");
    }

    #[test]
    #[should_panic(expected = "a burst must be at least 1")]
    fn a_rate_needs_a_burst() {
        let _ = Rate::new(1.0, 0);
    }

    #[test]
    fn all_off_is_no_admission() {
        assert!(Admission::new(AdmissionLimits::default()).is_none());
        let limits = AdmissionLimits::default().with_listens_per_address(Rate::new(1.0, 1));
        let admission = Arc::new(Admission::new(limits).unwrap());
        let peer = Peer::new(Some([127, 0, 0, 1].into()), Arc::clone(&admission));
        peer.request(Some(&Principal::new("a"))).unwrap();
        peer.listen(None).unwrap();
        let refused = peer.listen(None).unwrap_err();
        assert_eq!(refused.limit, Limit::ListensPerAddress);
        assert_eq!(admission.rate_limited().listens_per_address, 1);
    }
}
