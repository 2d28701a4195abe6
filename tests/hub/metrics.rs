//! The statistics reach any `metrics` recorder under their documented names.

#![cfg(feature = "metrics")]

use crate::support::tools_listener;
use mcp_subscriptions::{CloseReason, Hub};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

/// A metric's name, labels and value.
type Recorded = (String, Vec<(String, String)>, DebugValue);

#[test]
fn hub_figures_are_exported_under_documented_names() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let hub = Hub::builder().capacity(1).build();
    let mut kept = tools_listener(&hub);
    let mut cancelled = tools_listener(&hub);
    hub.notify_tools_list_changed();
    hub.notify_tools_list_changed();
    cancelled.close(CloseReason::Cancelled);
    kept.try_next();

    metrics::with_local_recorder(&recorder, || {
        hub.record_metrics();
        // Recording again must not double the counters: the values are absolute.
        hub.record_metrics();
    });

    let values: Vec<Recorded> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let labels = key
                .key()
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            (key.key().name().to_owned(), labels, value)
        })
        .collect();
    let get = |name: &str, labels: &[(&str, &str)]| {
        values
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && l.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, _, v)| match v {
                DebugValue::Counter(n) => *n as f64,
                DebugValue::Gauge(g) => g.into_inner(),
                DebugValue::Histogram(_) => panic!("{name} is not a histogram"),
            })
            .unwrap_or_else(|| panic!("{name} {labels:?} not recorded"))
    };
    let counter = |name: &str| get(name, &[]);

    assert_eq!(get("mcp_subscriptions_listeners_active", &[]), 1.0);
    assert_eq!(counter("mcp_subscriptions_listeners_opened_total"), 2.0);
    assert_eq!(
        get(
            "mcp_subscriptions_listeners_closed_total",
            &[("reason", "cancelled")]
        ),
        1.0
    );
    assert_eq!(
        get(
            "mcp_subscriptions_listeners_closed_total",
            &[("reason", "overflow")]
        ),
        0.0
    );
    assert_eq!(counter("mcp_subscriptions_events_published_total"), 2.0);
    assert_eq!(counter("mcp_subscriptions_events_matched_total"), 4.0);
    assert_eq!(counter("mcp_subscriptions_events_delivered_total"), 0.0);
    assert_eq!(counter("mcp_subscriptions_events_dropped_total"), 2.0);
    assert_eq!(counter("mcp_subscriptions_events_coalesced_total"), 0.0);
    assert_eq!(counter("mcp_subscriptions_events_discarded_total"), 1.0);
    assert_eq!(get("mcp_subscriptions_events_queued", &[]), 1.0);
    assert_eq!(get("mcp_subscriptions_queue_depth_max", &[]), 1.0);
}
