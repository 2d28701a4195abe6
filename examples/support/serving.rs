//! What the examples that serve HTTP share: the listening socket and the
//! signals that stop them.

use std::net::SocketAddr;
use std::path::PathBuf;

use mcp_subscriptions::http::Listener;

/// Where a server listens: `HOST:PORT`, or `unix:PATH` for a Unix domain
/// socket.
#[derive(Clone, Debug)]
pub(crate) enum Bind {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::str::FromStr for Bind {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.strip_prefix("unix:") {
            Some("") => Err("unix: names no path".to_owned()),
            Some(path) => Ok(Self::Unix(path.into())),
            None => value
                .parse()
                .map(Self::Tcp)
                .map_err(|err| format!("{value:?} is neither HOST:PORT nor unix:PATH: {err}")),
        }
    }
}

impl std::fmt::Display for Bind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(addr) => write!(f, "{addr}"),
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// Listens where `bind` says (a TCP port shared as [`bind`] shares it), and
/// what to say it listens on: `http://ADDR/mcp`, or `unix:PATH
/// http://localhost/mcp` (the socket, then the URL requests name).
#[allow(dead_code, reason = "the gateway example binds TCP alone")]
pub(crate) fn listen(bind: &Bind, reuse_port: bool) -> std::io::Result<(Listener, String)> {
    match bind {
        Bind::Tcp(addr) => {
            let listener = self::bind(*addr, reuse_port)?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            Ok((listener.into(), url))
        }
        Bind::Unix(path) => {
            let listener = Listener::bind_unix(path)?;
            Ok((listener, format!("{bind} http://localhost/mcp")))
        }
    }
}

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
