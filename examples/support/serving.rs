//! What the examples that serve HTTP share: the listening socket and the
//! signals that stop them.

use std::net::SocketAddr;

/// A listening socket on `addr`, shared with other processes when
/// `reuse_port` (each sets it, and the kernel balances new connections).
pub(crate) fn bind(addr: SocketAddr, reuse_port: bool) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does: a restarted server rebinds at once.
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(reuse_port)?;
    socket.bind(addr)?;
    // The backlog a herd of reconnecting clients meets.
    socket.listen(4096)
}

/// Ctrl-C (SIGINT) or SIGTERM. Installed first thing, so that a signal
/// arriving while the server starts is not fatal.
pub(crate) struct Shutdown {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Shutdown {
    pub(crate) fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    pub(crate) async fn requested(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
