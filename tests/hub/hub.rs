//! The hub's behaviour as a user sees it: routing, overflow, completion,
//! cleanup and the three ways of reading.

use std::thread;
use std::time::Duration;

use crate::support::{drain, event, tools_listener, uri};
use futures_core::Stream;
use mcp_subscriptions::error::ListenParamsError;
use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::error::StreamError;
use mcp_subscriptions::queue::Settings;
use mcp_subscriptions::{
    Capabilities, CloseReason, Event, Filter, Hub, Next, OpenContext, Overflow,
};
use serde_json::json;

#[test]
fn smoke_publish_listen_read_stats() {
    let hub = Hub::new();
    let mut listener = tools_listener(&hub);
    let report = hub.notify_tools_list_changed();
    assert_eq!((report.matched, report.queued), (1, 1));
    assert_eq!(
        event(listener.try_next()).method(),
        "notifications/tools/list_changed"
    );
    assert_eq!(listener.try_next(), None);
    let stats = hub.stats();
    assert_eq!(stats.listeners_active, 1);
    assert_eq!(stats.events_published, 1);
    assert_eq!(stats.events.delivered, 1);
    assert!(stats.events.is_balanced());
}

#[test]
fn drop_oldest_keeps_the_newest_n_and_reports_the_exact_lag() {
    let hub = Hub::builder().capacity(4).build();
    let mut listener = hub.listen(&Filter::everything()).unwrap();
    let evictions: usize = (0..10)
        .map(|i| hub.notify_resource_updated(format!("file:///{i}")).evicted)
        .sum();
    assert_eq!(evictions, 6);
    assert_eq!(listener.try_next(), Some(Next::Lagged(6)));
    let uris: Vec<String> = (0..4)
        .map(|_| uri(&event(listener.try_next())).to_owned())
        .collect();
    assert_eq!(uris, ["file:///6", "file:///7", "file:///8", "file:///9"]);
    assert_eq!(listener.try_next(), None);
    let stats = listener.stats();
    assert_eq!(
        (
            stats.events.matched,
            stats.events.delivered,
            stats.events.dropped,
            stats.lag
        ),
        (10, 4, 6, 0)
    );
    assert_eq!(stats.max_queue_depth, 4);
}

/// Past the seats of one lane, listeners alike sit in several: each
/// still gets every event once, loses exactly what its bound evicts, and
/// the publish's report counts each listener, not each lane.
#[test]
fn listeners_alike_past_one_lane_s_seats_each_get_every_event_once_and_their_exact_lag() {
    let hub = Hub::builder().capacity(4).build();
    let filter = Filter::new().with_resource("file:///a");
    let mut listeners: Vec<_> = (0..600).map(|_| hub.listen(&filter).unwrap()).collect();
    let reports: Vec<_> = (0..6)
        .map(|_| hub.notify_resource_updated("file:///a"))
        .collect();
    assert!(reports.iter().all(|report| report.queued == 600));
    assert_eq!(reports[4].evicted + reports[5].evicted, 1_200);
    for listener in &mut listeners[..300] {
        let read = drain(listener);
        assert_eq!(read.len(), 5, "{read:?}");
        assert_eq!(read[0], Next::Lagged(2));
    }
    // Half leave; those left, in every lane, go on.
    let kept = listeners.split_off(300);
    drop(listeners);
    hub.notify_resource_updated("file:///a");
    for mut listener in kept {
        let read = drain(&mut listener);
        assert_eq!(read[0], Next::Lagged(3));
        assert_eq!(read.len(), 5, "{read:?}");
        let stats = listener.stats();
        assert_eq!(
            (
                stats.events.matched,
                stats.events.delivered,
                stats.events.dropped
            ),
            (7, 4, 3)
        );
    }
    assert_eq!(hub.stats().listeners_active, 0);
}

#[test]
fn disconnect_ends_with_the_overflow_error_and_frees_the_slot() {
    let hub = Hub::builder()
        .capacity(2)
        .overflow(Overflow::Disconnect)
        .max_listeners(1)
        .build();
    let mut listener = tools_listener(&hub);
    assert_eq!(hub.notify_tools_list_changed().queued, 1);
    assert_eq!(hub.notify_tools_list_changed().queued, 1);
    let report = hub.notify_tools_list_changed();
    assert_eq!(
        (report.matched, report.queued, report.disconnected),
        (1, 0, 1)
    );

    // The slot is free at once, before the reader even notices.
    assert_eq!(hub.stats().listeners_active, 0);
    let mut second = tools_listener(&hub);

    let failed = listener.try_next().unwrap();
    assert_eq!(failed, Next::Failed(StreamError::Overflow { dropped: 3 }));
    let Next::Failed(err) = failed else {
        unreachable!()
    };
    let data = err.to_error_data();
    assert_eq!(data.code, mcp_subscriptions::error::OVERFLOW_ERROR_CODE);
    assert_eq!(data.data, Some(json!({"reason": "overflow", "dropped": 3})));
    assert_eq!(listener.try_next(), Some(Next::Closed));

    // The failed listener no longer matches; the new one does.
    assert_eq!(hub.notify_tools_list_changed().matched, 1);
    assert!(matches!(second.try_next(), Some(Next::Event(_))));

    let stats = hub.stats();
    assert_eq!(stats.listeners_closed.overflow, 1);
    assert_eq!(stats.events.dropped, 3);
    assert!(stats.events.is_balanced());
}

#[test]
fn per_listener_overrides_win_over_hub_defaults() {
    let hub = Hub::builder().capacity(100).build();
    let context = OpenContext::default().with_queue(
        Settings::default()
            .with_capacity(1)
            .with_overflow(Overflow::Disconnect),
    );
    let mut strict = hub
        .listen_with(&Filter::new().with_prompts_list_changed(), &context)
        .unwrap();
    let mut lenient = hub
        .listen(&Filter::new().with_prompts_list_changed())
        .unwrap();
    hub.notify_prompts_list_changed();
    let report = hub.notify_prompts_list_changed();
    assert_eq!((report.queued, report.disconnected), (1, 1));
    assert!(matches!(strict.try_next(), Some(Next::Failed(_))));
    assert_eq!(drain(&mut lenient).len(), 2);
    assert_eq!(
        (hub.queue().capacity(), hub.queue().overflow()),
        (100, Overflow::DropOldest)
    );
}

#[test]
fn a_listener_never_receives_what_it_was_not_granted() {
    let hub = Hub::builder()
        .capabilities(
            Capabilities::none()
                .with_tools_list_changed()
                .with_resources_subscribe(),
        )
        .build();
    let requested = Filter::new()
        .with_tools_list_changed()
        .with_prompts_list_changed()
        .with_resource("file:///mine")
        .with_extension("taskIds", json!(["t1"]));
    let mut listener = hub.listen(&requested).unwrap();
    assert_eq!(
        listener.filter(),
        &Filter::new()
            .with_tools_list_changed()
            .with_resource("file:///mine")
    );
    hub.notify_prompts_list_changed();
    hub.notify_resources_list_changed();
    hub.notify_resource_updated("file:///other");
    hub.notify_resource_updated("file:///mine/child");
    hub.publish(Event::extension(
        "notifications/tasks",
        serde_json::Map::new(),
        Some(mcp_subscriptions::Selector::new(
            "taskIds",
            Some("t1".into()),
        )),
    ));
    hub.notify_tools_list_changed();
    hub.notify_resource_updated("file:///mine");
    let got: Vec<String> = drain(&mut listener)
        .into_iter()
        .map(|next| event(Some(next)).to_plain_json())
        .collect();
    assert_eq!(
        got,
        [
            Event::tools_list_changed().to_plain_json(),
            Event::resource_updated("file:///mine").to_plain_json()
        ]
    );
}

#[test]
fn complete_drains_what_is_held_then_ends_and_refuses_newcomers() {
    let hub = Hub::new();
    let mut listener = hub
        .listen(&Filter::new().with_resources_list_changed())
        .unwrap();
    hub.notify_resources_list_changed();
    hub.notify_resources_list_changed();
    hub.complete();
    assert!(hub.is_complete());
    assert_eq!(hub.notify_resources_list_changed().matched, 0);
    assert!(matches!(
        hub.listen(&Filter::new()),
        Err(OpenError::Completed)
    ));
    assert!(matches!(listener.try_next(), Some(Next::Event(_))));
    assert!(matches!(listener.try_next(), Some(Next::Event(_))));
    assert_eq!(listener.try_next(), Some(Next::Complete));
    assert_eq!(listener.try_next(), Some(Next::Closed));
    let stats = hub.stats();
    assert_eq!(stats.listeners_active, 0);
    assert_eq!(stats.listeners_closed.complete, 1);
    assert_eq!(stats.events.delivered, 2);
    assert!(stats.events.is_balanced());
    drop(listener);
    assert_eq!(
        hub.stats().listeners_closed.total(),
        1,
        "closing twice counts once"
    );
}

#[test]
fn dropping_the_last_hub_handle_completes_its_listeners() {
    let hub = Hub::new();
    let publisher = hub.clone();
    let mut listener = tools_listener(&hub);
    drop(hub);
    publisher.notify_tools_list_changed();
    drop(publisher);
    assert!(matches!(listener.try_next(), Some(Next::Event(_))));
    assert_eq!(listener.try_next(), Some(Next::Complete));
}

#[test]
fn dropped_closed_and_aborted_listeners_leave_no_trace() {
    let hub = Hub::new();
    let filter = Filter::new().with_tools_list_changed().with_resource("r");
    let dropped = hub.listen(&filter).unwrap();
    let mut closed = hub.listen(&filter).unwrap();
    hub.notify_tools_list_changed();
    drop(dropped);
    closed.close(CloseReason::Cancelled);
    assert_eq!(closed.try_next(), Some(Next::Closed));

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut listener = hub.listen(&filter).unwrap();
        let task = tokio::spawn(async move { listener.next().await });
        tokio::task::yield_now().await;
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        let mut listener = hub.listen(&filter).unwrap();
        let task = tokio::spawn(async move {
            let _ = listener.next().await;
            panic!("serving task panics");
        });
        hub.notify_resource_updated("r");
        assert!(task.await.unwrap_err().is_panic());
    });

    let stats = hub.stats();
    assert_eq!(stats.listeners_active, 0);
    assert!(hub.listeners().is_empty());
    assert_eq!(stats.listeners_opened, 4);
    assert_eq!(stats.listeners_closed.cancelled, 1);
    assert_eq!(stats.listeners_closed.disconnected, 3);
    assert_eq!(stats.events.discarded, 2);
    assert!(stats.events.is_balanced());
    // Nothing is routed to the departed: the index is empty again.
    assert_eq!(hub.notify_tools_list_changed().matched, 0);
    assert_eq!(hub.notify_resource_updated("r").matched, 0);
}

#[test]
fn refusals_are_typed_and_carry_their_json_rpc_codes() {
    let hub = Hub::builder().max_listeners(1).max_uris(2).build();
    let too_many = Filter::new()
        .with_resource("a")
        .with_resource("b")
        .with_resource("c");
    let err = hub.listen(&too_many).unwrap_err();
    assert_eq!(
        err,
        OpenError::InvalidParams(ListenParamsError::TooManyUris { count: 3, limit: 2 })
    );
    assert_eq!(err.to_error_data().code.0, -32602);

    let _held = hub.listen(&Filter::new()).unwrap();
    let err = hub.listen(&Filter::new()).unwrap_err();
    assert_eq!(err, OpenError::LimitReached { limit: 1 });
    let data = err.to_error_data();
    assert_eq!(
        (data.code.0, &*data.message),
        (-32603, "Subscription limit reached")
    );
    assert_eq!(hub.stats().listeners_opened, 1);
}

#[test]
fn listeners_are_listed_by_id_with_their_figures() {
    let hub = Hub::new();
    let a = tools_listener(&hub);
    let b = hub.listen(&Filter::new().with_resource("x")).unwrap();
    hub.notify_resource_updated("x");
    let listed = hub.listeners();
    assert_eq!(
        listed.iter().map(|l| l.id).collect::<Vec<_>>(),
        [a.id(), b.id()]
    );
    assert_eq!(listed[1].events.queued, 1);
    assert_eq!(listed[1].filter, Filter::new().with_resource("x"));
    assert_eq!(listed[0].events.matched, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_next_is_woken_by_a_publish_from_another_thread() {
    let hub = Hub::new();
    let mut listener = tools_listener(&hub);
    let publisher = hub.clone();
    let handle = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        publisher.notify_tools_list_changed()
    });
    let next = tokio::time::timeout(Duration::from_secs(5), listener.next())
        .await
        .expect("a publish wakes the reader");
    assert!(matches!(next, Next::Event(_)));
    assert_eq!(handle.join().unwrap().queued, 1);
}

#[tokio::test]
async fn async_next_is_cancel_safe() {
    let hub = Hub::new();
    let mut listener = hub.listen(&Filter::new().with_resource("r")).unwrap();
    // A cancelled wait loses nothing and leaves no stale waker behind.
    for _ in 0..3 {
        let timed_out = tokio::time::timeout(Duration::from_millis(5), listener.next()).await;
        assert!(timed_out.is_err());
    }
    hub.notify_resource_updated("r");
    let next = tokio::time::timeout(Duration::from_secs(5), listener.next())
        .await
        .unwrap();
    assert_eq!(uri(&event(Some(next))), "r");
}

#[test]
fn a_wait_woken_then_dropped_before_its_next_poll_loses_nothing() {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Wake, Waker};

    struct CountWakes(AtomicUsize);
    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    let hub = Hub::new();
    let mut listener = hub.listen(&Filter::new().with_resource("r")).unwrap();
    let wakes = Arc::new(CountWakes(AtomicUsize::new(0)));
    let waker = Waker::from(wakes.clone());
    // Polls one wait until it registers, then drops it.
    let wait_once = |listener: &mut mcp_subscriptions::Listener, then: &dyn Fn()| {
        let mut wait = pin!(listener.next());
        assert!(
            wait.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        then();
    };
    wait_once(&mut listener, &|| {
        hub.notify_resource_updated("r");
        assert_eq!(
            wakes.0.load(Ordering::SeqCst),
            1,
            "a publish wakes the waiting reader"
        );
        // Dropped next, woken but never polled again.
    });
    let next = listener.try_next();
    assert_eq!(uri(&event(next)), "r");

    // A wait dropped before any publish leaves no waker behind to wake.
    wait_once(&mut listener, &|| {});
    hub.notify_resource_updated("r");
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        1,
        "no stale waker was woken"
    );
    assert!(matches!(listener.try_next(), Some(Next::Event(_))));
}

#[test]
fn a_match_everything_listener_gets_each_event_once() {
    let hub = Hub::new();
    let mut listener = hub
        .listen(
            &Filter::everything()
                .with_resource("r")
                .with_extension("taskIds", json!(true)),
        )
        .unwrap();
    assert_eq!(hub.notify_resource_updated("r").matched, 1);
    assert_eq!(hub.notify_tools_list_changed().matched, 1);
    assert_eq!(drain(&mut listener).len(), 2);
}

#[test]
fn an_overflowed_listener_counts_as_overflow_whoever_retires_it() {
    let hub = Hub::builder()
        .capacity(1)
        .overflow(Overflow::Disconnect)
        .build();
    let mut listener = tools_listener(&hub);
    hub.notify_tools_list_changed();
    hub.notify_tools_list_changed();
    assert!(matches!(listener.try_next(), Some(Next::Failed(_))));
    listener.close(CloseReason::Error);
    let closed = hub.stats().listeners_closed;
    assert_eq!((closed.overflow, closed.error, closed.total()), (1, 0, 1));
}

#[test]
fn blocking_next_accepts_an_endless_timeout() {
    let hub = Hub::new();
    let mut listener = tools_listener(&hub);
    let publisher = hub.clone();
    let handle = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        publisher.notify_tools_list_changed();
    });
    assert!(matches!(
        listener.next_timeout(Duration::MAX),
        Some(Next::Event(_))
    ));
    handle.join().unwrap();
}

#[test]
fn blocking_next_times_out_then_is_woken_by_a_publish() {
    let hub = Hub::new();
    let mut listener = hub.listen(&Filter::new().with_resource("r")).unwrap();
    assert_eq!(listener.next_timeout(Duration::from_millis(10)), None);
    let publisher = hub.clone();
    let handle = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        publisher.notify_resource_updated("r");
    });
    let next = listener.next_timeout(Duration::from_secs(5));
    assert_eq!(uri(&event(next)), "r");
    handle.join().unwrap();
}

#[tokio::test]
async fn the_stream_form_ends_after_the_terminal_item() {
    let hub = Hub::new();
    let mut listener = tools_listener(&hub);
    hub.notify_tools_list_changed();
    hub.complete();
    let items: Vec<Next> = std::future::poll_fn(|cx| {
        let mut items = Vec::new();
        while let std::task::Poll::Ready(item) = std::pin::Pin::new(&mut listener).poll_next(cx) {
            match item {
                Some(item) => items.push(item),
                None => return std::task::Poll::Ready(items),
            }
        }
        std::task::Poll::Pending
    })
    .await;
    assert!(matches!(items[..], [Next::Event(_), Next::Complete]));
}

#[test]
fn an_event_is_rendered_once_per_publish_whatever_the_listener_count() {
    let hub = Hub::new();
    let mut listeners: Vec<_> = (0..100)
        .map(|_| hub.listen(&Filter::new().with_resource("r")).unwrap())
        .collect();
    hub.notify_resource_updated("r");
    let events: Vec<Event> = listeners
        .iter_mut()
        .map(|listener| event(listener.try_next()))
        .collect();
    // Every listener holds the very rendering the publish made, not a copy.
    assert!(events.iter().all(|e| e.ptr_eq(&events[0])));
    // Stamping splices each listener's id into those bytes.
    let a = events[0].to_stamped_json(&rmcp::model::RequestId::Number(1));
    let b = events[99].to_stamped_json(&rmcp::model::RequestId::String("x".into()));
    assert_eq!(a.replace(r#"Id":1"#, r#"Id":"x""#), b);
    // And a stream's message shares those bytes rather than copying them:
    // only the id is its own.
    let shared = |event: &Event, id: rmcp::model::RequestId| {
        let message = event.stamped(&mcp_subscriptions::SubscriptionId::new(&id));
        let chunks: Vec<_> = message.chunks().map(|c| c.as_ptr()).collect();
        (chunks[0], chunks[2])
    };
    assert_eq!(
        shared(&events[0], rmcp::model::RequestId::Number(1)),
        shared(&events[99], rmcp::model::RequestId::Number(2)),
    );
}

#[test]
fn every_snapshot_and_configuration_type_serializes() {
    let hub =
        Hub::builder()
            .capabilities(mcp_subscriptions::Capabilities::default().with_extension(
                mcp_subscriptions::Extension::new("vendor/x").with_id_list("xIds", 3),
            ))
            .build();
    let _listener = hub
        .listen(&Filter::new().with_resource("file:///a"))
        .unwrap();
    let report = hub.notify_resource_updated("file:///a");
    let json = |value: serde_json::Value| value.to_string();
    assert!(json(serde_json::to_value(hub.stats()).unwrap()).contains(r#""queued_bytes""#));
    let listeners = serde_json::to_value(hub.listeners()).unwrap();
    assert_eq!(
        listeners[0]["filter"]["resourceSubscriptions"][0],
        "file:///a"
    );
    assert_eq!(listeners[0]["overflow"], "drop-oldest");
    assert_eq!(serde_json::to_value(report).unwrap()["queued"], 1);
    let capabilities = serde_json::to_value(hub.capabilities()).unwrap();
    assert_eq!(capabilities["toolsListChanged"], true);
    assert_eq!(capabilities["extensions"][0]["id"], "vendor/x");
    assert_eq!(capabilities["extensions"][0]["fields"][0], "xIds");
}

/// A waker that drops its listener inside `wake`, as an executor running
/// the task inline might: the publish that wakes it neither deadlocks (the
/// retirement needs the registry's write lock, which the publish holds for
/// reading) nor loses the retirement, done once the publish lets go.
#[test]
fn a_waker_that_drops_its_listener_inline_neither_deadlocks_nor_leaks() {
    use std::pin::Pin;
    use std::sync::{Arc, Mutex, mpsc};
    use std::task::{Context, Wake, Waker};

    struct DropOnWake(Arc<Mutex<Option<mcp_subscriptions::Listener>>>);
    impl Wake for DropOnWake {
        fn wake(self: Arc<Self>) {
            drop(self.0.lock().unwrap().take());
        }
    }

    let hub = Hub::new();
    let slot = Arc::new(Mutex::new(Some(tools_listener(&hub))));
    let waker = Waker::from(Arc::new(DropOnWake(slot.clone())));
    {
        let mut held = slot.lock().unwrap();
        let listener = held.as_mut().unwrap();
        let polled = Pin::new(listener).poll_next(&mut Context::from_waker(&waker));
        assert!(polled.is_pending(), "nothing published yet");
    }
    let (done, finished) = mpsc::channel();
    let publisher = hub.clone();
    thread::spawn(move || done.send(publisher.notify_tools_list_changed()).unwrap());
    let report = finished
        .recv_timeout(Duration::from_secs(10))
        .expect("the publish finished instead of deadlocking");
    assert_eq!(report.matched, 1);
    assert!(slot.lock().unwrap().is_none(), "the waker dropped it");
    let stats = hub.stats();
    assert_eq!(stats.listeners_active, 0, "retired once the publish ended");
    assert!(stats.events.is_balanced());
}

/// Listeners granted the same filter with the default settings share one
/// ring; each still reads at its own pace, within its own bound, and with
/// its own exact counts, and a publish reports each one it cost an event.
#[test]
fn listeners_alike_each_keep_their_own_pace_bound_and_counts() {
    let hub = Hub::builder().capacity(2).build();
    let filter = Filter::new().with_resource("file:///a");
    let (mut reading, mut stalled, mut leaving) = (
        hub.listen(&filter).unwrap(),
        hub.listen(&filter).unwrap(),
        hub.listen(&filter).unwrap(),
    );
    let mut evicted = Vec::new();
    for i in 0..4 {
        let report = hub.publish(Event::resource_updated("file:///a"));
        assert_eq!(
            (report.matched, report.queued),
            (3 - usize::from(i == 3), 3 - usize::from(i == 3))
        );
        evicted.push(report.evicted);
        assert!(matches!(reading.try_next(), Some(Next::Event(_))));
        if i == 0 {
            assert!(matches!(leaving.try_next(), Some(Next::Event(_))));
        }
        if i == 2 {
            leaving.close(CloseReason::Cancelled);
        }
    }
    // The third and fourth publishes each cost the stalled listener its
    // oldest event; the others had read it.
    assert_eq!(evicted, [0, 0, 1, 1]);
    assert_eq!(
        drain(&mut stalled),
        [Next::Lagged(2)]
            .into_iter()
            .chain((0..2).map(|_| Next::Event(Event::resource_updated("file:///a"))))
            .collect::<Vec<_>>()
    );
    let figures = |stats: mcp_subscriptions::hub::ListenerStats| {
        assert!(stats.events.is_balanced(), "{stats:?}");
        let e = stats.events;
        (
            e.matched,
            e.delivered,
            e.dropped,
            e.discarded,
            stats.max_queue_depth,
        )
    };
    assert_eq!(figures(reading.stats()), (4, 4, 0, 0, 1));
    assert_eq!(figures(stalled.stats()), (4, 2, 2, 0, 2));
    assert_eq!(figures(leaving.stats()), (3, 1, 0, 2, 2));
    let stats = hub.stats();
    assert!(stats.events.is_balanced(), "{stats:?}");
    assert_eq!((stats.events.matched, stats.events.dropped), (11, 2));
}

/// An event with a succession gives listeners that share a ring queues of
/// their own, holding what each had yet to read; from then on each keeps
/// its successions as any queue does, and later listeners get their own.
#[test]
fn a_succession_hands_listeners_alike_their_own_queues_losing_nothing() {
    use mcp_subscriptions::Succession;

    let hub = Hub::new();
    let filter = Filter::new().with_resource("file:///job");
    // The first listener alike keeps a queue of its own; the next two
    // share a lane.
    let _first = hub.listen(&filter).unwrap();
    let (mut behind, mut current) = (hub.listen(&filter).unwrap(), hub.listen(&filter).unwrap());
    hub.notify_resource_updated("file:///job");
    assert!(matches!(current.try_next(), Some(Next::Event(_))));
    let status = |version, state: &str| {
        Event::extension(
            "notifications/resources/updated",
            json!({"uri": "file:///job", "state": state})
                .as_object()
                .unwrap()
                .clone(),
            None,
        )
        .with_succession(Succession::new("job", version))
    };
    assert_eq!(hub.publish(status(1, "working")).queued, 3);
    // The newer version takes the place of the pending one in each queue.
    hub.publish(status(2, "done"));
    let late = hub.listen(&filter).unwrap();
    let states = |listener: &mut mcp_subscriptions::Listener| {
        drain(listener)
            .into_iter()
            .map(|next| match next {
                Next::Event(event) => event.to_plain_json(),
                other => panic!("unexpected {other:?}"),
            })
            .collect::<Vec<_>>()
    };
    let done = status(2, "done").to_plain_json();
    let plain = Event::resource_updated("file:///job").to_plain_json();
    assert_eq!(states(&mut behind), [plain, done.clone()]);
    assert_eq!(states(&mut current), [done]);
    for listener in [&behind, &current] {
        let events = listener.stats().events;
        assert!(events.is_balanced(), "{events:?}");
        assert_eq!((events.matched, events.coalesced), (3, 1));
    }
    // Opened after a succession was published: a queue of its own, where a
    // stale version is absorbed.
    let mut late = late;
    hub.publish(status(3, "again"));
    hub.publish(status(1, "stale"));
    assert_eq!(states(&mut late), [status(3, "again").to_plain_json()]);
    assert_eq!(late.stats().events.coalesced, 1);
}

/// A listener that disconnects on overflow keeps its own queue beside
/// listeners with the same filter that share a ring, and still fails alone.
#[test]
fn a_disconnecting_listener_beside_listeners_alike_fails_alone() {
    let hub = Hub::builder().capacity(1).build();
    let filter = Filter::new().with_tools_list_changed();
    // The first keeps a queue of its own; the next two share a lane.
    let mut alike: Vec<_> = (0..3).map(|_| hub.listen(&filter).unwrap()).collect();
    let mut strict = hub
        .listen_with(
            &filter,
            &OpenContext::default().with_queue(hub.queue().with_overflow(Overflow::Disconnect)),
        )
        .unwrap();
    hub.notify_tools_list_changed();
    let report = hub.notify_tools_list_changed();
    assert_eq!((report.evicted, report.disconnected), (3, 1));
    for listener in &mut alike {
        assert_eq!(listener.try_next(), Some(Next::Lagged(1)));
        assert!(matches!(listener.try_next(), Some(Next::Event(_))));
    }
    assert_eq!(
        strict.try_next(),
        Some(Next::Failed(StreamError::Overflow { dropped: 2 }))
    );
    assert_eq!(hub.stats().listeners_closed.overflow, 1);
}
