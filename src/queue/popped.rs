//! What a queue hands its reader, in order.

#[cfg(doc)]
use super::overflow::Overflow;
use crate::event::Event;

/// What a reader's pop is handed out as: the queue's own [`Popped`], or an
/// owner's type made from it (the hub's `Next`), whose common case, an
/// item, is built directly rather than converted on the hot path.
pub(crate) trait Handout<T, E>: From<Popped<T, E>> {
    fn item(item: T) -> Self;
}

impl<T, E> Handout<T, E> for Popped<T, E> {
    #[inline(always)]
    fn item(item: T) -> Self {
        Self::Item(item)
    }
}

/// What a pop hands out, in this order: lag, items, the end, then
/// `Closed` for good.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Popped<T = Event, E = ()> {
    /// This many events were lost (evicted under
    /// [`Overflow::DropOldest`], or [noted](super::Queue::add_lag) as lost before
    /// they reached the queue) since the last item.
    Lagged(u64),
    /// The next event or marker.
    Item(T),
    /// The queue overflowed under [`Overflow::Disconnect`]: everything it
    /// held and the event that did not fit were dropped.
    Overflowed {
        /// The events lost.
        dropped: u64,
    },
    /// The owner ended the queue with this.
    End(E),
    /// The queue has ended and said how: nothing more comes.
    Closed,
}
