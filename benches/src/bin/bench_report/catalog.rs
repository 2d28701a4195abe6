//! The live catalog (issue 22): `tools/list` fetches for a storm of 1,000
//! changes in a second, ours against a refetch per notification and the
//! TypeScript client's own refetching (`@modelcontextprotocol/client`'s
//! `listChanged`, when node and the package are installed); how stale an
//! isolated change is when the host sees it, next to the TypeScript
//! client's 300 ms debounce; and the heap a catalog of 1,000 tools holds.

use std::time::Duration;

use harness::{Host, held_by_catalog, staleness, storm, typescript_client_available};

use crate::rows::Row;
use crate::settings::Settings;

/// The storm: this many changes, spread evenly over a second.
const CHANGES: usize = 1_000;
const OVER: Duration = Duration::from_secs(1);

/// The TypeScript client's debounce before it refetches a list.
const TYPESCRIPT_DEBOUNCE_MS: f64 = 300.0;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Result<Vec<Row>, String> {
    let mut rows = storm_rows()?;
    rows.extend(staleness_rows(settings)?);
    let held = held_by_catalog(1_000)?;
    let json = held.json as f64;
    rows.push(
        Row::new(
            "catalog_held_bytes",
            1_000,
            held.total,
            "its tools/list answer as JSON (bytes)",
            json,
            json / held.total,
            0.0,
        )
        .reported(),
    );
    rows.push(
        Row::new(
            "catalog_held_bytes_tools_alone",
            1_000,
            held.tools,
            "its tools/list answer as JSON (bytes)",
            json,
            json / held.tools,
            0.0,
        )
        .reported(),
    );
    Ok(rows)
}

fn storm_rows() -> Result<Vec<Row>, String> {
    let ours = storm(Host::Ours, CHANGES, OVER)?;
    let naive = storm(Host::PerNotification, CHANGES, OVER)?;
    eprintln!(
        "catalog storm: ours {} fetches (settled in {:?}), a refetch per notification {} ({:?})",
        ours.fetches, ours.settled, naive.fetches, naive.settled
    );
    let at_most = |mut row: Row, most: f64| {
        row.target = format!("<= {most} fetches");
        row.met = Some(row.ours <= most);
        row
    };
    let mut rows = vec![
        at_most(
            Row::new(
                "catalog_storm_fetches",
                CHANGES,
                ours.fetches as f64,
                "a refetch per notification",
                naive.fetches as f64,
                naive.fetches as f64 / ours.fetches as f64,
                0.0,
            ),
            2.0,
        ),
        // On loopback a refetch keeps up with 1,000 a second; against a
        // slower server the loop falls behind (reported, no target).
        Row::new(
            "catalog_storm_settled_ms",
            CHANGES,
            ours.settled.as_secs_f64() * 1e3,
            "a refetch per notification (ms to the final list)",
            naive.settled.as_secs_f64() * 1e3,
            naive.settled.as_secs_f64() / ours.settled.as_secs_f64(),
            0.0,
        )
        .reported(),
    ];
    if typescript_client_available() {
        let typescript = storm(Host::TypeScript, CHANGES, OVER)?;
        eprintln!(
            "catalog storm: the TypeScript client {} fetches ({:?})",
            typescript.fetches, typescript.settled
        );
        rows.push(at_most(
            Row::new(
                "catalog_storm_fetches_vs_typescript",
                CHANGES,
                ours.fetches as f64,
                "@modelcontextprotocol/client 2.4.0, listChanged",
                typescript.fetches as f64,
                typescript.fetches as f64 / ours.fetches as f64,
                0.0,
            ),
            2.0,
        ));
    } else {
        eprintln!(
            "the catalog section's TypeScript row is skipped: it needs node and \
             `.ci/interop-install`"
        );
    }
    Ok(rows)
}

fn staleness_rows(settings: &Settings) -> Result<Vec<Row>, String> {
    let changes = if settings.quick { 30 } else { 100 };
    let mut seen = staleness(changes, Duration::from_millis(150))?;
    seen.sort_unstable();
    let quantile = |q: f64| {
        let at = ((seen.len() - 1) as f64 * q).round() as usize;
        seen[at].as_secs_f64() * 1e3
    };
    Ok([("p50", 0.5, 100.0), ("p99", 0.99, 300.0)]
        .into_iter()
        .map(|(name, q, under)| {
            let ours = quantile(q);
            let mut row = Row::new(
                &format!("catalog_staleness_{name}_ms"),
                changes,
                ours,
                "the TypeScript client's debounce alone (ms, before its fetch)",
                TYPESCRIPT_DEBOUNCE_MS,
                TYPESCRIPT_DEBOUNCE_MS / ours,
                0.0,
            );
            row.target = format!("< {under} ms");
            row.met = Some(ours < under);
            row
        })
        .collect())
}
