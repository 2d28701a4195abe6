//! Telling a client that vanished from one that left.
//!
//! A client that closes its response cancels its stream. A client whose
//! network vanished (a laptop lid shut, a phone out of coverage, a host
//! powered off: no FIN, no RST) never closes anything: its socket keeps
//! taking what the server writes until the kernel gives up on it, after
//! about fifteen minutes of retransmissions by Linux's default. So every
//! accepted connection gets a bound on how long written data may stay
//! unacknowledged ([`bound`]: Linux's `TCP_USER_TIMEOUT`), and a held
//! stream's writer also gives up on a socket that took no byte for that
//! long while bytes waited (`socket::held`), the portable way to the same
//! end. Held streams always have bytes in flight (their keep-alives), so a
//! vanished client's stream ends within the bound and one keep-alive.
//!
//! The connection's [`Vanished`] travels in each request's extensions to
//! the stream it opens, and is marked where the connection's I/O learns it
//! (a timed-out read or write, or the writer's own bound), before the
//! stream's body is dropped: the stream then closes its source with
//! [`CloseReason::Unacknowledged`](crate::CloseReason::Unacknowledged),
//! not as a cancel.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::net::TcpStream;

/// Whether a connection's client vanished, shared by its I/O and the
/// streams it serves; and the bound after which it is taken for gone.
#[derive(Debug, Clone)]
pub(super) struct Vanished(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    bound: Duration,
    gone: AtomicBool,
}

impl Vanished {
    /// A connection whose written data may stay unacknowledged `bound` at
    /// most (none: the system's default).
    pub(super) fn new(bound: Duration) -> Self {
        Self(Arc::new(Shared {
            bound,
            gone: AtomicBool::new(false),
        }))
    }

    /// How long a held stream's socket may take no byte while bytes wait;
    /// `None` where no bound is set.
    pub(super) fn bound(&self) -> Option<Duration> {
        (!self.0.bound.is_zero()).then_some(self.0.bound)
    }

    /// The client is gone: it acknowledged nothing for the bound.
    pub(super) fn mark(&self) {
        self.0.gone.store(true, Ordering::Release);
    }

    /// Marks it when `err` says the kernel gave up on unacknowledged data.
    pub(super) fn note(&self, err: &io::Error) {
        if err.kind() == io::ErrorKind::TimedOut {
            self.mark();
        }
    }

    pub(super) fn is_gone(&self) -> bool {
        self.0.gone.load(Ordering::Acquire)
    }
}

/// Bounds how long what is written on `socket` may stay unacknowledged:
/// past it, the kernel gives up on the connection and its next read or
/// write fails with `TimedOut`. It also ends a connection whose client
/// keeps its receive window shut for that long (Linux 5.11 and later count
/// zero-window probes against it). Where the option does not exist, or is
/// refused, only the held stream's own bound applies.
pub(super) fn bound(socket: &TcpStream, bound: Duration) {
    if bound.is_zero() {
        return;
    }
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    if let Err(err) = socket2::SockRef::from(socket).set_tcp_user_timeout(Some(bound)) {
        tracing::debug!(%err, "TCP_USER_TIMEOUT was refused");
    }
    #[cfg(not(any(target_os = "android", target_os = "fuchsia", target_os = "linux")))]
    let _ = socket;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_timed_out_error_marks_the_client_gone() {
        let vanished = Vanished::new(Duration::from_secs(30));
        vanished.note(&io::ErrorKind::ConnectionReset.into());
        vanished.note(&io::ErrorKind::BrokenPipe.into());
        assert!(!vanished.is_gone());
        vanished.clone().note(&io::ErrorKind::TimedOut.into());
        assert!(vanished.is_gone(), "clones share the mark");
    }

    #[test]
    fn a_zero_bound_is_none() {
        assert_eq!(Vanished::new(Duration::ZERO).bound(), None);
        let bound = Duration::from_millis(1500);
        assert_eq!(Vanished::new(bound).bound(), Some(bound));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_bound_is_set_on_the_socket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (socket, _) = listener.accept().await.unwrap();
        let sock = socket2::SockRef::from(&socket);
        assert_eq!(sock.tcp_user_timeout().unwrap(), None);
        bound(&socket, Duration::ZERO);
        assert_eq!(sock.tcp_user_timeout().unwrap(), None);
        bound(&socket, Duration::from_secs(20));
        assert_eq!(
            sock.tcp_user_timeout().unwrap(),
            Some(Duration::from_secs(20))
        );
    }
}
