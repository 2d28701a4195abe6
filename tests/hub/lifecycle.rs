//! The lifecycle you can trace: `tracing` events for streams opened and
//! refused, overflow, listeners closed with their counts, and the hub
//! completed; none per delivered notification.

use std::io::Write;
use std::sync::{Arc, Mutex};

use mcp_subscriptions::{CloseReason, Filter, Hub, ListenService, Overflow};
use rmcp::model::RequestId;
use serde_json::json;

/// A writer into a shared buffer, for a subscriber the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Runs `f` with a subscriber at `level` writing here.
    fn during<T>(&self, level: tracing::Level, f: impl FnOnce() -> T) -> T {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(level)
            .finish();
        tracing::subscriber::with_default(subscriber, f)
    }

    fn lines(&self) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_owned).collect()
    }
}

#[test]
fn smoke_every_lifecycle_step_is_an_event_and_deliveries_are_not() {
    let captured = Captured::default();
    captured.during(tracing::Level::INFO, || {
        let hub = Hub::builder().capacity(2).build();
        let service = ListenService::new(hub.clone());
        let params = json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]}});
        let mut stream = service.open(RequestId::Number(1), Some(&params)).unwrap();
        let bad = json!({"notifications": []});
        service.open(RequestId::Number(2), Some(&bad)).unwrap_err();
        let mut reader = hub
            .listen(&Filter::new().with_tools_list_changed())
            .unwrap();
        for _ in 0..100 {
            hub.notify_tools_list_changed();
            // Read as it goes: a hundred deliveries, and no event for any.
            while reader.try_next().is_some() {}
        }
        let strict = hub
            .listen_with(
                &Filter::new().with_tools_list_changed(),
                &mcp_subscriptions::OpenContext::default()
                    .with_queue(hub.queue().with_overflow(Overflow::Disconnect)),
            )
            .unwrap();
        for _ in 0..3 {
            hub.notify_tools_list_changed();
        }
        drop(strict);
        drop(reader);
        stream.cancel(CloseReason::Cancelled);
        hub.complete();
    });
    let lines = captured.lines();
    let find = |needle: &str| {
        lines
            .iter()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{}", lines.join("\n")))
    };
    let opened = find("stream opened");
    assert!(
        opened.contains("transport=\"in-process\"") && opened.contains("uris=1"),
        "{opened}"
    );
    assert!(find("stream refused").contains("code=-32602"));
    assert!(find("listener disconnected for overflow").contains("dropped=3"));
    let closed = find("reason=\"cancelled\"");
    assert!(
        closed.contains("listener closed") && closed.contains("dropped=101"),
        "{closed}"
    );
    find("hub completed");
    assert!(
        lines.len() <= 9,
        "no event per delivered notification: {}",
        lines.join("\n")
    );
}

#[test]
fn a_filter_field_no_one_serves_is_warned_once_by_name() {
    let captured = Captured::default();
    let hub = Hub::new();
    captured.during(tracing::Level::WARN, || {
        let service = ListenService::new(hub.clone());
        let typo = json!({"notifications": {"toolListChanged": true}});
        for id in 1..=3 {
            let stream = service.open(RequestId::Number(id), Some(&typo)).unwrap();
            assert!(stream.granted().is_empty());
        }
        let known = json!({"notifications": {"toolsListChanged": true}});
        service.open(RequestId::Number(4), Some(&known)).unwrap();
    });
    let lines = captured.lines();
    let warned: Vec<_> = lines
        .iter()
        .filter(|line| line.contains("WARN") && line.contains("does not know"))
        .collect();
    assert_eq!(warned.len(), 1, "{lines:?}");
    assert!(warned[0].contains("field=toolListChanged"), "{lines:?}");
}
