use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use proptest::prelude::*;

use super::overflow::Overflow;
use super::*;

/// An event, or (as the client's buffer keeps them) a numbered marker.
#[derive(Debug, Clone, PartialEq)]
struct Item(Result<Event, u32>);

impl From<Event> for Item {
    fn from(event: Event) -> Self {
        Self(Ok(event))
    }
}

impl Queued for Item {
    fn event(&self) -> Option<&Event> {
        self.0.as_ref().ok()
    }
}

fn marker(n: u32) -> Item {
    Item(Err(n))
}

fn updated(i: u32) -> Event {
    Event::resource_updated(format!("r{i}"))
}

#[test]
fn drop_oldest_reports_the_lag_before_the_newest_events_then_the_end() {
    let mut queue: Queue = Queue::new(Settings::new(2));
    for i in 0..5 {
        queue.push(&updated(i));
    }
    assert_eq!(queue.finish(()).map(|_| ()), None, "no reader waited");
    assert_eq!(queue.push(&updated(9)), Pushed::NotOpen);
    assert_eq!(queue.pop(), Some(Popped::Lagged(3)));
    assert_eq!(queue.pop(), Some(Popped::Item(updated(3))));
    assert_eq!(queue.pop(), Some(Popped::Item(updated(4))));
    assert_eq!(queue.pop(), Some(Popped::End(())));
    assert!(queue.is_closed());
    assert_eq!(queue.pop(), Some(Popped::Closed));
    let counts = queue.counts();
    assert_eq!(
        (counts.matched, counts.delivered, counts.dropped),
        (5, 2, 3)
    );
    assert!(counts.is_balanced());
}

#[test]
fn disconnect_drops_everything_once_and_the_first_end_stays() {
    let mut queue: Queue<Event, &str> =
        Queue::new(Settings::new(2).with_overflow(Overflow::Disconnect));
    assert_eq!(queue.push(&updated(0)), Pushed::Queued);
    assert_eq!(queue.push(&updated(1)), Pushed::Queued);
    assert_eq!(queue.push(&updated(2)), Pushed::Disconnected);
    assert_eq!(queue.push(&updated(3)), Pushed::NotOpen);
    assert!(queue.finish("later").is_none());
    assert_eq!(queue.pop(), Some(Popped::Overflowed { dropped: 3 }));
    assert_eq!(queue.pop(), Some(Popped::Closed));
    let counts = queue.counts();
    assert_eq!((counts.dropped, counts.queued), (3, 0));
    assert!(counts.is_balanced());
}

#[test]
fn close_discards_what_is_queued_and_its_end_replaces_an_unreported_one() {
    let mut queue: Queue<Event, &str> = Queue::new(Settings::new(8));
    queue.push(&updated(0));
    queue.push(&updated(1));
    queue.finish("drained");
    queue.close("cancelled");
    assert_eq!(queue.pop(), Some(Popped::End("cancelled")));
    // Once told, the reader is told nothing else.
    queue.close("again");
    assert_eq!(queue.pop(), Some(Popped::Closed));
    let counts = queue.counts();
    assert_eq!((counts.discarded, counts.queued), (2, 0));
    assert!(counts.is_balanced());
}

#[test]
fn markers_keep_their_place_take_no_room_and_may_supersede_the_last() {
    let mut queue: Queue<Item> = Queue::new(Settings::new(1));
    queue.push(&updated(0));
    queue.push_marker(marker(1), |_| false);
    queue.push_marker(marker(2), |last| last.0.is_err());
    assert_eq!(queue.counts().queued, 1, "markers aside");
    // One event of room: the next evicts the first event, not a marker.
    assert_eq!(queue.push(&updated(1)), Pushed::DroppedOldest);
    assert_eq!(queue.pop(), Some(Popped::Lagged(1)));
    assert_eq!(queue.pop(), Some(Popped::Item(marker(2))));
    assert_eq!(queue.pop(), Some(Popped::Item(updated(1).into())));
    assert_eq!(queue.pop(), None);
    assert_eq!(queue.counts().delivered, 1, "a marker is no delivery");
    queue.finish(());
    queue.push_marker(marker(3), |_| false);
    assert_eq!(
        queue.pop(),
        Some(Popped::End(())),
        "no marker after the end"
    );
}

#[test]
fn lag_noted_from_upstream_comes_first_and_is_counted_nowhere() {
    let mut queue: Queue = Queue::new(Settings::new(4));
    queue.push(&updated(0));
    queue.add_lag(7);
    assert_eq!(queue.pop(), Some(Popped::Lagged(7)));
    assert_eq!(queue.pop(), Some(Popped::Item(updated(0))));
    let counts = queue.counts();
    assert_eq!((counts.matched, counts.dropped), (1, 0));
}

#[test]
fn a_byte_bound_evicts_until_the_new_event_fits() {
    let len = updated(0).rendered_len();
    let mut queue: Queue = Queue::new(Settings::new(100).with_max_bytes(2 * len));
    for i in 0..4 {
        queue.push(&updated(i));
    }
    assert_eq!((queue.counts().queued, queue.bytes()), (2, 2 * len));
    assert_eq!(queue.counts().dropped, 2);
    assert_eq!(queue.pop(), Some(Popped::Lagged(2)));
    assert_eq!(queue.pop(), Some(Popped::Item(updated(2))));
    assert_eq!(queue.pop(), Some(Popped::Item(updated(3))));
    assert_eq!(queue.bytes(), 0, "every byte given back");
}

struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_pending_pop_is_woken_by_the_next_push_end_or_lag() {
    let count = Arc::new(Count(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&count));
    let cx = Context::from_waker(&waker);
    let mut queue: Queue = Queue::new(Settings::new(4));
    assert!(queue.wakeup().is_none(), "nobody waits yet");
    assert_eq!(queue.poll_pop(&cx), Poll::Pending);
    queue.push(&updated(0));
    queue.wakeup().expect("the reader waits").wake();
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    assert_eq!(queue.poll_pop(&cx), Poll::Ready(Popped::Item(updated(0))));
    assert!(
        queue.wakeup().is_none(),
        "a reader that found an item waits not"
    );
    assert_eq!(queue.poll_pop(&cx), Poll::Pending);
    queue.add_lag(1);
    queue.wakeup().expect("lag wakes it").wake();
    assert_eq!(queue.poll_pop(&cx), Poll::Ready(Popped::Lagged(1)));
    assert_eq!(queue.poll_pop(&cx), Poll::Pending);
    queue.finish(()).expect("the end wakes it").wake();
    assert_eq!(count.0.load(Ordering::SeqCst), 3);
    assert_eq!(queue.poll_pop(&cx), Poll::Ready(Popped::End(())));
}

/// What a random step does to a queue.
#[derive(Debug, Clone)]
enum Step {
    Push(u8),
    Marker,
    Pop,
    Finish,
    Close,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..6).prop_map(Step::Push),
        1 => Just(Step::Marker),
        4 => Just(Step::Pop),
        1 => Just(Step::Finish),
        1 => Just(Step::Close),
    ]
}

fn settings() -> impl Strategy<Value = Settings> {
    (1usize..5, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(capacity, disconnect, coalesce, byte_bound)| {
            let overflow = if disconnect {
                Overflow::Disconnect
            } else {
                Overflow::DropOldest
            };
            let max_bytes = if byte_bound {
                3 * updated(0).rendered_len()
            } else {
                usize::MAX
            };
            Settings::new(capacity)
                .with_overflow(overflow)
                .with_coalesce(coalesce)
                .with_max_bytes(max_bytes)
        },
    )
}

proptest! {
    /// Under every policy, after every step: the accounting identity
    /// holds, each eviction is reported as lag before the next item, the
    /// end comes once after the last item, and then only `Closed`.
    #[test]
    fn every_policy_keeps_the_identity_and_the_order(
        settings in settings(),
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let mut queue: Queue<Item, u8> = Queue::new(settings);
        let mut ends = 0;
        // The evictions not yet reported.
        let mut owed = 0;
        for step in steps {
            match step {
                Step::Push(uri) => {
                    let dropped = queue.counts().dropped;
                    if queue.push(&updated(uri.into())) == Pushed::DroppedOldest {
                        owed += queue.counts().dropped - dropped;
                    }
                }
                Step::Marker => queue.push_marker(marker(0), |_| false),
                Step::Finish => drop(queue.finish(1)),
                Step::Close => {
                    drop(queue.close(2));
                    owed = 0;
                }
                Step::Pop => match queue.pop() {
                    Some(Popped::Lagged(lost)) => {
                        prop_assert_eq!(lost, owed);
                        owed = 0;
                    }
                    Some(Popped::Item(_)) => {
                        prop_assert_eq!(ends, 0, "no item after the end");
                        prop_assert_eq!(owed, 0, "lag before the item");
                    }
                    Some(Popped::End(_) | Popped::Overflowed { .. }) => {
                        prop_assert_eq!(ends, 0, "one end");
                        prop_assert_eq!(queue.counts().queued, 0);
                        ends += 1;
                    }
                    Some(Popped::Closed) => prop_assert!(queue.is_closed()),
                    None => prop_assert!(!queue.is_closed() && queue.counts().queued == 0),
                },
            }
            let counts = queue.counts();
            prop_assert!(counts.is_balanced(), "{:?}", counts);
            prop_assert!(counts.queued <= settings.capacity() as u64);
        }
    }
}
