use super::*;
use crate::event::Succession;
use crate::hub::chain::{DIRECT, counted_waiter};
use crate::hub::registry::SEATS_PER_LANE;
use crate::sync::AtomicUsize;

fn lane(capacity: usize) -> Lane {
    lane_with(Settings::new(capacity))
}

fn lane_with(settings: Settings) -> Lane {
    let filter = Filter::new().with_resource("a");
    Lane::new(&LaneKey::of(&filter, &Membership::default(), settings, false).unwrap())
}

/// Pushes `event`; the tally of outcomes, and the waiters it took.
fn push(lane: &Lane, event: &Event) -> ([usize; Pushed::COUNT], usize) {
    let (mut tally, mut waiters) = ([0; Pushed::COUNT], Vec::new());
    lane.push(event, &mut tally, &mut waiters);
    (tally, waiters.iter().flatten().count())
}

fn update(i: usize) -> Event {
    Event::resource_updated(i.to_string())
}

fn pop(lane: &Lane, seat: &Seat) -> Option<Next> {
    lane.pop_or_register(seat, |_| {})
}

fn uri(next: Option<Next>) -> String {
    match next {
        Some(Next::Event(event)) => event.to_plain_json(),
        other => panic!("expected an event, got {other:?}"),
    }
}

#[test]
fn only_settings_and_routing_that_a_lane_can_keep_make_a_key() {
    let filter = Filter::new().with_tools_list_changed();
    let key = |overflow, coalesce, budgeted, filter: &Filter| {
        LaneKey::of(
            filter,
            &Membership::default(),
            Settings::new(8)
                .with_overflow(overflow)
                .with_coalesce(coalesce),
            budgeted,
        )
    };
    assert!(key(Overflow::DropOldest, false, false, &filter).is_some());
    assert!(key(Overflow::Disconnect, false, false, &filter).is_none());
    assert!(key(Overflow::DropOldest, true, false, &filter).is_none());
    assert!(key(Overflow::DropOldest, false, true, &filter).is_none());
    assert!(key(Overflow::DropOldest, false, false, &Filter::everything()).is_none());
    let tasks = filter
        .clone()
        .with_extension("taskIds", serde_json::json!(["t"]));
    assert!(key(Overflow::DropOldest, false, false, &tasks).is_none());
    // The order a request names its URIs in does not matter.
    let ab = Filter::new().with_resource("a").with_resource("b");
    let ba = Filter::new().with_resource("b").with_resource("a");
    assert_eq!(
        key(Overflow::DropOldest, false, false, &ab),
        key(Overflow::DropOldest, false, false, &ba)
    );
}

#[test]
fn members_read_at_their_own_pace_and_the_slow_one_finds_its_loss() {
    let lane = lane(2);
    let (slow, fast) = (lane.join(), lane.join());
    for i in 0..3 {
        let (tally, _) = push(&lane, &update(i));
        assert_eq!(
            tally[Pushed::DroppedOldest as usize],
            usize::from(i == 2),
            "the third event costs only the slow member its first"
        );
        assert_eq!(
            tally[Pushed::Queued as usize],
            2 - usize::from(i == 2),
            "a member that lost one is counted once, as dropping"
        );
        assert_eq!(uri(pop(&lane, &fast)), update(i).to_plain_json());
    }
    assert_eq!(pop(&lane, &fast), None);
    let snap = lane.snapshot(&slow);
    assert_eq!(
        (snap.counts.dropped, snap.lag, snap.counts.queued),
        (1, 1, 2)
    );
    assert_eq!(pop(&lane, &slow), Some(Next::Lagged(1)));
    assert_eq!(uri(pop(&lane, &slow)), update(1).to_plain_json());
    assert_eq!(uri(pop(&lane, &slow)), update(2).to_plain_json());
    for seat in [&slow, &fast] {
        let counts = lane.snapshot(seat).counts;
        assert!(counts.is_balanced(), "{counts:?}");
        assert_eq!(counts.matched, 3);
    }
}

#[test]
fn the_deepest_a_queue_has_been_is_kept_though_the_byte_bound_shrinks_it() {
    let small = update(0).rendered_len();
    let lane = lane_with(Settings::new(8).with_max_bytes(3 * small));
    let (idle, reader) = (lane.join(), lane.join());
    for i in 0..3 {
        push(&lane, &update(i));
    }
    for i in 0..2 {
        assert_eq!(uri(pop(&lane, &reader)), update(i).to_plain_json());
    }
    assert_eq!(
        lane.snapshot(&reader).max_depth,
        3,
        "as the first read found it"
    );
    // Larger than the bound: it evicts every other event and goes alone.
    let large = Event::resource_updated("a".repeat(4 * small));
    let (tally, _) = push(&lane, &large);
    assert_eq!(tally[Pushed::DroppedOldest as usize], 2);
    for (seat, unread) in [(&idle, 1), (&reader, 1)] {
        let snap = lane.snapshot(seat);
        assert_eq!(snap.counts.queued, unread);
        assert_eq!(snap.max_depth, 3, "noted before the eviction");
    }
}

#[test]
fn a_member_that_joined_late_and_read_some_is_told_its_loss_exactly() {
    let lane = lane(2);
    let early = lane.join();
    for i in 0..2 {
        push(&lane, &update(i));
    }
    let late = lane.join();
    push(&lane, &update(2));
    assert_eq!(uri(pop(&lane, &late)), update(2).to_plain_json());
    // The third of these evicts an event the late member had yet to read.
    for i in 3..6 {
        push(&lane, &update(i));
    }
    let snap = lane.snapshot(&late);
    assert_eq!(snap.lag, 1, "one lost since its read, not counted from 0");
    assert_eq!((snap.counts.matched, snap.counts.queued), (4, 2));
    assert!(snap.counts.is_balanced(), "{:?}", snap.counts);
    lane.stop(&late);
    let counts = lane.snapshot(&late).counts;
    assert_eq!(counts.matched, 4, "counted from when it joined");
    assert!(counts.is_balanced(), "{counts:?}");
    assert!(lane.snapshot(&early).counts.is_balanced());
}

#[test]
fn a_registered_reader_is_woken_once_per_publish_and_not_after_forgetting() {
    let lane = lane(4);
    let seat = lane.join();
    let waker = std::task::Waker::noop();
    for _ in 0..2 {
        // Registering twice lists the seat once.
        assert!(
            lane.pop_or_register(&seat, |slot| *slot = Some(Waiter::Task(waker.clone())))
                .is_none()
        );
    }
    assert_eq!(push(&lane, &update(0)).1, 1);
    assert_eq!(push(&lane, &update(1)).1, 0, "nobody is waiting now");
    uri(pop(&lane, &seat));
    uri(pop(&lane, &seat));
    lane.pop_or_register(&seat, |slot| *slot = Some(Waiter::Task(waker.clone())));
    lane.forget_waiter(&seat);
    assert_eq!(push(&lane, &update(2)).1, 0);
}

#[test]
fn closing_discards_what_the_member_had_left_and_completing_drains_first() {
    let lane = lane(8);
    let (closing, completing) = (lane.join(), lane.join());
    push(&lane, &update(0));
    push(&lane, &update(1));
    uri(pop(&lane, &closing));
    lane.stop(&closing);
    assert_eq!(pop(&lane, &closing), Some(Next::Closed));
    let counts = lane.snapshot(&closing).counts;
    assert_eq!((counts.delivered, counts.discarded), (1, 1));
    assert!(counts.is_balanced());
    // It left: a later event is not its own.
    assert_eq!(push(&lane, &update(2)).0[Pushed::Queued as usize], 1);
    assert_eq!(lane.snapshot(&closing).counts.matched, 2);

    lane.complete(&completing);
    for i in 0..3 {
        assert_eq!(uri(pop(&lane, &completing)), update(i).to_plain_json());
    }
    assert_eq!(pop(&lane, &completing), Some(Next::Complete));
    assert_eq!(pop(&lane, &completing), Some(Next::Closed));
}

#[test]
fn a_member_moved_out_goes_on_with_its_own_queue_from_where_it_was() {
    let lane = lane(2);
    let (behind, current) = (lane.join(), lane.join());
    for i in 0..3 {
        push(&lane, &update(i));
        uri(pop(&lane, &current));
    }
    let [behind_queue, current_queue] =
        [(&behind, 0), (&current, 1)].map(|(seat, id)| lane.move_out(seat, ListenerId(id)));
    assert_eq!(
        lane.pop_or_register(&current, |_| {}),
        None,
        "read on its queue"
    );
    assert!(
        lane.moved(&current)
            .is_some_and(|queue| Arc::ptr_eq(&queue, &current_queue)),
        "a moved seat points its reader to its queue"
    );
    let status =
        |version| Event::resource_updated("s").with_succession(Succession::new("job", version));
    // The behind member's queue is full and evicts its oldest; the
    // current one's is empty. A newer version takes the pending one's
    // place in each.
    assert_eq!(behind_queue.push(&status(1)).0, Pushed::DroppedOldest);
    assert_eq!(current_queue.push(&status(1)).0, Pushed::Queued);
    for queue in [&behind_queue, &current_queue] {
        assert_eq!(queue.push(&status(2)).0, Pushed::Queued);
    }
    let pop = |queue: &OwnQueue| queue.pop_or_register(|_| {});
    assert_eq!(pop(&behind_queue), Some(Next::Lagged(2)));
    assert_eq!(uri(pop(&behind_queue)), update(2).to_plain_json());
    assert_eq!(uri(pop(&behind_queue)), status(2).to_plain_json());
    assert_eq!(uri(pop(&current_queue)), status(2).to_plain_json());
    for queue in [&behind_queue, &current_queue] {
        let counts = queue.snapshot().counts;
        assert!(counts.is_balanced(), "{counts:?}");
        assert_eq!((counts.matched, counts.coalesced), (5, 1));
    }
}

#[test]
fn a_released_seat_is_reused() {
    let lane = lane(2);
    let first = lane.join();
    lane.stop(&first);
    lane.release(&first);
    assert_eq!(lane.join().index, first.index);
}

#[test]
fn seats_past_a_block_take_a_new_one_and_read_on_their_own() {
    let lane = lane(4);
    let seats: Vec<Seat> = (0..SEATS_PER_BLOCK + 1).map(|_| lane.join()).collect();
    assert_eq!(lane.state.lock().blocks.len(), 2);
    let last = &seats[SEATS_PER_BLOCK];
    assert!(!Arc::ptr_eq(&last.block, &seats[0].block));
    push(&lane, &update(0));
    for seat in &seats {
        assert_eq!(uri(pop(&lane, seat)), update(0).to_plain_json());
        assert_eq!(pop(&lane, seat), None);
    }
}

/// Registers `waiter` for the member at `seat`, which finds nothing.
fn wait(lane: &Lane, seat: &Seat, waiter: Waiter) {
    let mut waiter = Some(waiter);
    assert_eq!(
        lane.pop_or_register(seat, |slot| *slot = waiter.take()),
        None
    );
}

/// `n` members of `lane`, each waiting on a waiter that counts its wakes.
fn waiting_members(lane: &Lane, n: usize) -> (Vec<Seat>, Vec<Arc<AtomicUsize>>) {
    let seats: Vec<Seat> = (0..n).map(|_| lane.join()).collect();
    let counts = seats
        .iter()
        .map(|seat| {
            let (count, waiter) = counted_waiter();
            wait(lane, seat, waiter);
            count
        })
        .collect();
    (seats, counts)
}

#[test]
fn every_member_of_a_full_lane_is_woken_the_publisher_waking_a_few() {
    let lane = lane(4);
    let (seats, counts) = waiting_members(&lane, SEATS_PER_LANE);
    let (mut tally, mut direct) = ([0; Pushed::COUNT], Vec::new());
    lane.push(&update(0), &mut tally, &mut direct);
    assert_eq!(direct.len(), DIRECT, "the publisher wakes a few itself");
    direct.into_iter().flatten().for_each(Waiter::wake);
    // Each woken member passes wake-ups on as it reads, until none is
    // left asleep.
    let woken = |i: usize| counts[i].load(std::sync::atomic::Ordering::Relaxed);
    let mut read = vec![false; seats.len()];
    while let Some(i) = (0..seats.len()).find(|&i| woken(i) > 0 && !read[i]) {
        assert_eq!(uri(pop(&lane, &seats[i])), update(0).to_plain_json());
        read[i] = true;
    }
    assert!(read.iter().all(|&r| r), "every member was woken and read");
    assert!((0..seats.len()).all(|i| woken(i) == 1), "each once");
}

#[test]
fn a_reader_that_gives_up_passes_the_wave_on() {
    let lane = lane(4);
    let (seats, counts) = waiting_members(&lane, 8);
    // The publisher's own wake-ups are dropped here, so only the chain can
    // wake the others: a member that gives up waiting passes it all on.
    push(&lane, &update(0));
    lane.forget_waiter(&seats[0]);
    let asleep = counts
        .iter()
        .filter(|c| c.load(std::sync::atomic::Ordering::Relaxed) == 0)
        .count();
    assert_eq!(asleep, DIRECT, "all but those the publisher wakes itself");
}

#[test]
fn a_listed_waiter_is_woken_by_completing_stopping_and_moving_out() {
    let lane = lane(4);
    let (seats, counts) = waiting_members(&lane, 4);
    lane.complete(&seats[0]).expect("its listed waiter").wake();
    lane.stop(&seats[1]).expect("its listed waiter").wake();
    lane.revoke(&seats[3]).expect("its listed waiter").wake();
    let queue = lane.move_out(&seats[2], ListenerId(2));
    let (pushed, waiter) = queue.push(&update(0));
    assert_eq!(pushed, Pushed::Queued);
    waiter.expect("the waiter moved out with it").wake();
    for count in &counts {
        assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
    // Taken once: nothing is left listed.
    assert_eq!(push(&lane, &update(1)).1, 0);
}

#[test]
fn a_look_that_registers_nothing_lists_nothing() {
    let lane = lane(4);
    let seat = lane.join();
    assert_eq!(pop(&lane, &seat), None);
    assert_eq!(push(&lane, &update(0)).1, 0);
    assert!(lane.state.lock().waiting.is_empty());
}

#[test]
fn a_waiter_listed_in_an_earlier_round_is_not_taken_for_a_later_one() {
    let lane = lane(4);
    let (a, b) = (lane.join(), lane.join());
    for seat in [&a, &b] {
        wait(&lane, seat, counted_waiter().1);
    }
    push(&lane, &update(0));
    for seat in [&a, &b] {
        uri(pop(&lane, seat));
    }
    // In the next round they register the other way round: each must
    // find its own place, not the one it had in the last round's list.
    let (b_count, b_waiter) = counted_waiter();
    let (a_count, a_waiter) = counted_waiter();
    wait(&lane, &b, b_waiter);
    wait(&lane, &a, a_waiter);
    let (mut tally, mut direct) = ([0; Pushed::COUNT], Vec::new());
    lane.push(&update(1), &mut tally, &mut direct);
    direct.into_iter().flatten().for_each(Waiter::wake);
    for count in [&a_count, &b_count] {
        assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}

#[test]
fn a_member_leaving_the_lane_for_its_queue_passes_the_wave_on() {
    let lane = lane(4);
    let (seats, counts) = waiting_members(&lane, 8);
    // The publisher's own wake-ups are dropped here: only what the chain
    // holds is left, and a member following its queue out passes it on.
    push(&lane, &update(0));
    lane.pass_on_all();
    let woken = counts
        .iter()
        .filter(|c| c.load(std::sync::atomic::Ordering::Relaxed) == 1)
        .count();
    assert_eq!(woken, seats.len() - DIRECT);
}
