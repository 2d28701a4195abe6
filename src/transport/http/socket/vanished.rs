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
//! Whether the client vanished is the connection's task's own: its
//! serving future runs [`watched`], with the mark kept in the task (no
//! allocation per connection) and visible on its thread while the task
//! is polled or dropped. The connection's I/O marks it where it learns it
//! (a timed-out read or write, or the writer's own bound), before the
//! stream's body is dropped, which always happens in that task; the body
//! then closes its source with
//! [`CloseReason::Unacknowledged`](crate::CloseReason::Unacknowledged),
//! not as a cancel.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::net::TcpStream;

/// A connection's reaping: its bound, and whether its client vanished.
struct Reaping {
    /// How long a held stream's socket may take no byte while bytes wait;
    /// `None` where no bound is set.
    bound: Option<Duration>,
    gone: Cell<bool>,
}

tokio::task_local! {
    static REAPING: Reaping;
}

/// Runs a connection's serving `future` reaping a client that may
/// vanish, with `bound` (zero: none).
pub(in crate::transport::http) fn watched<F: Future>(
    bound: Duration,
    future: F,
) -> impl Future<Output = F::Output> {
    let reaping = Reaping {
        bound: (!bound.is_zero()).then_some(bound),
        gone: Cell::new(false),
    };
    REAPING.scope(reaping, future)
}

/// The connection's bound on a socket that takes no byte; `None` where it
/// has none, or outside a watched connection.
pub(in crate::transport::http) fn bound_now() -> Option<Duration> {
    REAPING.try_with(|reaping| reaping.bound).ok().flatten()
}

/// The connection's client is gone: it acknowledged nothing for the
/// bound. Nothing outside a watched connection.
pub(in crate::transport::http) fn mark() {
    let _ = REAPING.try_with(|reaping| reaping.gone.set(true));
}

/// Marks the client gone when `err` says the kernel gave up on
/// unacknowledged data.
pub(in crate::transport::http) fn note(err: &io::Error) {
    if err.kind() == io::ErrorKind::TimedOut {
        mark();
    }
}

/// Whether the client of the connection being served or dropped on this
/// thread vanished.
pub(in crate::transport::http) fn is_gone() -> bool {
    REAPING
        .try_with(|reaping| reaping.gone.get())
        .unwrap_or(false)
}

/// Bounds how long what is written on `socket` may stay unacknowledged:
/// past it, the kernel gives up on the connection and its next read or
/// write fails with `TimedOut`. It also ends a connection whose client
/// keeps its receive window shut for that long (Linux 5.11 and later count
/// zero-window probes against it). Where the option does not exist, or is
/// refused, only the held stream's own bound applies.
pub(in crate::transport::http) fn bound(socket: &TcpStream, bound: Duration) {
    if bound.is_zero() {
        return;
    }
    #[cfg(tcp_user_timeout)]
    if let Err(err) = socket2::SockRef::from(socket).set_tcp_user_timeout(Some(bound)) {
        tracing::debug!(%err, "TCP_USER_TIMEOUT was refused");
    }
    #[cfg(not(tcp_user_timeout))]
    let _ = socket;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_a_timed_out_error_marks_the_client_gone_and_only_its_own() {
        let bound = Duration::from_secs(30);
        let (gone, other) = tokio::join!(
            watched(bound, async {
                note(&io::ErrorKind::ConnectionReset.into());
                note(&io::ErrorKind::BrokenPipe.into());
                assert!(!is_gone());
                note(&io::ErrorKind::TimedOut.into());
                tokio::task::yield_now().await;
                is_gone()
            }),
            watched(bound, async {
                tokio::task::yield_now().await;
                is_gone()
            }),
        );
        assert!(gone);
        assert!(!other, "another connection's mark is its own");
        assert!(!is_gone(), "outside any connection, nothing is gone");
        mark();
        assert!(!is_gone(), "and nothing is marked");
    }

    #[tokio::test]
    async fn the_mark_is_seen_while_the_connection_is_dropped() {
        struct Reports(std::rc::Rc<Cell<Option<bool>>>);
        impl Drop for Reports {
            fn drop(&mut self) {
                self.0.set(Some(is_gone()));
            }
        }
        let seen = std::rc::Rc::new(Cell::new(None));
        let reports = Reports(seen.clone());
        let mut serving = Box::pin(watched(Duration::ZERO, async move {
            let _held = reports;
            mark();
            std::future::pending::<()>().await;
        }));
        assert!(futures_util::poll!(&mut serving).is_pending());
        drop(serving);
        assert_eq!(seen.get(), Some(true));
    }

    #[tokio::test]
    async fn a_zero_bound_is_none() {
        assert_eq!(watched(Duration::ZERO, async { bound_now() }).await, None);
        let bound = Duration::from_millis(1500);
        assert_eq!(watched(bound, async { bound_now() }).await, Some(bound));
        assert_eq!(bound_now(), None);
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
