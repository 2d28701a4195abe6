//! A connection's first request, read before hyper sees the connection,
//! to tell whether it opens a held stream.
//!
//! A held stream lives for hours and writes a few events, so what its
//! connection keeps is what it costs. Under hyper that is two 8 KiB
//! buffers (its least) and its per-connection state, for the stream's
//! whole life; served on the socket (`held`), only the stream itself. So
//! the server reads each connection's first request here: a
//! request that holds a stream (a `subscriptions/listen` POST, or an older
//! revision's `GET` of its session's stream) is answered on the socket; any
//! other, or anything this does not fully understand, goes to hyper with
//! the bytes read so far, as if nothing had read them.
//!
//! Only the plainest requests are taken: HTTP/1.1, a `Content-Length` body
//! (no chunked body, no `Expect`, no upgrade), head and body within
//! [`BUFFER`] bytes, and nothing sent after the body. Hyper answers the
//! rest, errors included, as it always has.

use std::future::poll_fn;
use std::io;
use std::task::Poll;

use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue, Method, Request, Uri, Version};
use serde::Deserialize;

use super::listener::Socket;
use super::stop::Watch;

/// The most a first request (head and body) may take to be served on the
/// socket; hyper's buffer, so anything longer goes where it would anyway.
pub(in crate::transport::http) const BUFFER: usize = 8 * 1024;

/// The first read's buffer: a listen request's head and body take a few
/// hundred bytes. It grows, up to [`BUFFER`], for a longer one.
const FIRST_READ: usize = 1024;

/// The most headers a request taken here may have; one with more goes to
/// hyper (whose own limit is 100).
const MAX_HEADERS: usize = 32;

/// What a connection's first request turned out to be.
pub(in crate::transport::http) enum First {
    /// It holds a stream: answer it on the socket (boxed, as it is
    /// large and brief).
    Held(Box<Request<Body>>),
    /// Anything else: hyper's, with the bytes already read.
    Other(Bytes),
    /// The client left, or the server stops, before a whole request came.
    Gone,
}

/// Reads `socket` until its first request is whole, or known not to be one
/// this serves on the socket.
pub(in crate::transport::http) async fn read(socket: &Socket, stop: &mut Watch) -> First {
    let mut buf = Vec::with_capacity(FIRST_READ);
    loop {
        if buf.len() == buf.capacity() {
            if buf.len() >= BUFFER {
                return First::Other(buf.into());
            }
            buf.reserve(buf.len().min(BUFFER - buf.len()));
        }
        match read_some(socket, stop, &mut buf).await {
            Ok(0) | Err(_) => return First::Gone,
            Ok(_) => {}
        }
        match classify(&buf) {
            Classified::Partial => {}
            Classified::Held(request) => return First::Held(request),
            Classified::Other => return First::Other(buf.into()),
        }
    }
}

/// Reads what the socket has into `buf`'s spare room; `Ok(0)` at its end
/// or once the server stops.
async fn read_some(socket: &Socket, stop: &mut Watch, buf: &mut Vec<u8>) -> io::Result<usize> {
    poll_fn(|cx| {
        if stop.stopped_now(cx) {
            return Poll::Ready(Ok(0));
        }
        loop {
            std::task::ready!(socket.poll_read_ready(cx))?;
            match socket.try_read_buf(buf) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                read => return Poll::Ready(read),
            }
        }
    })
    .await
}

/// What a connection's first bytes are, to the socket path.
#[derive(Debug)]
pub enum Classified {
    /// Not whole yet: read more.
    Partial,
    /// A whole request that holds a stream, and nothing after it: answered
    /// on the socket.
    Held(Box<Request<Body>>),
    /// Anything else: hyper's.
    Other,
}

/// What the bytes read so far from a connection are.
pub fn classify(bytes: &[u8]) -> Classified {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    let head_len = match head.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Classified::Partial,
        Err(_) => return Classified::Other,
    };
    let Some(body_len) = plain_body_len(&head) else {
        return Classified::Other;
    };
    // A body that cannot fit (its length near `usize::MAX` included) is
    // hyper's to read.
    let end = match head_len.checked_add(body_len) {
        Some(end) if end <= BUFFER => end,
        _ => return Classified::Other,
    };
    match bytes.len().cmp(&end) {
        std::cmp::Ordering::Less => return Classified::Partial,
        // A second request sent behind the first: hyper's to pipeline.
        std::cmp::Ordering::Greater => return Classified::Other,
        std::cmp::Ordering::Equal => {}
    }
    let body = &bytes[head_len..];
    if !holds_a_stream(&head, body) {
        return Classified::Other;
    }
    request(&head, body).map_or(Classified::Other, Classified::Held)
}

/// The body's length for a request plain enough to take: HTTP/1.1, no
/// upgrade, no `Expect`, no `Transfer-Encoding`, one `Content-Length` (or
/// none, for an empty body).
fn plain_body_len(head: &httparse::Request<'_, '_>) -> Option<usize> {
    if head.version != Some(1) {
        return None;
    }
    let mut len = None;
    for header in head.headers.iter() {
        let name = header.name;
        if ["upgrade", "expect", "transfer-encoding"]
            .iter()
            .any(|refused| name.eq_ignore_ascii_case(refused))
        {
            return None;
        }
        if name.eq_ignore_ascii_case("content-length") {
            let value = std::str::from_utf8(header.value).ok()?.trim();
            // Digits only: `parse` would also take a leading `+`.
            if len.is_some() || value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            len = Some(value.parse().ok()?);
        }
    }
    Some(len.unwrap_or(0))
}

/// Whether the request holds a stream: a `subscriptions/listen` POST, or a
/// `GET` asking for an event stream (an older revision's session stream).
/// What it is answered is the router's to say, refusals included.
fn holds_a_stream(head: &httparse::Request<'_, '_>, body: &[u8]) -> bool {
    /// The one field looked at; the rest of the body is the router's.
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    match head.method {
        Some("POST") => serde_json::from_slice::<Message<'_>>(body)
            .is_ok_and(|message| message.method == Some("subscriptions/listen")),
        Some("GET") => head.headers.iter().any(|header| {
            header.name.eq_ignore_ascii_case("accept")
                && header
                    .value
                    .windows(b"text/event-stream".len())
                    .any(|window| window.eq_ignore_ascii_case(b"text/event-stream"))
        }),
        _ => false,
    }
}

/// The request as the router takes it; `None` for anything `http` refuses
/// (hyper then answers it).
fn request(head: &httparse::Request<'_, '_>, body: &[u8]) -> Option<Box<Request<Body>>> {
    let mut request = Box::new(Request::new(Body::from(Bytes::copy_from_slice(body))));
    *request.method_mut() = Method::from_bytes(head.method?.as_bytes()).ok()?;
    *request.uri_mut() = Uri::try_from(head.path?).ok()?;
    *request.version_mut() = Version::HTTP_11;
    let headers = request.headers_mut();
    headers.reserve(head.headers.len());
    for header in head.headers.iter() {
        headers.append(
            HeaderName::from_bytes(header.name.as_bytes()).ok()?,
            HeaderValue::from_bytes(header.value).ok()?,
        );
    }
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &str, extra: &str) -> String {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\n{extra}Content-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    const LISTEN: &str = r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}"#;

    fn held(bytes: &str) -> Option<Box<Request<Body>>> {
        match classify(bytes.as_bytes()) {
            Classified::Held(request) => Some(request),
            _ => None,
        }
    }

    #[test]
    fn a_whole_listen_post_is_held_with_its_head_and_body() {
        let request = held(&post(LISTEN, "Authorization: Bearer t\r\n")).unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(request.uri(), "/mcp");
        assert_eq!(request.headers()["authorization"], "Bearer t");
        assert_eq!(
            request.headers()["content-length"],
            LISTEN.len().to_string()
        );
    }

    #[test]
    fn a_listen_post_cut_anywhere_is_partial() {
        let whole = post(LISTEN, "");
        for cut in 1..whole.len() {
            assert!(
                matches!(classify(&whole.as_bytes()[..cut]), Classified::Partial),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_get_of_an_event_stream_is_held_and_a_websocket_upgrade_is_not() {
        let get = "GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n";
        assert!(held(get).is_some());
        let upgrade = "GET /ws HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\
                       Upgrade: websocket\r\nConnection: upgrade\r\n\r\n";
        assert!(held(upgrade).is_none());
        assert!(held("GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n").is_none());
    }

    #[test]
    fn anything_not_plain_goes_to_hyper() {
        let other = |bytes: &str| matches!(classify(bytes.as_bytes()), Classified::Other);
        // Another method, HTTP/1.0, a chunked body, `Expect`, two lengths,
        // a bad length, bytes after the body, garbage.
        assert!(other(&post(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            ""
        )));
        assert!(other(&post(LISTEN, "").replacen("HTTP/1.1", "HTTP/1.0", 1)));
        assert!(other(&post(LISTEN, "Transfer-Encoding: chunked\r\n")));
        assert!(other(&post(LISTEN, "Expect: 100-continue\r\n")));
        assert!(other(&post(LISTEN, "Content-Length: 3\r\n")));
        assert!(other(
            &post(LISTEN, "").replace(&format!("Length: {}", LISTEN.len()), "Length: +1")
        ));
        assert!(other(&(post(LISTEN, "") + "GET / HTTP/1.1\r\n\r\n")));
        assert!(other("\x16\x03\x01 not http\r\n\r\n"));
    }

    #[test]
    fn a_request_longer_than_the_buffer_goes_to_hyper() {
        let token = "t".repeat(BUFFER);
        let long = post(LISTEN, &format!("Authorization: Bearer {token}\r\n"));
        assert!(matches!(classify(long.as_bytes()), Classified::Other));
    }

    #[test]
    fn a_content_length_that_cannot_fit_goes_to_hyper() {
        for len in [usize::MAX.to_string(), "99999999999999999999999".into()] {
            let head =
                format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n{{}}");
            assert!(matches!(classify(head.as_bytes()), Classified::Other));
        }
    }
}
