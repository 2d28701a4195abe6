//! The herd: listen streams held over three example-server replicas on one
//! port (`--reuse-port`, relayed through a `redis-server` started for the
//! section), one replica killed with `SIGKILL`, its clients (the crate's,
//! with `Relisten::default()`) coming back to the survivors through the
//! shared port. How long until every lost stream is acknowledged again,
//! whether each got exactly one `Resynced` and none ended, the survivors'
//! peak accept rate and CPU, and whether a change triggered afterwards
//! reaches every stream. The anchor is the client's backoff bound.
//!
//! The example server is built beforehand: `cargo build --release --example
//! server --features redis`.

use std::time::Duration;

use harness::{Herd, HerdRun};

use crate::rows::Row;
use crate::settings::Settings;

/// Replicas sharing the port; one is killed.
const REPLICAS: usize = 3;

/// Live catalogs held beside the streams.
const CATALOGS: usize = 300;

/// `Relisten::default()`'s first delay and bound.
const BACKOFF_INITIAL: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(10);

/// The section's rows.
///
/// # Errors
///
/// `redis-server` or the example server is missing, or a wait ran past its
/// deadline.
pub(crate) fn rows(settings: &Settings) -> Result<Vec<Row>, String> {
    let streams = if settings.quick { 2_000 } else { 6_000 };
    let run = Herd {
        streams,
        replicas: REPLICAS,
        catalogs: CATALOGS,
    }
    .run()
    .map_err(|err| format!("herd ({streams} streams, {REPLICAS} replicas): {err}"))?;
    eprintln!(
        "herd: {} (on {} cores)",
        describe(&run),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    Ok(rows_of(&run))
}

fn describe(run: &HerdRun) -> String {
    format!(
        "held per replica (killed first) {:?}, lost {}, resynced once {}, twice {}, ended {}, \
         most attempts {}, first delays {:?}, events before the publish {}, reached after {}, \
         kill to Relistening p50/max {:.1}/{:.1} ms, Relistening to Resynced beyond the \
         announced delay p50/max {:.1}/{:.1} ms, catalogs lost {}, tools/list each made \
         coming back (least, most) {:?}",
        run.held,
        run.lost,
        run.resynced_once,
        run.resynced_twice,
        run.ended,
        run.most_attempts,
        run.first_delays,
        run.events_before_publish,
        run.received_after,
        harness::quantile_ms(&run.noticed, 0.5),
        harness::quantile_ms(&run.noticed, 1.0),
        harness::quantile_ms(&run.beyond_delay, 0.5),
        harness::quantile_ms(&run.beyond_delay, 1.0),
        run.catalogs_lost,
        run.tools_lists_per_relisten
            .first()
            .zip(run.tools_lists_per_relisten.last()),
    )
}

fn rows_of(run: &HerdRun) -> Vec<Row> {
    let n = run.streams;
    let backoff = format!(
        "Relisten::default() backoff {} ms .. {} s",
        BACKOFF_INITIAL.as_millis(),
        BACKOFF_MAX.as_secs()
    );
    let mut rows = Vec::new();
    let mut lost = Row::new(
        "herd_lost_streams",
        n,
        run.lost as f64,
        "streams the killed replica held (its sockets)",
        run.held[0] as f64,
        run.lost as f64 / run.held[0].max(1) as f64,
        1.0,
    );
    lost.target = "every stream of the killed replica re-listens".to_owned();
    lost.met = Some(run.lost > 0 && run.lost == run.held[0]);
    rows.push(lost);
    for (name, p) in [
        ("herd_reacknowledged_p50_ms", 0.5),
        ("herd_reacknowledged_p99_ms", 0.99),
        ("herd_reacknowledged_max_ms", 1.0),
    ] {
        let ms = run.reacknowledged_ms(p);
        let bound = BACKOFF_MAX.as_secs_f64() * 1e3;
        rows.push(Row::new(name, run.lost, ms, &backoff, bound, bound / ms, 0.0).reported());
    }
    let beyond = harness::quantile_ms(&run.beyond_delay, 1.0);
    rows.push(
        Row::new(
            "herd_beyond_backoff_max_ms",
            run.lost,
            beyond,
            "announced backoff delay, the longest (ms)",
            run.first_delays
                .map_or(f64::NAN, |(_, longest)| longest.as_secs_f64() * 1e3),
            0.0,
            0.0,
        )
        .reported(),
    );
    let mut resynced = Row::new(
        "herd_all_resynced",
        run.lost,
        f64::from(u8::from(run.all_resynced())),
        "lost streams with exactly one Resynced",
        run.resynced_once as f64,
        run.resynced_once as f64 / run.lost.max(1) as f64,
        1.0,
    );
    resynced.target = format!(
        "yes: each lost stream one Resynced, none ended (ended {}, two or more {})",
        run.ended, run.resynced_twice
    );
    resynced.met = Some(run.all_resynced());
    rows.push(resynced);
    let mut received = Row::new(
        "herd_all_received_after",
        n,
        run.received_after as f64,
        "streams held",
        n as f64,
        run.received_after as f64 / n as f64,
        1.0,
    );
    received.target = format!("all {n} reached by one change after the herd");
    received.met = Some(run.received_after == n);
    rows.push(received);
    let survivors = run.held.len() - 1;
    rows.push(
        Row::new(
            "herd_survivors_peak_accepts_per_s",
            survivors,
            run.peak_accepts_per_s,
            "lost streams",
            run.lost as f64,
            0.0,
            0.0,
        )
        .reported(),
    );
    rows.push(
        Row::new(
            "herd_survivor_peak_cpu_cores",
            survivors,
            run.peak_cpu,
            "the clients' process, its peak (cores)",
            run.client_peak_cpu,
            0.0,
            0.0,
        )
        .reported(),
    );
    let most = run.tools_lists_per_relisten.last().copied().unwrap_or(0);
    let total: u64 = run.tools_lists_per_relisten.iter().sum();
    let mut lists = Row::new(
        "herd_tools_lists_per_relisten",
        run.catalogs_lost,
        most as f64,
        "tools/list per re-listened catalog, on average",
        total as f64 / run.catalogs_lost.max(1) as f64,
        0.0,
        0.0,
    );
    lists.target = "<= 1 per re-listened catalog (the most any made)".to_owned();
    lists.met = Some(run.catalogs_lost > 0 && most <= 1);
    rows.push(lists);
    rows
}
