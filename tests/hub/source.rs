//! The `Source` contract, for the hub and for a hand-written source.

use std::thread;
use std::time::Duration;

use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::{
    CloseReason, Event, Filter, Hub, Next, OpenContext, Opened, Source, SourceHandle,
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
    let next = SourceHandle::next_timeout(&mut handle, Duration::from_secs(1));
    assert!(matches!(next, Some(Next::Event(_))));
    SourceHandle::close(&mut handle, CloseReason::Cancelled);
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
    SourceHandle::close(&mut handle, CloseReason::Disconnected);
    let next = thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let first = runtime.block_on(SourceHandle::next(&mut handle));
        let second = SourceHandle::next_timeout(&mut handle, Duration::ZERO);
        SourceHandle::close(&mut handle, CloseReason::Error);
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
    assert_eq!(stats.events.discarded, 1);
}

/// A hand-written source that yields `count` tools-list changes then
/// completes, or refuses when asked for nothing.
struct Countdown {
    count: usize,
}

/// What is left to yield; `None` once ended.
#[derive(Debug)]
struct Left(Option<usize>);

impl Source for Countdown {
    type Handle = Left;

    fn open(&self, requested: &Filter, _: &OpenContext) -> Result<Opened<Left>, OpenError> {
        if !requested.tools_list_changed() {
            return Err(OpenError::Refused(rmcp::model::ErrorData::invalid_params(
                "ask for toolsListChanged",
                None,
            )));
        }
        Ok(Opened::new(
            Filter::new().with_tools_list_changed(),
            Left(Some(self.count)),
        ))
    }
}

impl SourceHandle for Left {
    async fn next(&mut self) -> Next {
        match &mut self.0 {
            None => Next::Closed,
            Some(0) => {
                self.0 = None;
                Next::Complete
            }
            Some(left) => {
                *left -= 1;
                tokio::task::yield_now().await;
                Next::Event(Event::tools_list_changed())
            }
        }
    }

    fn close(&mut self, _: CloseReason) {
        self.0 = None;
    }
}

#[test]
fn a_hand_written_handle_gets_a_blocking_form_for_free() {
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
    while let Some(next) = handle.next_timeout(Duration::from_secs(1)) {
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
    handle.close(CloseReason::Complete);
    assert_eq!(
        handle.next_timeout(Duration::from_secs(1)),
        Some(Next::Closed)
    );
}

#[test]
fn the_default_blocking_form_times_out_on_a_handle_that_never_yields() {
    struct Never;
    impl SourceHandle for Never {
        async fn next(&mut self) -> Next {
            std::future::pending().await
        }
        fn close(&mut self, _: CloseReason) {}
    }
    assert_eq!(Never.next_timeout(Duration::from_millis(20)), None);
}
