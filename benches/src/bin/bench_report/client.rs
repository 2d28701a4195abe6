//! The client over Streamable HTTP: notifications consumed per second
//! through the crate's client against rmcp's `Peer::listen`, from the same
//! server in the same run.

use harness::{ClientBench, ClientRun, ListenClient};

use crate::rows::Row;
use crate::settings::Settings;

/// Events in flight in the paced runs: under rmcp's default channel
/// capacity (64), so that its subscription cannot lag.
const WINDOW: u64 = 32;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    let quick = settings.quick;
    let (rounds, paced_events) = if quick { (3, 5_000) } else { (5, 50_000) };
    let burst_events = if quick { 20_000 } else { 200_000 };

    let nodelay = ClientBench::new(burst_events as usize, true);
    let mut rows = vec![paced(
        &nodelay,
        "client_http_vs_rmcp_listen",
        "",
        rounds,
        paced_events,
    )];
    // Nagle's algorithm on the server's socket (axum's default) holds each
    // small frame until the previous one is acknowledged.
    let nagle = ClientBench::new(burst_events as usize, false);
    rows.push(paced(
        &nagle,
        "client_http_vs_rmcp_listen_nagle",
        ", server socket with Nagle",
        rounds,
        paced_events,
    ));

    let ours = nodelay.burst(ListenClient::Ours, burst_events);
    let theirs = nodelay.burst(ListenClient::Rmcp, burst_events);
    // rmcp's subscription ends at its channel's capacity when the reader
    // falls behind, so its rate over a burst means little: the row compares
    // the events each client delivered.
    let anchor = match &theirs.cut_short {
        None => "rmcp Peer::listen, events delivered of the burst".to_owned(),
        Some(why) => format!("rmcp Peer::listen, events delivered of the burst (then {why})"),
    };
    let mut burst = Row::new(
        "client_http_burst",
        burst_events as usize,
        ours.rate(),
        &anchor,
        theirs.consumed as f64,
        ours.consumed as f64 / theirs.consumed.max(1) as f64,
        1.0,
    )
    .reported();
    burst.target = match &ours.cut_short {
        None => format!(
            "reported: ours/s; ratio of events delivered (ours {})",
            ours.consumed
        ),
        Some(why) => format!("reported (ours ended early: {why})"),
    };
    rows.push(burst);
    rows
}

/// Both clients paced on `bench`, rounds alternating between them so that
/// a slow moment of the machine falls on both; each figure is the median
/// of its rounds.
fn paced(bench: &ClientBench, scenario: &str, note: &str, rounds: usize, events: u64) -> Row {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        ours.push(bench.paced(ListenClient::Ours, events, WINDOW));
        theirs.push(bench.paced(ListenClient::Rmcp, events, WINDOW));
    }
    let (ours, theirs) = (median(ours), median(theirs));
    let mut row = Row::new(
        scenario,
        events as usize,
        ours.rate(),
        &format!("rmcp Peer::listen, {WINDOW} in flight{note}"),
        theirs.rate(),
        ours.rate() / theirs.rate(),
        1.0,
    )
    .reported();
    if let Some(why) = ours.cut_short.as_ref().or(theirs.cut_short.as_ref()) {
        row.target = format!("reported (a run ended early: {why})");
    }
    row
}

fn median(mut runs: Vec<ClientRun>) -> ClientRun {
    runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
    runs.swap_remove(runs.len() / 2)
}
