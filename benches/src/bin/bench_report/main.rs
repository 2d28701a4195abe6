//! Every comparison of the performance work in one process, side by side
//! with its anchor in the same run: a markdown table on stdout, the same
//! rows as JSON, and a plot of fan-out throughput against listener count.
//! The scenarios are the harness's, the same the criterion benches time.
//!
//! ```sh
//! cargo bench-report [--quick] [--json FILE] [--plot FILE.svg] [--only SECTIONS]
//! # the alias for:
//! cargo run --release -p mcp-subscriptions-benches --bin bench_report -- [OPTIONS]
//! ```
//!
//! `--workers 2,4,8,16` sets the worker counts for the readers of the
//! scaling table (those are its default) and of the keep-up section (2 by
//! default). On a machine with many cores,
//! `bench_report --only scaling,keepup --workers 2,4,8,16` is the one
//! command that measures both.
//!
//! `--only latency,render` runs only those sections (`fanout`, `sparse`,
//! `latency`, `memory`, `render`, `http`, `held`, `client`, `scaling`, `keepup`,
//! `relay`, `cluster_spread`, `audiences`, `herd`, `catalog`, `gateway`). The held section runs
//! its servers and client shards as child processes (this binary again),
//! and needs `ulimit -n` above 19,064. The scaling table (1, 4 and 16
//! publisher threads) runs by default only on 8 cores or more; the relay
//! section (the crate's `relay` feature, on by default) only when
//! `redis-server` is on `PATH`, and `--only relay` fails without it; the
//! cluster_spread section (the same feature) only when `redis-cli` is there
//! too; the herd section (the same feature) only when `redis-server` is on
//! `PATH` and the example server is built next to this binary (`cargo build
//! --release --example server --features redis`); the gateway section only
//! when that example server is there (built with or without the feature).
//! `--help` lists the
//! options with their defaults.
//!
//! Each row's `ratio` is oriented so that higher is better for the hub, and
//! `met` says whether it reaches the target.

mod audiences;
mod catalog;
mod client;
#[cfg(feature = "relay")]
mod cluster_spread;
mod fanout;
mod gateway;
mod held;
#[cfg(feature = "relay")]
mod herd;
mod http;
mod keepup;
mod latency;
mod memory;
mod plot;
#[cfg(feature = "relay")]
mod relay;
mod render;
mod rounds;
mod rows;
mod scaling;
mod settings;
mod sparse;

use std::path::PathBuf;

use clap::{ArgAction, Parser, ValueEnum};
use settings::Settings;

/// Every comparison with its anchor, measured in the same run: a markdown
/// table on stdout, the same rows as JSON, and a plot of fan-out
/// throughput against listener count.
#[derive(Parser)]
// As before clap, an option given twice takes its last value.
#[command(name = "bench_report", version, args_override_self = true)]
struct Options {
    /// The short run: smaller sizes, fewer rounds, 300 ms per timed figure
    /// [default: the full run, 2 s per timed figure]
    #[arg(long)]
    quick: bool,
    /// Also write the rows to FILE as a JSON array [default: no JSON]
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also draw fan-out throughput against listener count to FILE.svg;
    /// needs the fanout section [default: no plot]
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Run only these sections, comma-separated, in the report's order
    /// [default: every section, scaling only on 8 cores or more, relay
    /// only with redis-server on PATH, cluster_spread only with
    /// redis-server and redis-cli, herd only with redis-server and the
    /// example server built]
    // `Set`, not the `Append` a list gets by default: a second `--only`
    // replaces the first, as before clap.
    #[arg(
        long,
        value_name = "SECTIONS",
        value_enum,
        value_delimiter = ',',
        action = ArgAction::Set
    )]
    only: Vec<Section>,
    /// The worker counts for the readers' runtime of the scaling table and
    /// the keep-up section, comma-separated; each is measured for the hub
    /// and `broadcast` in the same run [default: 2,4,8,16 for scaling, 2
    /// for keepup]
    #[arg(
        long,
        value_name = "N,...",
        value_delimiter = ',',
        action = ArgAction::Set
    )]
    workers: Vec<usize>,
}

/// The report's sections, in the order of their rows, named by the prefix
/// of their rows' scenarios. The scaling table's rows begin with `fanout`
/// too.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Section {
    Fanout,
    Sparse,
    Latency,
    Memory,
    Render,
    Http,
    Held,
    Client,
    Scaling,
    #[value(name = "keepup")]
    KeepUp,
    Relay,
    #[value(name = "cluster_spread")]
    ClusterSpread,
    Audiences,
    Herd,
    Catalog,
    Gateway,
}

/// Fewer cores than this, and the scaling table runs only when asked for:
/// publisher threads would just take turns. `--only`'s help names it.
const SCALING_CORES: usize = 8;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The held section's server and client shards are this binary again.
    harness::become_held_child();
    // Not an option of the report: the fan-out section has valgrind run
    // this binary so, to count instructions.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(fanout::BURSTS_COMMAND) {
        return Ok(fanout::run_bursts(&args[1..])?);
    }
    // And the keep-up section, for perf to count syscalls.
    if args.first().map(String::as_str) == Some(keepup::EVENTS_COMMAND) {
        return Ok(keepup::run_events(&args[1..])?);
    }
    // And the audience section, scoped publishes.
    if args.first().map(String::as_str) == Some(audiences::PUBLISHES_COMMAND) {
        return Ok(audiences::run_publishes(&args[1..])?);
    }
    let options = Options::parse();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wants = |section: Section| {
        if options.only.is_empty() {
            match section {
                Section::Scaling => cores >= SCALING_CORES,
                Section::Relay => relay_by_default(),
                Section::ClusterSpread => cluster_by_default(),
                Section::Herd => herd_by_default(),
                Section::Gateway => gateway_by_default(),
                _ => true,
            }
        } else {
            options.only.contains(&section)
        }
    };
    let settings = Settings::new(options.quick);
    let mut workers = options.workers.clone();
    workers.sort_unstable();
    workers.dedup();
    if workers.contains(&0) {
        return Err("--workers: a runtime needs at least one worker".into());
    }
    let workers_or = |default: &[usize]| {
        if workers.is_empty() {
            default.to_vec()
        } else {
            workers.clone()
        }
    };

    let (mut rows, mut curve) = (Vec::new(), Vec::new());
    for &section in Section::value_variants().iter().filter(|&&s| wants(s)) {
        rows.extend(match section {
            Section::Fanout => fanout::rows(&settings, &mut curve),
            Section::Sparse => sparse::rows(&settings),
            Section::Latency => latency::rows(&settings),
            Section::Memory => memory::rows(),
            Section::Render => render::rows(&settings),
            Section::Http => http::rows(&settings),
            Section::Held => held::rows(&settings)?,
            Section::Client => client::rows(&settings),
            Section::Scaling => scaling::rows(&settings, &workers_or(&scaling::DEFAULT_WORKERS)),
            Section::KeepUp => keepup::rows(&settings, &workers_or(&keepup::DEFAULT_WORKERS)),
            Section::Relay => relay_rows(&settings)?,
            Section::ClusterSpread => cluster_rows()?,
            Section::Audiences => audiences::rows(&settings),
            Section::Herd => herd_rows(&settings)?,
            Section::Catalog => catalog::rows(&settings)?,
            Section::Gateway => gateway::rows(&settings)?,
        });
    }

    print!("{}", rows::markdown(&rows));
    if let Some(path) = options.json {
        std::fs::write(&path, serde_json::to_string_pretty(&rows)?)?;
        println!("rows written to {}", path.display());
    }
    if let Some(path) = options.plot {
        if curve.is_empty() {
            return Err("--plot draws the fan-out curve: run the fanout section".into());
        }
        plot::plot(&path, &curve)?;
        println!("plot written to {}", path.display());
    }
    Ok(())
}

/// Whether the default run has the relay section: built in, and a
/// `redis-server` to run it against.
fn relay_by_default() -> bool {
    #[cfg(feature = "relay")]
    let wanted = harness::redis_on_path();
    #[cfg(not(feature = "relay"))]
    let wanted = false;
    if !wanted {
        eprintln!(
            "the relay section is skipped: it needs redis-server on PATH and the `relay` feature"
        );
    }
    wanted
}

/// Whether the default run has the cluster_spread section: built in, and
/// `redis-server` and `redis-cli` to run a cluster with.
fn cluster_by_default() -> bool {
    #[cfg(feature = "relay")]
    let wanted = harness::redis_cluster_on_path();
    #[cfg(not(feature = "relay"))]
    let wanted = false;
    if !wanted {
        eprintln!(
            "the cluster_spread section is skipped: it needs redis-server and redis-cli on PATH \
             and the `relay` feature"
        );
    }
    wanted
}

/// Whether the default run has the herd section: built in, a
/// `redis-server`, and the example server built next to this binary.
/// The gateway section's upstreams are example server processes.
fn gateway_by_default() -> bool {
    let wanted = harness::example_server().is_some();
    if !wanted {
        eprintln!(
            "the gateway section is skipped: it needs the example server next to this binary \
             (`cargo build --release --example server`)"
        );
    }
    wanted
}

fn herd_by_default() -> bool {
    #[cfg(feature = "relay")]
    let wanted = harness::redis_on_path()
        && std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.join("examples").join("server")))
            .is_some_and(|server| server.is_file());
    #[cfg(not(feature = "relay"))]
    let wanted = false;
    if !wanted {
        eprintln!(
            "the herd section is skipped: it needs redis-server on PATH, the `relay` feature and \
             the example server (`cargo build --release --example server --features redis`)"
        );
    }
    wanted
}

#[cfg(feature = "relay")]
fn herd_rows(settings: &Settings) -> Result<Vec<rows::Row>, String> {
    herd::rows(settings)
}

#[cfg(not(feature = "relay"))]
fn herd_rows(_: &Settings) -> Result<Vec<rows::Row>, String> {
    Err("bench_report was built without its `relay` feature (on by default)".to_owned())
}

#[cfg(feature = "relay")]
fn cluster_rows() -> Result<Vec<rows::Row>, String> {
    cluster_spread::rows()
}

#[cfg(not(feature = "relay"))]
fn cluster_rows() -> Result<Vec<rows::Row>, String> {
    Err("bench_report was built without its `relay` feature (on by default)".to_owned())
}

#[cfg(feature = "relay")]
fn relay_rows(settings: &Settings) -> Result<Vec<rows::Row>, String> {
    relay::rows(settings)
}

#[cfg(not(feature = "relay"))]
fn relay_rows(_: &Settings) -> Result<Vec<rows::Row>, String> {
    Err("bench_report was built without its `relay` feature (on by default)".to_owned())
}
