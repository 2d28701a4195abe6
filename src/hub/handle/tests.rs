use super::*;
use crate::Overflow;
use crate::event::{EventKind, ListKind};
use crate::queue::Settings;
use crate::source::Next;

/// How many pushes a publish of `kind` makes: one per target the
/// index routes it to.
fn targets(hub: &Hub, kind: &EventKind) -> usize {
    let registry = hub.shared.registry.read();
    registry
        .routes
        .everyone
        .matches(kind)
        .iter()
        .map(|run| run.len())
        .sum()
}

#[test]
fn listeners_alike_are_reached_with_one_push_and_the_others_each_with_their_own() {
    let hub = Hub::new();
    let tools = Filter::new().with_tools_list_changed();
    let kind = EventKind::ListChanged(ListKind::Tools);
    // The first keeps a queue of its own; the other 99 sit in two lanes
    // (of at most 64 seats).
    let alike: Vec<_> = (0..100).map(|_| hub.listen(&tools).unwrap()).collect();
    assert_eq!(targets(&hub, &kind), 3);
    // Settings a lane cannot keep mean a queue of one's own.
    let strict =
        OpenContext::default().with_queue(Settings::default().with_overflow(Overflow::Disconnect));
    let coalescing = OpenContext::default().with_queue(Settings::default().with_coalesce(true));
    let _own = [
        hub.listen_with(&tools, &strict).unwrap(),
        hub.listen_with(&tools, &coalescing).unwrap(),
    ];
    assert_eq!(targets(&hub, &kind), 5);
    // Another capacity is another lane, opened by its second listener.
    let small = OpenContext::default().with_queue(Settings::default().with_capacity(8));
    let _other = [
        hub.listen_with(&tools, &small).unwrap(),
        hub.listen_with(&tools, &small).unwrap(),
    ];
    assert_eq!(targets(&hub, &kind), 7);
    assert_eq!(hub.notify_tools_list_changed().queued, 104);
    // The last member leaving takes its lane out of the index.
    drop(alike);
    assert_eq!(targets(&hub, &kind), 4);
    assert!(hub.stats().events.is_balanced());
}

#[test]
fn a_succession_about_to_reach_a_lane_moves_its_members_to_queues_of_their_own() {
    let hub = Hub::new();
    let tools = Filter::new().with_tools_list_changed();
    let kind = EventKind::ListChanged(ListKind::Tools);
    let mut members: Vec<_> = (0..3).map(|_| hub.listen(&tools).unwrap()).collect();
    let versioned =
        |event: Event, version| event.with_succession(crate::Succession::new("k", version));
    // A succession that reaches no lane (a task's status) leaves lanes be.
    hub.publish(versioned(Event::resource_updated("elsewhere"), 1));
    assert_eq!(targets(&hub, &kind), 2, "a queue and a lane");
    hub.notify_tools_list_changed();
    assert_eq!(
        hub.publish(versioned(Event::tools_list_changed(), 1))
            .queued,
        3
    );
    assert_eq!(targets(&hub, &kind), 3, "a queue each");
    // Each queue keeps a succession's memory: version 2 replaces 1.
    assert_eq!(
        hub.publish(versioned(Event::tools_list_changed(), 2))
            .queued,
        3
    );
    for member in &mut members {
        let mut versions = Vec::new();
        while let Some(Next::Event(event)) = member.try_next() {
            versions.push(event.succession().map(|s| s.version()));
        }
        assert_eq!(versions, [None, Some(2)]);
    }
    // Listeners alike opened later keep queues of their own too.
    let _late: Vec<_> = (0..2).map(|_| hub.listen(&tools).unwrap()).collect();
    assert_eq!(targets(&hub, &kind), 5);
    let stats = hub.stats();
    assert!(stats.events.is_balanced(), "{:?}", stats.events);
    assert_eq!(stats.events.coalesced, 3);
    drop(members);
    assert_eq!(hub.stats().listeners_active, 2);
}

#[test]
fn a_reader_waiting_in_a_lane_is_woken_in_the_queue_it_moved_to() {
    use std::future::Future;
    use std::sync::atomic::AtomicBool;
    use std::task::{Context, Poll, Wake};

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let hub = Hub::new();
    let tools = Filter::new().with_tools_list_changed();
    // The second listener alike sits in a lane.
    let (_first, mut seated) = (hub.listen(&tools).unwrap(), hub.listen(&tools).unwrap());
    let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
    let waker = std::task::Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    {
        let mut next = std::pin::pin!(seated.next());
        assert!(next.as_mut().poll(&mut cx).is_pending());
        let status = Event::tools_list_changed().with_succession(crate::Succession::new("k", 1));
        assert_eq!(hub.publish(status).queued, 2);
        assert!(flag.0.load(Ordering::SeqCst), "its waiter moved with it");
        assert!(matches!(
            next.as_mut().poll(&mut cx),
            Poll::Ready(Next::Event(_))
        ));
    }
    assert_eq!(targets(&hub, &EventKind::ListChanged(ListKind::Tools)), 2);
}
