//! How the hub ends a listener, and what its reader is told.

use crate::event::Event;
use crate::queue::reader::Reader;
use crate::queue::{Handout, Popped};
use crate::source::Next;

/// How the hub ends a listener, besides an overflow and a close: a byte
/// in its reader's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListenerEnd {
    /// The hub completed: the reader drains what is queued, then gets
    /// [`Next::Complete`].
    Complete,
    /// Revoked (see `Hub::revoke`), with what it held discarded.
    Revoked,
}

/// A listener's reading end, in a lane's seat or its own queue.
pub(crate) type ListenerReader = Reader<ListenerEnd>;

impl Handout<Event, ListenerEnd> for Next {
    #[inline(always)]
    fn item(event: Event) -> Self {
        Self::Event(event)
    }
}

impl From<Popped<Event, ListenerEnd>> for Next {
    #[inline(always)]
    fn from(popped: Popped<Event, ListenerEnd>) -> Self {
        match popped {
            Popped::Item(event) => Self::Event(event),
            Popped::Lagged(lost) => Self::Lagged(lost),
            Popped::Overflowed { dropped } => {
                Self::Failed(crate::error::StreamError::Overflow { dropped })
            }
            Popped::End(ListenerEnd::Complete) => Self::Complete,
            Popped::End(ListenerEnd::Revoked) => Self::Failed(crate::error::StreamError::Revoked),
            Popped::Closed => Self::Closed,
        }
    }
}
