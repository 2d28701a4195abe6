//! A socket whose first reads give back bytes already read from it: the
//! first request `first` read, handed to hyper as if unread; and whose
//! errors tell whether its client vanished.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::listener::Socket;
use super::vanished;
use axum::body::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub(in crate::transport::http) struct Rewind {
    /// Read already, not yet given back; empty (and freed) once it is.
    read: Bytes,
    socket: Socket,
}

impl Rewind {
    pub(in crate::transport::http) fn new(read: Bytes, socket: Socket) -> Self {
        Self { read, socket }
    }
}

/// `polled`, its client marked vanished when it timed out: before hyper
/// drops the stream it serves.
fn noted<T>(polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
    if let Poll::Ready(Err(err)) = &polled {
        vanished::note(err);
    }
    polled
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.read.is_empty() {
            let polled = Pin::new(&mut this.socket).poll_read(cx, buf);
            return noted(polled);
        }
        let n = this.read.len().min(buf.remaining());
        buf.put_slice(&this.read.split_to(n));
        if this.read.is_empty() {
            this.read = Bytes::new();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.socket).poll_write(cx, buf);
        noted(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.socket).poll_write_vectored(cx, bufs);
        noted(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.socket.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.socket).poll_flush(cx);
        noted(polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    #[tokio::test]
    async fn the_bytes_read_come_first_then_the_socket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        client.write_all(b" world").await.unwrap();
        drop(client);
        let mut rewound = Rewind::new(Bytes::from_static(b"hello"), Socket::Tcp(server));
        let mut small = [0; 3];
        rewound.read_exact(&mut small).await.unwrap();
        assert_eq!(&small, b"hel");
        let mut rest = String::new();
        rewound.read_to_string(&mut rest).await.unwrap();
        assert_eq!(rest, "lo world");
    }
}
