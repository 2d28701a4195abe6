//! Target 6, end to end over Streamable HTTP: the crate's endpoint against
//! rmcp's pattern (at least 10x), and a client that never reads (at least
//! 0.9x our rate without it, the medians of interleaved rounds).

use std::time::Duration;

use harness::{EndToEnd, Server};

use crate::rounds::interleaved;
use crate::rows::Row;
use crate::settings::Settings;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    let quick = settings.quick;
    // The crate's endpoint against rmcp's pattern, 1,000 streams and
    // 10,000 events as the issue sets them; then 999 reading streams with
    // and without one more client that never reads, over enough events to
    // fill that client's socket and every buffer before it (kernel and
    // hyper buffers hold a few megabytes; 50,000 events are past them).
    let (streams, events) = if quick { (100, 200) } else { (1_000, 10_000) };
    let (stalled_streams, stalled_events) = if quick { (10, 50_000) } else { (999, 50_000) };
    // rmcp's pattern needs about two and a half minutes for the full run.
    let limit = Duration::from_secs(if quick { 20 } else { 300 });
    let stall_limit = Duration::from_secs(if quick { 20 } else { 120 });

    let ours = EndToEnd::new(Server::Endpoint, streams, events, limit).once();
    let theirs = EndToEnd::new(Server::RmcpPattern, streams, events, limit).once();
    let mut throughput = Row::new(
        "http_vs_rmcp_pattern",
        streams,
        ours.rate(),
        "rmcp: sinks awaited in turn",
        theirs.rate(),
        ours.rate() / theirs.rate(),
        10.0,
    );
    // A run cut off by the limit did not deliver everything: its rate would
    // be overstated, so it meets nothing.
    if !(ours.completed && theirs.completed) {
        throughput.met = Some(false);
        throughput.target += " (a run did not finish within the limit)";
    }

    // With and without the stalled client in interleaved rounds, judged on
    // the medians.
    let stall_run = |server| EndToEnd::new(server, stalled_streams, stalled_events, stall_limit);
    let all_completed = std::cell::Cell::new(true);
    let rate_of = |run: EndToEnd| {
        let outcome = run.once();
        all_completed.set(all_completed.get() && outcome.completed);
        outcome.rate()
    };
    let [base, ours_stalled] = interleaved(
        3,
        [&mut || rate_of(stall_run(Server::Endpoint)), &mut || {
            rate_of(stall_run(Server::Endpoint).with_stalled_client())
        }],
    );
    let theirs_stalled = stall_run(Server::RmcpPattern).with_stalled_client().once();
    let mut with_stalled = Row::rounds(
        "http_with_a_stalled_client",
        stalled_streams,
        &ours_stalled,
        "our rate without the stalled client",
        &base,
        0.9,
    );
    with_stalled.met = with_stalled.met.map(|met| met && all_completed.get());
    with_stalled.target = format!(
        ">= 0.9x (rmcp pattern with the stalled client: {})",
        if theirs_stalled.completed {
            format!("completed at {:.3e}/s", theirs_stalled.rate())
        } else {
            format!("stalled, not done after {} s", stall_limit.as_secs())
        }
    );
    vec![throughput, with_stalled]
}
