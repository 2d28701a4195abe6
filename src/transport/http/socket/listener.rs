//! Where a server accepts its connections: a TCP port, or a Unix domain
//! socket, and the connection each accept gives.

use std::io;
use std::net::IpAddr;
#[cfg(unix)]
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BufMut;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
#[cfg(unix)]
use tokio::net::{UnixListener, UnixStream};

/// What an HTTP [`Server`](crate::http::Server) accepts connections on: a
/// TCP listener, or (on Unix) a Unix domain socket's, served alike
/// (deadlines, shedding, held streams on the socket).
///
/// Over a Unix socket, who may connect is who may open the socket's file:
/// it is created with the process's umask, in a directory whose own
/// permissions also apply; set them (`std::fs::set_permissions`, or a
/// directory only the host's user can enter) before clients come. A
/// connection there has no address, so the
/// [admission limits](crate::http::AdmissionLimits) per address do not
/// apply to it (those per principal do), and nor does the bound on
/// unacknowledged data, which is TCP's (a local peer that goes away closes
/// its end).
///
/// ```no_run
/// # async fn run(app: axum::Router) -> std::io::Result<()> {
/// use mcp_subscriptions::http::Listener;
///
/// let listener = Listener::bind_unix("/run/my-server/mcp.sock")?;
/// mcp_subscriptions::http::serve(listener, app, std::future::pending()).await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Listener {
    /// A TCP port.
    Tcp(TcpListener),
    /// A Unix domain socket.
    #[cfg(unix)]
    Unix(UnixListener),
}

impl From<TcpListener> for Listener {
    fn from(listener: TcpListener) -> Self {
        Self::Tcp(listener)
    }
}

#[cfg(unix)]
impl From<UnixListener> for Listener {
    fn from(listener: UnixListener) -> Self {
        Self::Unix(listener)
    }
}

impl Listener {
    /// Listens on a Unix domain socket at `path`. A socket file left there
    /// by a server that is gone (nothing accepts on it) is replaced; any
    /// other file, or a socket a live server listens on, is an error.
    ///
    /// # Errors
    ///
    /// What binding the socket failed with: `AddrInUse` when the path is
    /// taken, as above.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[cfg(unix)]
    pub fn bind_unix(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        match UnixListener::bind(path) {
            Err(err) if err.kind() == io::ErrorKind::AddrInUse && is_stale(path) => {
                std::fs::remove_file(path)?;
                UnixListener::bind(path).map(Self::Unix)
            }
            bound => bound.map(Self::Unix),
        }
    }

    /// Accepts a connection, and the client's address where it has one.
    pub(in crate::transport::http) fn poll_accept(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(Socket, Option<IpAddr>)>> {
        match self {
            Self::Tcp(listener) => listener
                .poll_accept(cx)
                .map_ok(|(socket, address)| (Socket::Tcp(socket), Some(address.ip()))),
            #[cfg(unix)]
            Self::Unix(listener) => listener
                .poll_accept(cx)
                .map_ok(|(socket, _)| (Socket::Unix(socket), None)),
        }
    }

    /// Accepts a connection, and the client's address where it has one.
    pub(in crate::transport::http) async fn accept(&self) -> io::Result<(Socket, Option<IpAddr>)> {
        std::future::poll_fn(|cx| self.poll_accept(cx)).await
    }
}

/// Whether the socket file at `path` is one nothing accepts on.
#[cfg(unix)]
fn is_stale(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_socket());
    is_socket
        && std::os::unix::net::UnixStream::connect(path)
            .is_err_and(|err| err.kind() == io::ErrorKind::ConnectionRefused)
}

/// One accepted connection.
#[derive(Debug)]
pub(in crate::transport::http) enum Socket {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

/// `$socket.$call`, whichever socket it is.
macro_rules! each {
    ($socket:expr, $inner:ident => $call:expr) => {
        match $socket {
            Socket::Tcp($inner) => $call,
            #[cfg(unix)]
            Socket::Unix($inner) => $call,
        }
    };
}

impl Socket {
    /// The TCP connection, for what only TCP has (no delay, the bound on
    /// unacknowledged data).
    pub(in crate::transport::http) fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Self::Tcp(socket) => Some(socket),
            #[cfg(unix)]
            Self::Unix(_) => None,
        }
    }

    pub(in crate::transport::http) fn poll_read_ready(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, socket => socket.poll_read_ready(cx))
    }

    pub(in crate::transport::http) fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        each!(self, socket => socket.try_read(buf))
    }

    pub(in crate::transport::http) fn try_read_buf(
        &self,
        buf: &mut impl BufMut,
    ) -> io::Result<usize> {
        each!(self, socket => socket.try_read_buf(buf))
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self.get_mut(), socket => Pin::new(socket).poll_read(cx, buf))
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self.get_mut(), socket => Pin::new(socket).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self.get_mut(), socket => Pin::new(socket).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        each!(self, socket => socket.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), socket => Pin::new(socket).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self.get_mut(), socket => Pin::new(socket).poll_shutdown(cx))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_a_tcp_connection_takes_tcps_options() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (tcp, address) = Listener::from(listener).accept().await.unwrap();
        assert!(tcp.tcp().is_some(), "no delay and the unacknowledged bound");
        assert_eq!(address, Some(IpAddr::from([127, 0, 0, 1])));
        let (unix, _) = UnixStream::pair().unwrap();
        assert!(Socket::Unix(unix).tcp().is_none());
    }

    #[tokio::test]
    async fn a_stale_socket_file_is_replaced_and_a_live_one_is_not() {
        let dir = std::env::temp_dir().join(format!("mcp-sock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stale.sock");
        let _ = std::fs::remove_file(&path);
        // A server that is gone leaves its file behind.
        drop(UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let live = Listener::bind_unix(&path).expect("the stale file is replaced");
        let again = Listener::bind_unix(&path).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AddrInUse, "a live one is kept");
        drop(live);
        // Any other file is not a socket to replace.
        let plain = dir.join("plain");
        std::fs::write(&plain, b"x").unwrap();
        assert!(Listener::bind_unix(&plain).is_err());
        assert!(plain.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
