//! A listen stream as a `text/event-stream` response body.
//!
//! Each message becomes one `data:` line (JSON has no raw newlines), and a
//! comment line keeps an idle connection open. The body pulls a message only
//! when its writer polls it for the next frame, and the writer keeps a
//! bounded buffer ahead of the socket (none for a stream that opened its
//! connection under [`serve`](super::serve), which writes each frame on the
//! socket before it pulls the next; hyper's 8 KiB on its other connections,
//! about 400 KiB by hyper's default), so a client that stops reading stalls
//! its own stream within that bound and its queue's overflow policy takes
//! over; other
//! streams go on.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::{Body, Bytes};
use bytes::BytesMut;
use futures_core::Stream;
use tokio::time::{Instant, Sleep, sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;

use super::socket::vanished;
use crate::serve::ListenStream;
use crate::source::{CloseReason, SourceHandle};
use crate::wire::Message;

/// Chunks at least this long go to hyper as they are, shared with every
/// other stream's copy of the event, so a large event costs each stream the
/// same as a small one. Shorter chunks are copied into the message's frame:
/// each frame costs hyper a chunk header and a write slot, more than
/// copying a few hundred bytes.
const SHARE_FROM: usize = 1024;

/// Long chunks go to hyper in pieces of at most this many bytes (slices,
/// not copies). [`serve`](super::serve) has hyper copy what it writes into
/// the connection's buffer of 8 KiB and flush once that holds 8 KiB, so a
/// piece this long at most doubles the buffer, which the connection keeps.
const PIECE: usize = 8 * 1024;

/// The comment sent after `keepalive` without a message.
const KEEPALIVE: &[u8] = b":\n\n";

/// The SSE body of `stream`, with a keep-alive comment whenever it has been
/// idle for `keepalive`; it holds `token` until it is dropped, and ends
/// early once `cut` is cancelled. Dropped once its connection's client
/// vanished (see `vanished`), it closes the stream's source as
/// [`CloseReason::Unacknowledged`].
pub(super) fn body<H>(
    stream: ListenStream<H>,
    keepalive: Duration,
    token: TaskTrackerToken,
    cut: CancellationToken,
) -> Body
where
    H: SourceHandle + 'static,
{
    let served = Served(stream);
    let messages = futures_util::stream::unfold(served, |mut served| async move {
        let message = served.0.next_message().await?;
        Some((message, served))
    });
    Body::from_stream(Frames {
        messages: Box::pin(messages),
        keepalive,
        idle: Box::pin(sleep(keepalive)),
        ready: VecDeque::new(),
        _token: token,
        cut,
    })
}

/// A stream that, dropped with its body, says whether its client
/// vanished.
struct Served<H: SourceHandle>(ListenStream<H>);

impl<H: SourceHandle> Drop for Served<H> {
    fn drop(&mut self) {
        // Before the stream's own drop closes its source.
        if vanished::is_gone() {
            self.0.set_drop_reason(CloseReason::Unacknowledged);
        }
    }
}

/// The messages of a stream as body frames.
struct Frames<M> {
    /// Kept alive across keep-alives: a message being pulled is never
    /// abandoned halfway.
    messages: Pin<Box<M>>,
    keepalive: Duration,
    idle: Pin<Box<Sleep>>,
    /// The rest of the message being written.
    ready: VecDeque<Bytes>,
    /// Counts this stream among the transport's `Streams`.
    _token: TaskTrackerToken,
    /// Cancelled when the transport's shutdown deadline passed.
    cut: CancellationToken,
}

impl<M: Stream<Item = Message>> Stream for Frames<M> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.cut.is_cancelled() {
            return Poll::Ready(None);
        }
        if let Some(frame) = this.ready.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        let next = match this.messages.as_mut().poll_next(cx) {
            Poll::Ready(Some(message)) => Some(frame(&message, &mut this.ready)),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {
                ready!(this.idle.as_mut().poll(cx));
                Some(Bytes::from_static(KEEPALIVE))
            }
        };
        let deadline = Instant::now() + this.keepalive;
        this.idle.as_mut().reset(deadline);
        Poll::Ready(next.map(Ok))
    }
}

/// `message` as `data: …\n\n`, its long chunks shared (in pieces) and the
/// rest copied around them: the first frame, the others queued in `rest`.
/// A message without long chunks is one frame and queues nothing, so a
/// stream of short messages never allocates the queue, which would
/// otherwise stay allocated as long as the stream.
fn frame(message: &Message, rest: &mut VecDeque<Bytes>) -> Bytes {
    let mut copied = BytesMut::with_capacity(message.len().min(SHARE_FROM) + 8);
    copied.extend_from_slice(b"data: ");
    let mut first = None;
    for chunk in message.chunks() {
        if chunk.len() >= SHARE_FROM {
            let pieces = (0..chunk.len())
                .step_by(PIECE)
                .map(|start| chunk.slice(start..chunk.len().min(start + PIECE)));
            for frame in std::iter::once(copied.split().freeze()).chain(pieces) {
                match first {
                    None => first = Some(frame),
                    Some(_) => rest.push_back(frame),
                }
            }
        } else {
            copied.extend_from_slice(chunk);
        }
    }
    copied.extend_from_slice(b"\n\n");
    let last = copied.freeze();
    match first {
        None => last,
        Some(first) => {
            rest.push_back(last);
            first
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(message: &Message) -> Vec<Bytes> {
        let mut rest = VecDeque::new();
        let first = frame(message, &mut rest);
        std::iter::once(first).chain(rest).collect()
    }

    #[test]
    fn a_short_message_is_one_frame() {
        let mut rest = VecDeque::new();
        let first = frame(&Message::from(br#"{"a":1}"#.to_vec()), &mut rest);
        assert_eq!(first, Bytes::from_static(b"data: {\"a\":1}\n\n"));
        assert_eq!(rest.capacity(), 0, "nothing queued, nothing allocated");
    }

    #[test]
    fn a_long_event_is_shared_not_copied() {
        let event = crate::Event::extension(
            "x/big",
            serde_json::json!({"blob": "x".repeat(4 * SHARE_FROM)})
                .as_object()
                .unwrap()
                .clone(),
            None,
        );
        let message = event.stamped(&crate::SubscriptionId::new(
            &rmcp::model::RequestId::Number(1),
        ));
        let shared = message.chunks().last().unwrap().clone();
        let frames = framed(&message);
        assert_eq!(frames.len(), 3, "one piece");
        assert_eq!(
            frames[1].as_ptr(),
            shared.as_ptr(),
            "the event's text goes out as it is"
        );
        let whole: Vec<u8> = frames.iter().flat_map(|f| f.to_vec()).collect();
        assert_eq!(whole, [&b"data: "[..], &message.to_vec(), b"\n\n"].concat());
    }

    #[test]
    fn a_long_chunk_goes_in_shared_pieces_of_at_most_piece_bytes() {
        let long = Bytes::from(vec![b'x'; 2 * PIECE + 100]);
        let message = Message::from(long.to_vec());
        let frames = framed(&message);
        let lengths: Vec<usize> = frames.iter().map(Bytes::len).collect();
        assert_eq!(lengths, [6, PIECE, PIECE, 100, 2]);
        let whole: Vec<u8> = frames.iter().flat_map(|f| f.to_vec()).collect();
        assert_eq!(whole, [&b"data: "[..], &long, b"\n\n"].concat());
        let shared = message.chunks().next().unwrap().as_ptr();
        assert_eq!(frames[2].as_ptr(), shared.wrapping_add(PIECE));
    }
}
