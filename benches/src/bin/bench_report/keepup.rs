//! The keep-up regime (issue 50): one event at a time, every listener
//! reading it before the next, so that each delivery is a wait, as on many
//! cores. The hub, its listeners alike (sharing lanes) and apart (a queue
//! each), against `broadcast`, for each worker count asked for
//! (`--workers`): the rate, as the medians of interleaved rounds; the
//! wakes the publisher's thread issued and its CPU time per delivery,
//! which bound one publisher's rate on any number of cores; and, where
//! `perf` can count syscalls, `futex` and `sched_yield` calls per delivery.

use std::process::Command;

use harness::{KeepUp, Scenario, Via};

use crate::rounds::interleaved;
use crate::rows::Row;
use crate::settings::Settings;

/// The worker count the two-core targets are judged at; rows measured on
/// another count name it.
const JUDGED_WORKERS: usize = 2;

/// The worker counts of the section unless `--workers` says otherwise.
pub(crate) const DEFAULT_WORKERS: [usize; 1] = [JUDGED_WORKERS];

/// The first argument that makes `bench_report` publish keep-up events for
/// `perf` to count, instead of the report.
pub(crate) const EVENTS_COMMAND: &str = "keepup-events";

/// The hub's ways of keeping its listeners and the anchor, as the rows and
/// [`EVENTS_COMMAND`] name them.
const VIAS: [(&str, Via); 3] = [
    ("alike", Via::Hub),
    ("apart", Via::HubApart),
    ("broadcast", Via::Broadcast),
];

/// The section's rows for each of `workers`.
pub(crate) fn rows(settings: &Settings, workers: &[usize]) -> Vec<Row> {
    let rounds = if settings.quick { 5 } else { 7 };
    let mut rows = Vec::new();
    for &workers in workers {
        let suffix = if workers == JUDGED_WORKERS {
            String::new()
        } else {
            format!("_workers_{workers}")
        };
        let name = |what: &str| format!("keepup_{what}{suffix}");
        for n in [256, 4_096] {
            let mut scenarios = VIAS.map(|(_, via)| KeepUp::new(via, n, workers));
            let [alike, apart, broadcast] = &mut scenarios;
            let rate = |keepup: &mut KeepUp| {
                n as f64 / keepup.per_iteration(settings.budget).as_secs_f64()
            };
            let [alike_rate, apart_rate, broadcast_rate] = interleaved(
                rounds,
                [&mut || rate(alike), &mut || rate(apart), &mut || {
                    rate(broadcast)
                }],
            );
            let [alike_paid, apart_paid, broadcast_paid] = scenarios.map(|mut s| s.take_paid());
            let anchor = "tokio::sync::broadcast";
            rows.push(Row::rounds(
                &name("alike_vs_broadcast"),
                n,
                &alike_rate,
                anchor,
                &broadcast_rate,
                1.5,
            ));
            rows.push(Row::rounds(
                &name("apart_vs_broadcast"),
                n,
                &apart_rate,
                anchor,
                &broadcast_rate,
                1.2,
            ));
            for (kept, paid, judged) in [("alike", alike_paid, true), ("apart", apart_paid, false)]
            {
                let wakes = (
                    paid.wakes_per_delivery(),
                    broadcast_paid.wakes_per_delivery(),
                );
                let wakes_row = Row::new(
                    &name(&format!("{kept}_publisher_wakes_per_delivery")),
                    n,
                    wakes.0,
                    "tokio::sync::broadcast's sender",
                    wakes.1,
                    wakes.1 / wakes.0,
                    1.0,
                );
                let cpu = (
                    paid.cpu_ns_per_delivery(),
                    broadcast_paid.cpu_ns_per_delivery(),
                );
                let cpu_row = Row::new(
                    &name(&format!("{kept}_publisher_cpu_ns_per_delivery")),
                    n,
                    cpu.0,
                    "tokio::sync::broadcast's sender",
                    cpu.1,
                    cpu.1 / cpu.0,
                    2.0,
                );
                if judged {
                    rows.push(wakes_row.at_most(0.25));
                    rows.push(cpu_row);
                } else {
                    rows.push(wakes_row.reported());
                    rows.push(cpu_row.reported());
                }
            }
            rows.extend(syscall_rows(&name, n, workers));
        }
    }
    rows
}

/// `futex` and `sched_yield` calls per delivery, the hub's (alike and
/// apart) against `broadcast`'s, counted by `perf` over the whole process;
/// none where `perf` cannot count syscalls.
fn syscall_rows(name: &dyn Fn(&str) -> String, n: usize, workers: usize) -> Vec<Row> {
    if !perf_counts_syscalls() {
        return Vec::new();
    }
    let per_delivery = VIAS.map(|(via, _)| syscalls_per_delivery(via, n, workers));
    let broadcast = per_delivery[2];
    let mut rows = Vec::new();
    for ((kept, _), ours) in VIAS.iter().zip(per_delivery).take(2) {
        for (call, ours, theirs) in [
            ("futex", ours.0, broadcast.0),
            ("sched_yield", ours.1, broadcast.1),
        ] {
            rows.push(
                Row::new(
                    &name(&format!("{kept}_{call}_per_delivery")),
                    n,
                    ours,
                    "tokio::sync::broadcast (perf, whole process)",
                    theirs,
                    theirs / ours,
                    1.0,
                )
                .reported(),
            );
        }
    }
    rows
}

/// Whether `perf` is on `PATH` and can count syscalls here, saying which
/// rows are skipped when not.
fn perf_counts_syscalls() -> bool {
    let counts = Command::new("perf")
        .args(["stat", "-x,", "-e", "syscalls:sys_enter_futex", "true"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !counts {
        eprintln!("the keep-up syscall rows are skipped: perf cannot count syscalls here");
    }
    counts
}

/// `futex` and `sched_yield` calls per delivery through `via` to `n`
/// listeners on `workers` workers: two runs of different lengths, their
/// difference over the deliveries between them, so that setting up and
/// tearing down cancel out.
fn syscalls_per_delivery(via: &str, n: usize, workers: usize) -> (f64, f64) {
    let (short, long) = if n >= 4_096 {
        (200, 600)
    } else {
        (2_000, 6_000)
    };
    let count = |events: u64| {
        let exe = std::env::current_exe().expect("bench_report's own path");
        let output = Command::new("perf")
            .args(["stat", "-x,", "-e"])
            .arg("syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield")
            .arg(exe)
            .arg(EVENTS_COMMAND)
            .args([
                via.to_owned(),
                n.to_string(),
                workers.to_string(),
                events.to_string(),
            ])
            .output()
            .expect("perf runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let counted = |event: &str| {
            stderr
                .lines()
                .find(|line| line.contains(event))
                .and_then(|line| line.split(',').next()?.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("perf counted no {event}:\n{stderr}"))
        };
        (counted("sys_enter_futex"), counted("sys_enter_sched_yield"))
    };
    let (few, many) = (count(short), count(long));
    let deliveries = ((long - short) * n as u64) as f64;
    ((many.0 - few.0) / deliveries, (many.1 - few.1) / deliveries)
}

/// Publishes the keep-up events `perf` counts when `bench_report` was
/// started as `bench_report keepup-events alike|apart|broadcast LISTENERS
/// WORKERS EVENTS`.
pub(crate) fn run_events(args: &[String]) -> Result<(), String> {
    let usage = || {
        format!(
            "usage: bench_report {EVENTS_COMMAND} alike|apart|broadcast LISTENERS WORKERS EVENTS"
        )
    };
    let [via, n, workers, events] = args else {
        return Err(usage());
    };
    let via = VIAS
        .iter()
        .find(|(name, _)| name == via)
        .map(|&(_, via)| via)
        .ok_or_else(usage)?;
    let (Ok(n), Ok(workers), Ok(events)) = (n.parse(), workers.parse(), events.parse()) else {
        return Err(usage());
    };
    KeepUp::new(via, n, workers).run(events);
    Ok(())
}
