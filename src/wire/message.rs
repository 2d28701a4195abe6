//! One message of a listen stream, ready to write, in up to three chunks
//! that may be shared with other streams' messages.

use std::fmt;
use std::io::IoSlice;

use bytes::{Buf, Bytes};

/// One JSON-RPC message of a listen stream, ready to write.
///
/// An event's message for one stream is the event's rendering with that
/// stream's subscription id spliced in: the text before the id, the id, and
/// the text after it. The two halves are shared with every other stream's
/// message for the same event rather than copied, so a message costs the
/// same to make whatever the size of the event, and writing it needs no
/// copy before the transport's own.
///
/// Read it as one buffer with [`to_vec`](Self::to_vec), chunk by chunk with
/// [`chunks`](Self::chunks), or as a [`bytes::Buf`] (vectored writes
/// included).
///
/// ```
/// use mcp_subscriptions::{Event, SubscriptionId};
/// use rmcp::model::RequestId;
///
/// let event = Event::resource_updated("file:///a");
/// let message = event.stamped(&SubscriptionId::new(&RequestId::Number(7)));
/// assert_eq!(message.to_vec(), event.to_stamped_json(&RequestId::Number(7)).into_bytes());
/// ```
#[derive(Clone, Default)]
pub struct Message {
    parts: [Bytes; 3],
}

impl Message {
    /// `before`, then `id`, then `after`.
    pub(crate) fn spliced(before: Bytes, id: Bytes, after: Bytes) -> Self {
        Self {
            parts: [before, id, after],
        }
    }

    /// The message's length in bytes.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }

    /// Whether the message has no bytes.
    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(Bytes::is_empty)
    }

    /// The message's chunks in order, none empty.
    pub fn chunks(&self) -> impl Iterator<Item = &Bytes> {
        self.parts.iter().filter(|part| !part.is_empty())
    }

    /// The message in one buffer (a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for chunk in self.chunks() {
            out.extend_from_slice(chunk);
        }
        out
    }
}

impl From<Vec<u8>> for Message {
    fn from(bytes: Vec<u8>) -> Self {
        Bytes::from(bytes).into()
    }
}

impl From<Bytes> for Message {
    fn from(bytes: Bytes) -> Self {
        Self {
            parts: [bytes, Bytes::new(), Bytes::new()],
        }
    }
}

impl PartialEq for Message {
    /// Messages are equal when their bytes are, however they are chunked.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.to_vec() == other.to_vec()
    }
}

impl Eq for Message {}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Message")
            .field(&String::from_utf8_lossy(&self.to_vec()))
            .finish()
    }
}

impl Buf for Message {
    fn remaining(&self) -> usize {
        self.len()
    }

    fn chunk(&self) -> &[u8] {
        self.chunks().next().map_or(&[], |chunk| chunk)
    }

    fn advance(&mut self, mut count: usize) {
        for part in &mut self.parts {
            let step = count.min(part.len());
            part.advance(step);
            count -= step;
        }
        assert_eq!(count, 0, "advanced past the end of the message");
    }

    fn chunks_vectored<'a>(&'a self, slices: &mut [IoSlice<'a>]) -> usize {
        let mut filled = 0;
        for (slot, chunk) in slices.iter_mut().zip(self.chunks()) {
            *slot = IoSlice::new(chunk);
            filled += 1;
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_across_chunks_as_a_buf() {
        let mut message = Message::spliced(
            Bytes::from_static(b"ab"),
            Bytes::new(),
            Bytes::from_static(b"cde"),
        );
        assert_eq!(message.len(), 5);
        assert_eq!(message.chunks().count(), 2, "empty chunks are skipped");
        let mut slices = [IoSlice::new(&[]); 4];
        assert_eq!(message.chunks_vectored(&mut slices), 2);
        assert_eq!(message.chunk(), b"ab");
        message.advance(3);
        assert_eq!(message.chunk(), b"de");
        assert_eq!(message.copy_to_bytes(2), Bytes::from_static(b"de"));
        assert!(message.is_empty());
        assert_eq!(message.chunk(), b"");
    }

    #[test]
    fn equality_ignores_chunking() {
        let whole = Message::from(b"abc".to_vec());
        let split = Message::spliced(
            Bytes::from_static(b"a"),
            Bytes::from_static(b"b"),
            Bytes::from_static(b"c"),
        );
        assert_eq!(whole, split);
        assert_ne!(whole, Message::from(b"abd".to_vec()));
    }
}
