//! Targets 1 and 2, fan-out: every listener matching, no drops, the hub
//! against `broadcast` and a per-listener `mpsc`, as the medians of
//! interleaved rounds; instructions per delivery counted by valgrind's
//! callgrind, which repeat where times do not; and reader polls per event.

use std::process::Command;

use harness::{Alike, BURST, Fanout, Scenario, Via, reader_polls_per_event};

use crate::plot::CurvePoint;
use crate::rounds::interleaved;
use crate::rows::Row;
use crate::settings::Settings;

/// The hub's lead over `broadcast` that every round of fan-out must show
/// (issue 25).
const LEAD_OVER_BROADCAST: f64 = 1.2;

/// The most instructions one delivery may take (issue 25).
const INSTRUCTIONS_PER_DELIVERY: f64 = 150.0;

/// The first argument that makes `bench_report` run fan-out bursts for
/// callgrind to count, instead of the report.
pub(crate) const BURSTS_COMMAND: &str = "fanout-bursts";

/// The section's rows; each point of the curve goes to `curve` for the
/// plot.
pub(crate) fn rows(settings: &Settings, curve: &mut Vec<CurvePoint>) -> Vec<Row> {
    let Settings { quick, budget } = *settings;
    let rounds = if quick { 5 } else { 7 };
    let mut rows = Vec::new();
    for n in [16, 256, 1_024, 4_096] {
        let deliveries = (n * BURST) as f64;
        let (mut hub, mut broadcast, mut mpsc) = (
            Fanout::new(Via::Hub, n),
            Fanout::new(Via::Broadcast, n),
            Fanout::new(Via::Mpsc, n),
        );
        let rate = |fanout: &mut Fanout| deliveries / fanout.per_iteration(budget).as_secs_f64();
        let [hub, broadcast, mpsc] = interleaved(
            rounds,
            [
                &mut || rate(&mut hub),
                &mut || rate(&mut broadcast),
                &mut || rate(&mut mpsc),
            ],
        );
        curve.push((n, hub.median(), broadcast.median(), mpsc.median()));
        if n == 256 || n == 4_096 {
            rows.push(
                Row::rounds(
                    "fanout_vs_broadcast",
                    n,
                    &hub,
                    "tokio::sync::broadcast",
                    &broadcast,
                    1.0,
                )
                .in_every_round(&hub, &broadcast, LEAD_OVER_BROADCAST),
            );
            rows.push(Row::rounds(
                "fanout_vs_mpsc",
                n,
                &hub,
                "per-listener tokio mpsc",
                &mpsc,
                1.5,
            ));
        }
    }

    rows.extend(instruction_rows(quick));

    // Why coalescing is off by default: listeners that coalesce keep
    // queues of their own, so listeners alike no longer share a lane.
    let n = 4_096;
    let (mut lane, mut own) = (Alike::new(n, false), Alike::new(n, true));
    let deliveries = (n * BURST) as f64;
    let rate = |alike: &mut Alike| deliveries / alike.per_iteration(budget).as_secs_f64();
    let [lane, own] = interleaved(rounds, [&mut || rate(&mut lane), &mut || rate(&mut own)]);
    rows.push(
        Row::rounds(
            "fanout_lane_vs_coalescing_queues",
            n,
            &lane,
            "the same listeners, coalescing",
            &own,
            1.0,
        )
        .reported(),
    );

    // How often readers wake per event.
    let bursts = if quick { 20 } else { 200 };
    let (hub_polls, broadcast_polls) = (
        reader_polls_per_event(Via::Hub, 4_096, bursts),
        reader_polls_per_event(Via::Broadcast, 4_096, bursts),
    );
    rows.push(
        Row::new(
            "fanout_reader_polls_per_event",
            4_096,
            hub_polls,
            "tokio::sync::broadcast",
            broadcast_polls,
            broadcast_polls / hub_polls,
            1.0,
        )
        .reported(),
    );
    rows
}

/// Instructions per delivery, the hub's against `broadcast`'s, at 256 and
/// 4,096 listeners; none without valgrind on `PATH`.
fn instruction_rows(quick: bool) -> Vec<Row> {
    if !valgrind_on_path("the fan-out instruction rows") {
        return Vec::new();
    }
    let rounds = if quick { 1 } else { 3 };
    [256, 4_096]
        .into_iter()
        .map(|n| {
            let [hub, broadcast] = interleaved(
                rounds,
                [&mut || instructions_per_delivery("hub", n), &mut || {
                    instructions_per_delivery("broadcast", n)
                }],
            );
            Row::cost_rounds(
                "fanout_instructions_per_delivery",
                n,
                &hub,
                "tokio::sync::broadcast (callgrind)",
                &broadcast,
                1.0,
            )
            .at_most(INSTRUCTIONS_PER_DELIVERY)
        })
        .collect()
}

/// Instructions per delivery through `via` to `n` listeners, as callgrind
/// counts them: two runs of different lengths, their difference over the
/// deliveries between them, so that setting up and tearing down cancel out.
fn instructions_per_delivery(via: &str, n: usize) -> f64 {
    let (short, long) = if n >= 4_096 { (2, 6) } else { (10, 30) };
    let count = |bursts: usize| {
        callgrind_instructions(&[BURSTS_COMMAND, via, &n.to_string(), &bursts.to_string()])
    };
    (count(long) - count(short)) / ((long - short) * n * BURST) as f64
}

/// Whether valgrind is on `PATH`, saying which rows are skipped when not.
pub(crate) fn valgrind_on_path(skipped: &str) -> bool {
    let found = Command::new("valgrind").arg("--version").output().is_ok();
    if !found {
        eprintln!("{skipped} are skipped: valgrind is not on PATH");
    }
    found
}

/// The instructions callgrind counts in a run of this binary with `args`
/// (one of its counting commands).
pub(crate) fn callgrind_instructions(args: &[&str]) -> f64 {
    let exe = std::env::current_exe().expect("bench_report's own path");
    let output = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(exe)
        .args(args)
        .output()
        .expect("valgrind runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr
        .lines()
        .find_map(|line| {
            line.split_once("Collected : ")?
                .1
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|collected| collected as f64)
        .unwrap_or_else(|| panic!("callgrind counted nothing:\n{stderr}"))
}

/// Runs the bursts callgrind counts when `bench_report` was started as
/// `bench_report fanout-bursts hub|hub-apart|broadcast|mpsc LISTENERS BURSTS
/// [PUBLISHERS]`; with `PUBLISHERS`, that many threads share each burst
/// (the scaling table's publishers, on two workers), for `perf stat` to
/// count what publishers side by side wait for.
pub(crate) fn run_bursts(args: &[String]) -> Result<(), String> {
    let usage = || {
        format!(
            "usage: bench_report {BURSTS_COMMAND} hub|hub-apart|broadcast|mpsc LISTENERS BURSTS \
             [PUBLISHERS]"
        )
    };
    let (via, n, bursts, publishers) = match args {
        [via, n, bursts] => (via, n, bursts, None),
        [via, n, bursts, publishers] => (via, n, bursts, Some(publishers)),
        _ => return Err(usage()),
    };
    let via = match via.as_str() {
        "hub" => Via::Hub,
        "hub-apart" => Via::HubApart,
        "broadcast" => Via::Broadcast,
        "mpsc" => Via::Mpsc,
        _ => return Err(usage()),
    };
    let (Ok(n), Ok(bursts)) = (n.parse(), bursts.parse()) else {
        return Err(usage());
    };
    let mut fanout = match publishers.map(|p| p.parse()) {
        None => Fanout::new(via, n),
        Some(Ok(publishers)) => Fanout::parallel(via, n, publishers, 2),
        Some(Err(_)) => return Err(usage()),
    };
    fanout.run(bursts);
    Ok(())
}
