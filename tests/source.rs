//! The `Source` contract, for the hub and for a hand-written source.

use std::thread;
use std::time::Duration;

use mcp_subscriptions::{
    CloseReason, Event, Filter, Hub, Next, OpenContext, OpenError, Opened, Source,
};

#[test]
fn hub_as_a_source_grants_narrowed_filters_and_serves_them() {
    let hub = Hub::builder()
        .capabilities(mcp_subscriptions::Capabilities::none().with_tools_list_changed())
        .build();
    let requested = Filter::new()
        .with_tools_list_changed()
        .with_prompts_list_changed();
    let Opened {
        granted,
        mut handle,
        ..
    } = hub.open(&requested, &OpenContext::default()).unwrap();
    assert_eq!(granted, Filter::new().with_tools_list_changed());
    hub.notify_tools_list_changed();
    let next = Source::next_timeout(&hub, &mut handle, Duration::from_secs(1));
    assert!(matches!(next, Some(Next::Event(_))));
    hub.close(&mut handle, CloseReason::Cancelled);
    assert_eq!(hub.stats().listeners_closed.cancelled, 1);
}

#[test]
fn next_after_close_returns_closed_also_from_another_thread() {
    let hub = Hub::new();
    let Opened { mut handle, .. } = hub
        .open(
            &Filter::new().with_tools_list_changed(),
            &OpenContext::default(),
        )
        .unwrap();
    hub.notify_tools_list_changed();
    hub.close(&mut handle, CloseReason::Disconnected);
    let other = hub.clone();
    let next = thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let first = runtime.block_on(Source::next(&other, &mut handle));
        let second = Source::next_timeout(&other, &mut handle, Duration::ZERO);
        other.close(&mut handle, CloseReason::Error);
        (first, second)
    })
    .join()
    .expect("next after close must not panic");
    assert_eq!(next, (Next::Closed, Some(Next::Closed)));
    let stats = hub.stats();
    assert_eq!(
        stats.listeners_closed.total(),
        1,
        "the second close counts nothing"
    );
    assert_eq!(stats.events_discarded, 1);
}

/// A hand-written source that yields `count` tools-list changes then
/// completes, or refuses when asked for nothing.
struct Countdown {
    count: usize,
}

impl Source for Countdown {
    type Handle = Option<usize>;

    fn open(&self, requested: &Filter, _: &OpenContext) -> Result<Opened<Self::Handle>, OpenError> {
        if !requested.tools_list_changed() {
            return Err(OpenError::Refused(rmcp::model::ErrorData::invalid_params(
                "ask for toolsListChanged",
                None,
            )));
        }
        Ok(Opened::new(
            Filter::new().with_tools_list_changed(),
            Some(self.count),
        ))
    }

    async fn next(&self, handle: &mut Self::Handle) -> Next {
        match handle {
            None => Next::Closed,
            Some(0) => {
                *handle = None;
                Next::Complete
            }
            Some(left) => {
                *left -= 1;
                tokio::task::yield_now().await;
                Next::Event(Event::tools_list_changed())
            }
        }
    }

    fn close(&self, handle: &mut Self::Handle, _: CloseReason) {
        *handle = None;
    }
}

#[test]
fn a_hand_written_source_gets_a_blocking_form_for_free() {
    let source = Countdown { count: 2 };
    let err = source
        .open(&Filter::new(), &OpenContext::default())
        .unwrap_err();
    assert_eq!(err.to_error_data().code.0, -32602);

    let Opened { mut handle, .. } = source
        .open(
            &Filter::new().with_tools_list_changed(),
            &OpenContext::default(),
        )
        .unwrap();
    let mut items = Vec::new();
    while let Some(next) = source.next_timeout(&mut handle, Duration::from_secs(1)) {
        let terminal = next.is_terminal();
        items.push(next);
        if terminal {
            break;
        }
    }
    assert!(matches!(
        items[..],
        [Next::Event(_), Next::Event(_), Next::Complete]
    ));
    source.close(&mut handle, CloseReason::Complete);
    assert_eq!(
        source.next_timeout(&mut handle, Duration::from_secs(1)),
        Some(Next::Closed)
    );
}

#[test]
fn the_default_blocking_form_times_out_on_a_source_that_never_yields() {
    struct Never;
    impl Source for Never {
        type Handle = ();
        fn open(&self, _: &Filter, _: &OpenContext) -> Result<Opened<()>, OpenError> {
            Ok(Opened::new(Filter::new(), ()))
        }
        async fn next(&self, _: &mut ()) -> Next {
            std::future::pending().await
        }
        fn close(&self, _: &mut (), _: CloseReason) {}
    }
    assert_eq!(Never.next_timeout(&mut (), Duration::from_millis(20)), None);
}
