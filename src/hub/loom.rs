//! The hub's loom models, one module per storage, kept together as tokio
//! keeps its own (`RUSTFLAGS="--cfg mcp_subscriptions_loom" cargo test
//! --lib --release -- loom_model`): a publisher races readers, and whatever
//! the interleaving, no wake-up is lost, the counts add up and delivery
//! keeps publish order.

mod loom_model_queue {
    use loom::thread;

    use crate::event::Event;
    use crate::hub::id::ListenerId;
    use crate::hub::own_queue::OwnQueue;
    use crate::queue::Overflow;
    use crate::queue::Settings;
    use crate::queue::reader::Waiter;
    use crate::source::Next;
    use crate::sync::Arc;

    fn queue(capacity: usize, overflow: Overflow, coalesce: bool) -> OwnQueue {
        OwnQueue::of(
            Settings::new(capacity)
                .with_overflow(overflow)
                .with_coalesce(coalesce),
        )
    }

    /// A publisher pushing three events races a reader pulling; whatever the
    /// interleaving, the counts add up and delivered events keep their order.
    /// With `coalesce`, the publisher repeats a URI so duplicates meet.
    fn uris(coalesce: bool, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                if coalesce {
                    (i / 2).to_string()
                } else {
                    i.to_string()
                }
            })
            .collect()
    }

    fn model(capacity: usize, overflow: Overflow, coalesce: bool) {
        loom::model(move || {
            let queue = Arc::new(queue(capacity, overflow, coalesce));
            let publisher = {
                let queue = queue.clone();
                thread::spawn(move || {
                    for uri in uris(coalesce, 3) {
                        let (_, waiter) = queue.push(&Event::resource_updated(uri));
                        waiter.into_iter().for_each(Waiter::wake);
                    }
                })
            };
            let mut seen = Vec::new();
            let mut drain = |queue: &OwnQueue| {
                while let Some(next) = queue.pop_or_register(|_| {}) {
                    match next {
                        Next::Event(event) => seen.push(event.to_plain_json()),
                        Next::Lagged(_) => {}
                        _ => break,
                    }
                }
            };
            drain(&queue);
            publisher.join().unwrap();
            drain(&queue);
            queue.stop();

            let snap = queue.snapshot();
            let t = snap.counts;
            // A disconnected queue takes nothing after it failed.
            if overflow == Overflow::DropOldest {
                assert_eq!(t.matched, 3);
            }
            assert_eq!(
                t.matched,
                t.delivered + t.dropped + t.coalesced + t.queued + t.discarded
            );
            assert_eq!(t.delivered as usize, seen.len());
            let mut sorted = seen.clone();
            sorted.sort();
            assert_eq!(seen, sorted, "delivery order must follow publish order");
        });
    }

    /// A reader that registers its waker and sleeps must be woken by the
    /// pushes and the completion: a lost wake-up is a loom deadlock.
    fn waiting_reader(capacity: usize, coalesce: bool) {
        loom::model(move || {
            let queue = Arc::new(queue(capacity, Overflow::DropOldest, coalesce));
            let publisher = {
                let queue = queue.clone();
                thread::spawn(move || {
                    for uri in uris(coalesce, 2) {
                        let (_, waiter) = queue.push(&Event::resource_updated(uri));
                        waiter.into_iter().for_each(Waiter::wake);
                    }
                    queue.complete().into_iter().for_each(Waiter::wake);
                })
            };
            let mut delivered = 0;
            loom::future::block_on(std::future::poll_fn(|cx| {
                loop {
                    let next = queue.pop_or_register(|slot| {
                        *slot = Some(Waiter::Task(cx.waker().clone()));
                    });
                    match next {
                        Some(Next::Event(_)) => delivered += 1,
                        Some(Next::Lagged(_)) => {}
                        Some(Next::Complete) => return std::task::Poll::Ready(()),
                        Some(other) => panic!("unexpected {other:?}"),
                        // Registered; the publisher will wake us. Events
                        // already counted stay counted.
                        None => return std::task::Poll::Pending,
                    }
                }
            }));
            publisher.join().unwrap();
            let snap = queue.snapshot();
            assert!(delivered >= 1, "the newest event always survives");
            assert_eq!(snap.counts.queued, 0);
            let t = snap.counts;
            assert_eq!(t.matched, t.delivered + t.dropped + t.coalesced);
        });
    }

    #[test]
    fn waiting_reader_capacity_1() {
        waiting_reader(1, false);
    }

    #[test]
    fn waiting_reader_capacity_2() {
        waiting_reader(2, false);
    }

    #[test]
    fn drop_oldest_capacity_1() {
        model(1, Overflow::DropOldest, false);
    }

    #[test]
    fn drop_oldest_capacity_2() {
        model(2, Overflow::DropOldest, false);
    }

    #[test]
    fn disconnect_capacity_1() {
        model(1, Overflow::Disconnect, false);
    }

    #[test]
    fn disconnect_capacity_2() {
        model(2, Overflow::Disconnect, false);
    }

    #[test]
    fn coalescing_capacity_1() {
        model(1, Overflow::DropOldest, true);
        waiting_reader(1, true);
    }

    #[test]
    fn coalescing_capacity_2() {
        model(2, Overflow::DropOldest, true);
        waiting_reader(2, true);
    }
}

/// What the lane's models share: a lane of one URI and a publisher.
mod lane_support {
    use loom::thread;

    use crate::event::Event;
    use crate::filter::Filter;
    use crate::hub::lane::{Lane, LaneKey};
    use crate::queue::Overflow;
    use crate::queue::Pushed;
    use crate::queue::Settings;
    use crate::queue::reader::Waiter;
    use crate::sync::Arc;

    /// A lane of `capacity`, dropping its oldest.
    pub(super) fn lane(capacity: usize) -> Arc<Lane> {
        let filter = Filter::new().with_resource("a");
        let settings = Settings::new(capacity);
        let key = LaneKey::of(&filter, &Default::default(), settings, false).unwrap();
        Arc::new(Lane::new(&key))
    }

    /// Pushes the `i`th event and wakes whom the publisher wakes itself;
    /// how many members lost an event to it.
    pub(super) fn publish(lane: &Lane, i: usize) -> usize {
        let (mut tally, mut waiters) = ([0; Pushed::COUNT], Vec::new());
        lane.push(
            &Event::resource_updated(i.to_string()),
            &mut tally,
            &mut waiters,
        );
        waiters.into_iter().flatten().for_each(Waiter::wake);
        tally[Pushed::DroppedOldest as usize]
    }

    /// A thread publishing `events` events; it returns how many members
    /// lost one, in all.
    pub(super) fn publisher(lane: &Arc<Lane>, events: usize) -> thread::JoinHandle<usize> {
        let lane = lane.clone();
        thread::spawn(move || (0..events).map(|i| publish(&lane, i)).sum())
    }
}

mod loom_model_lane {
    use loom::thread;

    use crate::event::Event;
    use crate::hub::loom::lane_support::{lane, publisher};
    use crate::queue::reader::Waiter;
    use crate::source::Next;
    use crate::sync::Arc;

    /// A publisher pushing two events into a lane of capacity 1 (so the
    /// second evicts) races two members reading, one of them waiting on its
    /// waker until the last event. Members read the ring holding only
    /// their seat and the slot's lock, so the eviction can land between a
    /// member's look at the tail and its take of the slot, or while the
    /// other member holds that slot. Whatever the interleaving, no wake-up
    /// is lost (loom reports a reader left waiting as a deadlock), each
    /// member's counts add up, the members that the publisher reports as
    /// losing an event are exactly those that count one dropped, and what
    /// each gets keeps publish order.
    #[test]
    fn two_members_race_a_publisher() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(6);
        model.check(|| {
            let lane = lane(1);
            // The waiting member's seat is read on its own thread.
            let (waiting, polling) = (Arc::new(lane.join()), lane.join());
            let publisher = publisher(&lane, 2);
            let reader = {
                let (lane, waiting) = (lane.clone(), waiting.clone());
                let last = Event::resource_updated("1");
                thread::spawn(move || {
                    let mut seen = Vec::new();
                    loom::future::block_on(std::future::poll_fn(|cx| {
                        loop {
                            let register = |slot: &mut Option<Waiter>| {
                                *slot = Some(Waiter::Task(cx.waker().clone()));
                            };
                            let next = lane.pop_or_register(&waiting, register);
                            match next {
                                Some(Next::Event(event)) => {
                                    seen.push(event.to_plain_json());
                                    // The last event always survives: a
                                    // lost wake-up would leave the reader
                                    // waiting for it forever.
                                    if event == last {
                                        return std::task::Poll::Ready(());
                                    }
                                }
                                Some(Next::Lagged(_)) => {}
                                Some(other) => panic!("unexpected {other:?}"),
                                None => return std::task::Poll::Pending,
                            }
                        }
                    }));
                    seen
                })
            };
            let mut polled = Vec::new();
            while let Some(next) = lane.pop_or_register(&polling, |_| {}) {
                if let Next::Event(event) = next {
                    polled.push(event.to_plain_json());
                }
            }
            let evicted = publisher.join().unwrap();
            let waited = reader.join().unwrap();
            lane.stop(&polling);
            let mut dropped = 0;
            for (seat, seen) in [(&*waiting, waited), (&polling, polled)] {
                let counts = lane.snapshot(seat).counts;
                dropped += counts.dropped as usize;
                assert_eq!(counts.matched, 2);
                assert!(counts.is_balanced(), "{counts:?}");
                assert_eq!(counts.delivered as usize, seen.len());
                let mut sorted = seen.clone();
                sorted.sort();
                assert_eq!(seen, sorted, "delivery order must follow publish order");
            }
            // Each push evicts at most one event (capacity 1), so the
            // members it reports are the events they count dropped.
            assert_eq!(
                evicted, dropped,
                "the publisher's report and the members' counts agree"
            );
        });
    }
}

/// The wake path of a lane (issue 50): waiters listed in the lane, taken
/// by a push at once, a few woken by the publisher and the rest passed on
/// by the woken (one direct wake-up under loom, so two members already
/// make a chain). Whatever the interleaving, no member waiting for an
/// event is left asleep: loom reports a reader never woken as a deadlock.
mod loom_model_chain {
    use loom::thread;

    use crate::event::Event;
    use crate::hub::id::ListenerId;
    use crate::hub::lane::{Lane, Seat};
    use crate::hub::loom::lane_support::{lane, publish};
    use crate::queue::reader::Waiter;
    use crate::source::Next;
    use crate::sync::Arc;

    /// A reader on its own thread, waiting on its waker until the member
    /// at `seat` reads one event.
    fn reader(lane: &Arc<Lane>, seat: &Arc<Seat>) -> thread::JoinHandle<()> {
        let (lane, seat) = (lane.clone(), seat.clone());
        thread::spawn(move || {
            loom::future::block_on(std::future::poll_fn(|cx| {
                let register = |slot: &mut Option<Waiter>| {
                    *slot = Some(Waiter::Task(cx.waker().clone()));
                };
                match lane.pop_or_register(&seat, register) {
                    Some(Next::Event(_)) => std::task::Poll::Ready(()),
                    Some(other) => panic!("unexpected {other:?}"),
                    None => std::task::Poll::Pending,
                }
            }));
        })
    }

    /// Two members wait while a publisher pushes: the one the publisher
    /// wakes passes the other's wake-up on as it reads.
    #[test]
    fn a_wave_reaches_every_waiting_member() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let lane = lane(2);
            let seats = [Arc::new(lane.join()), Arc::new(lane.join())];
            let readers = seats.each_ref().map(|seat| reader(&lane, seat));
            publish(&lane, 0);
            for reader in readers {
                reader.join().unwrap();
            }
        });
    }

    /// One member gives up waiting (its future dropped) as the publisher
    /// pushes: whichever comes first, the other member is woken.
    #[test]
    fn a_member_giving_up_strands_no_wake_up() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let lane = lane(2);
            let (waiting, giving_up) = (Arc::new(lane.join()), Arc::new(lane.join()));
            let reader = reader(&lane, &waiting);
            let quitter = {
                let (lane, seat) = (lane.clone(), giving_up.clone());
                thread::spawn(move || {
                    let noop = Waiter::Task(std::task::Waker::noop().clone());
                    let mut noop = Some(noop);
                    if lane
                        .pop_or_register(&seat, |slot| *slot = noop.take())
                        .is_none()
                    {
                        lane.forget_waiter(&seat);
                    }
                })
            };
            publish(&lane, 0);
            quitter.join().unwrap();
            reader.join().unwrap();
        });
    }

    /// A member waiting in the lane is moved out to a queue of its own as
    /// the first event for it is pushed there: its waiter goes with it, so
    /// the queue's push wakes it.
    #[test]
    fn a_member_moved_out_while_waiting_is_woken_by_its_queue() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let lane = lane(2);
            let seat = Arc::new(lane.join());
            let reader = reader(&lane, &seat);
            let queue = lane.move_out(&seat, ListenerId(0));
            let (_, waiter) = queue.push(&Event::resource_updated("0"));
            waiter.into_iter().for_each(Waiter::wake);
            reader.join().unwrap();
        });
    }
}

/// The lane's counts when a member leaves as a push evicts (issue 50):
/// whatever the interleaving, what the publisher reports as lost is what
/// the members count dropped, and the leaving member's counts add up
/// with what it had yet to read discarded, not lost.
mod loom_model_leaving {
    use loom::thread;

    use crate::hub::loom::lane_support::{lane, publisher};
    use crate::queue::reader::Waiter;
    use crate::source::Next;
    use crate::sync::Arc;

    #[test]
    fn a_member_leaving_races_an_evicting_push() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(4);
        model.check(|| {
            let lane = lane(1);
            let (staying, leaving) = (lane.join(), Arc::new(lane.join()));
            let publisher = publisher(&lane, 2);
            let leaver = {
                let (lane, seat) = (lane.clone(), leaving.clone());
                thread::spawn(move || {
                    lane.stop(&seat).into_iter().for_each(Waiter::wake);
                })
            };
            let mut delivered = 0;
            while let Some(next) = lane.pop_or_register(&staying, |_| {}) {
                if let Next::Event(_) = next {
                    delivered += 1;
                }
            }
            let evicted = publisher.join().unwrap();
            leaver.join().unwrap();
            while let Some(next) = lane.pop_or_register(&staying, |_| {}) {
                if let Next::Event(_) = next {
                    delivered += 1;
                }
            }
            let (stayed, left) = (
                lane.snapshot(&staying).counts,
                lane.snapshot(&leaving).counts,
            );
            assert_eq!(stayed.matched, 2);
            assert_eq!(stayed.delivered, delivered);
            for counts in [stayed, left] {
                assert!(counts.is_balanced(), "{counts:?}");
            }
            assert_eq!(
                evicted as u64,
                stayed.dropped + left.dropped,
                "the publisher's report and the members' counts agree"
            );
        });
    }
}

/// A ring that wraps (issue 50): two slots under loom, capacity 1, three
/// events, so the third lands in the first one's slot while a member may
/// still be reading it. Whatever the interleaving, a member never takes
/// an event twice or out of order, and its counts add up to the three.
mod loom_model_wrap {
    use crate::event::Event;
    use crate::hub::loom::lane_support::{lane, publisher};
    use crate::source::Next;

    #[test]
    fn a_member_reads_a_ring_that_wraps() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let lane = lane(1);
            let member = lane.join();
            let publisher = publisher(&lane, 3);
            let mut seen = Vec::new();
            let read = |seen: &mut Vec<String>| {
                while let Some(next) = lane.pop_or_register(&member, |_| {}) {
                    if let Next::Event(event) = next {
                        seen.push(event.to_plain_json());
                    }
                }
            };
            read(&mut seen);
            publisher.join().unwrap();
            read(&mut seen);
            let mut sorted = seen.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(seen, sorted, "once each, in publish order");
            let newest = Event::resource_updated("2").to_plain_json();
            assert_eq!(seen.last(), Some(&newest), "the newest always survives");
            let counts = lane.snapshot(&member).counts;
            assert_eq!(counts.matched, 3);
            assert!(counts.is_balanced(), "{counts:?}");
            assert_eq!(counts.delivered as usize, seen.len());
        });
    }
}
