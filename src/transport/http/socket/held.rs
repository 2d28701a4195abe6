//! A held stream's response, written on the socket (see `first`): the
//! head, then the body's frames as HTTP/1.1 chunks as they come, nothing
//! kept but what is being written. A frame alone is written as it is;
//! frames ready together are gathered into one write of at most about
//! [`BUFFER`] bytes, as hyper's buffer would, so a burst costs a write per
//! 8 KiB, not one per event. The response says `connection: close`: once
//! it ends, so does the connection.
//!
//! The socket is the only buffer: a client that stops reading fills it,
//! the body is not polled until it drains, and the stream's own bound
//! and overflow policy take over, as under hyper (whose 8 KiB buffer came
//! before the socket's). Meanwhile the socket is watched for the client
//! leaving, which drops the body, so the listener closes at once.
//!
//! A socket that takes no byte for the connection's unacknowledged bound
//! while bytes wait is given up, its client marked vanished (see
//! `vanished`): where the kernel bounds unacknowledged data itself, its
//! timed-out read or write says so first.

use std::future::Future;
use std::io::{self, IoSlice, Write as _};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::SystemTime;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use axum::http::{HeaderName, StatusCode};
use axum::response::Response;
use bytes::BytesMut;
use tokio::io::AsyncWrite;
use tokio::time::{Instant, Sleep};

use super::first::BUFFER;
use super::listener::Socket;
use super::vanished;

/// Writes `response` on `socket`, then closes it; returns early when the
/// client leaves or vanishes, or a write fails.
pub(in crate::transport::http) fn write(socket: Socket, response: Response) -> HeldWrite {
    let (parts, body) = response.into_parts();
    let length = body.size_hint().exact();
    let framing = Framing::of(parts.status, length);
    HeldWrite {
        socket,
        body,
        out: Some(Out::whole(head(&parts, framing, length))),
        framing,
        end: None,
        stall: None,
    }
}

/// The future [`write`] returns.
pub(in crate::transport::http) struct HeldWrite {
    socket: Socket,
    body: Body,
    /// What is being written: the head, or frames (the last chunk with
    /// the last of them).
    out: Option<Out>,
    framing: Framing,
    /// How the body ended; what is left to write is in `out`.
    end: Option<BodyEnd>,
    /// While the socket takes none of `out`: when it is given up. Made
    /// only then, so a stream whose writes go out keeps no timer.
    stall: Option<Pin<Box<Sleep>>>,
}

/// How a body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyEnd {
    /// Its last frame came, and the last chunk is written after it.
    Complete,
    /// It failed: what came before is written, no last chunk, so the
    /// client sees the response cut.
    Cut,
}

impl Future for HeldWrite {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if let Some(left) = client_left(&this.socket, cx) {
            if let Err(err) = left {
                vanished::note(&err);
            }
            return Poll::Ready(());
        }
        loop {
            if let Some(out) = &mut this.out {
                let before = out.written;
                match out.poll_write(&mut this.socket, cx) {
                    Poll::Ready(Ok(())) => {
                        this.out = None;
                        this.stall = None;
                    }
                    Poll::Ready(Err(err)) => {
                        vanished::note(&err);
                        return Poll::Ready(());
                    }
                    Poll::Pending => {
                        let took = out.written != before;
                        if this.stalled(took, cx) {
                            vanished::mark();
                            return Poll::Ready(());
                        }
                        return Poll::Pending;
                    }
                }
            }
            if this.end.is_some() {
                return Poll::Ready(());
            }
            this.out = ready!(this.gather(cx));
        }
    }
}

impl HeldWrite {
    /// Whether the socket has taken no byte for the bound while bytes
    /// wait; `took` says whether it took some in this poll, which starts
    /// the bound again. Registers `cx` for the bound's end.
    fn stalled(&mut self, took: bool, cx: &mut Context<'_>) -> bool {
        let Some(bound) = vanished::bound_now() else {
            return false;
        };
        let deadline = Instant::now() + bound;
        let stall = match &mut self.stall {
            Some(stall) => {
                if took {
                    stall.as_mut().reset(deadline);
                }
                stall
            }
            None => self
                .stall
                .insert(Box::pin(tokio::time::sleep_until(deadline))),
        };
        stall.as_mut().poll(cx).is_ready()
    }

    /// The frames ready now, up to about [`BUFFER`] bytes, as one write;
    /// pending until at least one is ready or the body ends. `None` once
    /// the body ended with nothing more to write.
    fn gather(&mut self, cx: &mut Context<'_>) -> Poll<Option<Out>> {
        let mut batch = Batch::Empty;
        while batch.len() < BUFFER {
            match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Pending if batch.is_empty() => return Poll::Pending,
                Poll::Pending => break,
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                        && self.framing != Framing::None
                    {
                        batch.push(Out::frame(data, self.framing));
                    }
                }
                Poll::Ready(Some(Err(_))) => {
                    self.end = Some(BodyEnd::Cut);
                    break;
                }
                Poll::Ready(None) => {
                    self.end = Some(BodyEnd::Complete);
                    if self.framing == Framing::Chunked {
                        batch.push(Out::whole(Bytes::from_static(b"0\r\n\r\n")));
                    }
                    break;
                }
            }
        }
        Poll::Ready(batch.into_out())
    }
}

/// Frames ready together: the first kept as it is (no copy for a frame
/// alone, the common case of a held stream), the next ones copied behind
/// it into one buffer.
enum Batch {
    Empty,
    One(Out),
    Many(BytesMut),
}

impl Batch {
    fn len(&self) -> usize {
        match self {
            Self::Empty => 0,
            Self::One(out) => out.len(),
            Self::Many(buf) => buf.len(),
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Self::Empty)
    }

    fn push(&mut self, out: Out) {
        *self = match std::mem::replace(self, Self::Empty) {
            Self::Empty => Self::One(out),
            Self::One(first) => {
                let mut buf = BytesMut::with_capacity(first.len() + out.len());
                first.copy_to(&mut buf);
                out.copy_to(&mut buf);
                Self::Many(buf)
            }
            Self::Many(mut buf) => {
                out.copy_to(&mut buf);
                Self::Many(buf)
            }
        };
    }

    fn into_out(self) -> Option<Out> {
        match self {
            Self::Empty => None,
            Self::One(out) => Some(out),
            Self::Many(buf) => Some(Out::whole(buf.freeze())),
        }
    }
}

/// Whether the client closed its side (`Ok`) or the socket failed (`Err`);
/// `None` while it is there. Anything it sends meanwhile is read and
/// dropped: the response said `connection: close`, so no further request
/// is served on this connection.
fn client_left(socket: &Socket, cx: &mut Context<'_>) -> Option<io::Result<()>> {
    let mut sink = [0; 64];
    loop {
        match socket.poll_read_ready(cx) {
            Poll::Pending => return None,
            Poll::Ready(Err(err)) => return Some(Err(err)),
            Poll::Ready(Ok(())) => match socket.try_read(&mut sink) {
                Ok(0) => return Some(Ok(())),
                Err(err) if err.kind() != io::ErrorKind::WouldBlock => return Some(Err(err)),
                // Read (and dropped), or readiness cleared: look again, which
                // registers for the next readiness.
                Ok(_) | Err(_) => {}
            },
        }
    }
}

/// How the body is delimited. The length itself is only the head's: a
/// held stream keeps one byte for this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No body, whatever the response holds (`204`, `304`).
    None,
    /// `content-length`: the body's frames as they are.
    Length,
    /// `transfer-encoding: chunked`: a stream.
    Chunked,
}

impl Framing {
    fn of(status: StatusCode, exact_len: Option<u64>) -> Self {
        if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
            return Self::None;
        }
        exact_len.map_or(Self::Chunked, |_| Self::Length)
    }
}

/// Headers this writer sets itself: the framing and the connection's end.
const OWN_HEADERS: [HeaderName; 3] = [CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING];

/// The response's head as HTTP/1.1 writes it; `length` is the body's, when
/// it is known.
fn head(parts: &axum::http::response::Parts, framing: Framing, length: Option<u64>) -> Bytes {
    let mut head = Vec::with_capacity(256);
    let status = parts.status;
    // Writes into a `Vec` cannot fail.
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or("")
    );
    for (name, value) in &parts.headers {
        if !OWN_HEADERS.contains(name) {
            header(&mut head, name.as_str(), value.as_bytes());
        }
    }
    if !parts.headers.contains_key(DATE) {
        let date = httpdate::fmt_http_date(SystemTime::now());
        header(&mut head, DATE.as_str(), date.as_bytes());
    }
    match framing {
        Framing::None => {}
        Framing::Length => {
            let length = length.unwrap_or_default().to_string();
            header(&mut head, "content-length", length.as_bytes());
        }
        Framing::Chunked => header(&mut head, "transfer-encoding", b"chunked"),
    }
    header(&mut head, "connection", b"close");
    head.extend_from_slice(b"\r\n");
    head.into()
}

fn header(head: &mut Vec<u8>, name: &str, value: &[u8]) {
    head.extend_from_slice(name.as_bytes());
    head.extend_from_slice(b": ");
    head.extend_from_slice(value);
    head.extend_from_slice(b"\r\n");
}

/// Bytes being written: a chunk's size line, its data and its end, or
/// data alone; `written` counts across the three.
struct Out {
    size: ChunkSize,
    data: Bytes,
    end: &'static [u8],
    written: usize,
}

impl Out {
    fn whole(data: Bytes) -> Self {
        Self {
            size: ChunkSize::default(),
            data,
            end: b"",
            written: 0,
        }
    }

    fn frame(data: Bytes, framing: Framing) -> Self {
        if framing != Framing::Chunked {
            return Self::whole(data);
        }
        Self {
            size: ChunkSize::of(data.len()),
            data,
            end: b"\r\n",
            written: 0,
        }
    }

    /// Its bytes in all, written or not.
    fn len(&self) -> usize {
        self.size.as_bytes().len() + self.data.len() + self.end.len()
    }

    /// Appends its bytes (none written yet) to `buf`.
    fn copy_to(&self, buf: &mut BytesMut) {
        debug_assert_eq!(self.written, 0);
        buf.extend_from_slice(self.size.as_bytes());
        buf.extend_from_slice(&self.data);
        buf.extend_from_slice(self.end);
    }

    /// Writes what is left, in as few writes as the socket takes.
    fn poll_write(&mut self, socket: &mut Socket, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut slices = [IoSlice::new(&[]); 3];
            let mut count = 0;
            let mut skip = self.written;
            for part in [self.size.as_bytes(), &self.data[..], self.end] {
                if skip >= part.len() {
                    skip -= part.len();
                    continue;
                }
                slices[count] = IoSlice::new(&part[skip..]);
                skip = 0;
                count += 1;
            }
            if count == 0 {
                return Poll::Ready(Ok(()));
            }
            let n = ready!(Pin::new(&mut *socket).poll_write_vectored(cx, &slices[..count]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
    }
}

/// A chunk's size line, `{hex}\r\n`, kept inline.
#[derive(Default)]
struct ChunkSize {
    bytes: [u8; 18],
    len: u8,
}

impl ChunkSize {
    fn of(len: usize) -> Self {
        let mut size = Self::default();
        let mut line = &mut size.bytes[..];
        // At most 16 hex digits and CRLF: it fits.
        let _ = write!(line, "{len:x}\r\n");
        size.len = (18 - line.len()) as u8;
        size
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use tokio::net::TcpStream;

    #[test]
    fn a_chunk_is_its_hex_size_its_data_and_crlf() {
        assert_eq!(ChunkSize::of(0x1a2b).as_bytes(), b"1a2b\r\n");
        assert_eq!(ChunkSize::of(usize::MAX).as_bytes().len(), 18);
        let out = Out::frame(Bytes::from_static(b"data: x\n\n"), Framing::Chunked);
        assert_eq!(
            [out.size.as_bytes(), &out.data[..], out.end].concat(),
            b"9\r\ndata: x\n\n\r\n"
        );
    }

    #[test]
    fn the_head_frames_the_body_itself_and_closes_the_connection() {
        let mut response = Response::new(());
        let headers = response.headers_mut();
        headers.insert(
            "content-type",
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(CONNECTION, HeaderValue::from_static("keep-alive"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("7"));
        let (parts, ()) = response.into_parts();
        let head = head(&parts, Framing::Chunked, None);
        let head = std::str::from_utf8(&head).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"));
        assert!(head.contains("\r\ndate: "));
        assert!(head.ends_with("\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"));
        assert!(!head.contains("keep-alive") && !head.contains("content-length"));
        let with_length = super::head(&parts, Framing::Length, Some(7));
        let with_length = std::str::from_utf8(&with_length).unwrap();
        assert!(with_length.ends_with("\r\ncontent-length: 7\r\nconnection: close\r\n\r\n"));
    }

    /// A held response over a loopback socket whose body gives `frames`,
    /// all ready at once; its head already written.
    async fn held_with(frames: Vec<Bytes>) -> HeldWrite {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let frames = frames.into_iter().map(Ok::<_, io::Error>);
        let body = Body::from_stream(futures_util::stream::iter(frames));
        let mut held = write(Socket::Tcp(server), Response::new(body));
        held.out = None;
        held
    }

    async fn gathered(held: &mut HeldWrite) -> Vec<u8> {
        let out = std::future::poll_fn(|cx| held.gather(cx)).await.unwrap();
        [out.size.as_bytes(), &out.data[..], out.end].concat()
    }

    #[tokio::test]
    async fn frames_ready_together_leave_in_one_write_with_the_last_chunk() {
        let frames = ["a", "bc", "def"].map(|f| Bytes::from_static(f.as_bytes()));
        let mut held = held_with(frames.to_vec()).await;
        assert_eq!(
            gathered(&mut held).await,
            b"1\r\na\r\n2\r\nbc\r\n3\r\ndef\r\n0\r\n\r\n"
        );
        assert_eq!(held.end, Some(BodyEnd::Complete));
    }

    #[tokio::test]
    async fn a_write_gathers_about_the_buffer_at_most() {
        let frame = Bytes::from(vec![b'x'; BUFFER / 2 + 1]);
        let mut held = held_with(vec![frame.clone(), frame.clone(), frame]).await;
        let chunk = BUFFER / 2 + 1 + "1001\r\n\r\n".len();
        // Two frames pass the bound: the third waits for the next write.
        assert_eq!(gathered(&mut held).await.len(), 2 * chunk);
        assert_eq!(held.end, None);
        assert_eq!(gathered(&mut held).await.len(), chunk + b"0\r\n\r\n".len());
        assert_eq!(held.end, Some(BodyEnd::Complete));
    }

    #[test]
    fn a_response_without_a_body_is_not_framed() {
        assert_eq!(Framing::of(StatusCode::NO_CONTENT, None), Framing::None);
        assert_eq!(Framing::of(StatusCode::OK, Some(3)), Framing::Length);
        assert_eq!(Framing::of(StatusCode::OK, None), Framing::Chunked);
    }

    /// An endless body of 64 KiB frames held on a loopback socket whose
    /// client is returned.
    async fn endless() -> (HeldWrite, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let frame = Bytes::from(vec![b'x'; 64 * 1024]);
        let frames = futures_util::stream::repeat_with(move || Ok::<_, io::Error>(frame.clone()));
        let held = write(
            Socket::Tcp(server),
            Response::new(Body::from_stream(frames)),
        );
        (held, client)
    }

    #[tokio::test]
    async fn a_socket_that_takes_nothing_for_the_bound_is_given_up() {
        let bound = std::time::Duration::from_millis(300);
        let (held, _client) = endless().await;
        let started = Instant::now();
        let gone = vanished::watched(bound, async {
            tokio::time::timeout(bound * 20, held)
                .await
                .expect("given up");
            vanished::is_gone()
        });
        assert!(gone.await);
        assert!(started.elapsed() >= bound);
    }

    #[tokio::test]
    async fn a_client_that_reads_keeps_its_stream() {
        use tokio::io::AsyncReadExt as _;
        // Long enough for the kernel's buffers: a sender's socket takes
        // bytes again only once a good part of it has drained.
        let bound = std::time::Duration::from_secs(1);
        let (held, mut client) = endless().await;
        let gone = vanished::watched(bound, async {
            let mut held = std::pin::pin!(held);
            let mut buf = vec![0; 1024 * 1024];
            for _ in 0..10 {
                // A reader slower than the writer, but never away for long.
                let pause = tokio::time::sleep(bound / 4);
                tokio::select! {
                    () = &mut held => panic!("a reading client was given up"),
                    () = pause => {}
                }
                client.read_exact(&mut buf).await.unwrap();
            }
            vanished::is_gone()
        });
        assert!(!gone.await);
    }

    #[tokio::test]
    async fn without_a_bound_a_full_socket_waits() {
        let (held, _client) = endless().await;
        let waited = vanished::watched(std::time::Duration::ZERO, async {
            tokio::time::timeout(std::time::Duration::from_millis(500), held).await
        });
        assert!(waited.await.is_err(), "nothing gave up");
    }
}
