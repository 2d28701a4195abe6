//! Audiences (issue 21): a publish scoped to one tenant among 1,000 costs
//! no more than the same fan-out unscoped, in time (interleaved rounds) and
//! in instructions (callgrind), whether a tenant's listeners share a lane
//! or each has a queue of its own; and revocation, the time from
//! `Hub::revoke` until the last of a principal's 10,000 streams has read
//! its end, against completing the hub under the same streams.

use harness::{Ending, Revocation, Scenario, Scoped, Streams};

use crate::fanout::{callgrind_instructions, valgrind_on_path};
use crate::rounds::{Spread, interleaved};
use crate::rows::Row;
use crate::settings::Settings;

/// The first argument that makes `bench_report` run scoped publishes for
/// callgrind to count, instead of the report.
pub(crate) const PUBLISHES_COMMAND: &str = "audiences-publishes";

/// Tenants of [`Scoped::PER_TENANT`] listeners each on the scoped hub.
const TENANTS: usize = 1_000;

/// The streams a principal holds in the revocation rows.
const STREAMS: usize = 10_000;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    let mut rows = scoped_rows(settings);
    rows.extend(revocation_rows(settings));
    rows
}

/// A scoped publish against an unscoped one of the same fan-out, for
/// listeners alike (a lane per tenant) and for listeners each with a
/// principal of its own (a queue each).
fn scoped_rows(settings: &Settings) -> Vec<Row> {
    let Settings { quick, budget } = *settings;
    let rounds = if quick { 5 } else { 7 };
    let listeners = TENANTS * Scoped::PER_TENANT;
    let counting = valgrind_on_path("the audience instruction rows");
    let mut rows = Vec::new();
    for (streams, suffix, who) in [
        (Streams::Alike, "", "100 listeners"),
        (
            Streams::OwnPrincipal,
            "_own_queues",
            "100 listeners, each its own principal",
        ),
    ] {
        let (mut scoped, mut unscoped) = (Scoped::new(TENANTS, streams), Scoped::unscoped(streams));
        let ns = |scoped: &mut Scoped| scoped.per_iteration(budget).as_nanos() as f64;
        let [ours, anchor] =
            interleaved(rounds, [&mut || ns(&mut scoped), &mut || ns(&mut unscoped)]);
        drop((scoped, unscoped));
        rows.push(Row::cost_rounds(
            &format!("audiences_scoped_publish{suffix}"),
            listeners,
            &ours,
            &format!("unscoped, hub of {who} (ns per publish and drain)"),
            &anchor,
            0.8,
        ));
        if counting {
            let rounds = if quick { 1 } else { 3 };
            let [ours, anchor] = interleaved(
                rounds,
                [
                    &mut || instructions_per_delivery("scoped", streams),
                    &mut || instructions_per_delivery("unscoped", streams),
                ],
            );
            rows.push(Row::cost_rounds(
                &format!("audiences_scoped_instructions_per_delivery{suffix}"),
                listeners,
                &ours,
                &format!("unscoped, hub of {who} (callgrind)"),
                &anchor,
                0.8,
            ));
        }
    }
    rows
}

/// Instructions per delivery of a publish and its drain, `scoped` or
/// `unscoped`, as callgrind counts them: two runs of different lengths,
/// their difference over the deliveries between them, so that setting up
/// (100,000 listeners for the scoped hub) cancels out.
fn instructions_per_delivery(which: &str, streams: Streams) -> f64 {
    let (short, long) = (1_000, 3_000);
    let streams = match streams {
        Streams::Alike => "alike",
        Streams::OwnPrincipal => "own",
    };
    let count = |publishes: usize| {
        callgrind_instructions(&[PUBLISHES_COMMAND, which, streams, &publishes.to_string()])
    };
    (count(long) - count(short)) / ((long - short) * Scoped::PER_TENANT) as f64
}

/// Runs the publishes callgrind counts when `bench_report` was started as
/// `bench_report audiences-publishes scoped|unscoped alike|own PUBLISHES`.
pub(crate) fn run_publishes(args: &[String]) -> Result<(), String> {
    let usage =
        || format!("usage: bench_report {PUBLISHES_COMMAND} scoped|unscoped alike|own PUBLISHES");
    let [which, streams, publishes] = args else {
        return Err(usage());
    };
    let streams = match streams.as_str() {
        "alike" => Streams::Alike,
        "own" => Streams::OwnPrincipal,
        _ => return Err(usage()),
    };
    let mut scoped = match which.as_str() {
        "scoped" => Scoped::new(TENANTS, streams),
        "unscoped" => Scoped::unscoped(streams),
        _ => return Err(usage()),
    };
    let Ok(publishes) = publishes.parse() else {
        return Err(usage());
    };
    scoped.repeat(publishes);
    Ok(())
}

/// Revocation's p50 and p99 over rounds, each round one revocation of
/// every stream, alternating with a round of the anchor, the hub
/// completed under the same streams. Reported, with no target: over the
/// quick run's 20 rounds, p99 is the second slowest.
fn revocation_rows(settings: &Settings) -> Vec<Row> {
    let rounds = if settings.quick { 20 } else { 100 };
    let revocation = Revocation::new(STREAMS);
    let micros = |ending| revocation.round(ending).as_secs_f64() * 1e6;
    let [revoke, complete] = interleaved(
        rounds,
        [&mut || micros(Ending::Revoke), &mut || {
            micros(Ending::Complete)
        }],
    );
    [
        ("audiences_revoke_p50", 0.5),
        ("audiences_revoke_p99", 0.99),
    ]
    .into_iter()
    .map(|(scenario, p)| {
        let (ours, anchor) = (revoke.percentile(p), complete.percentile(p));
        let mut row = Row::new(
            scenario,
            STREAMS,
            ours,
            "hub.complete(), the same streams (µs to the last end read)",
            anchor,
            anchor / ours,
            1.0,
        )
        .reported();
        row.spread = Some(Spread::of(&revoke, &complete));
        row
    })
    .collect()
}
