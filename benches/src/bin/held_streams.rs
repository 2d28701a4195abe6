//! Holds N idle listen streams open against one server process, the
//! crate's endpoint and rmcp's pattern in turn, and says what each stream
//! costs the server and how long one tools-list change takes to reach the
//! last of them.
//!
//! ```sh
//! cargo run --release -p mcp-subscriptions-benches --bin held_streams -- --streams 19000
//! # 100,000 streams over 6 replicas sharing one port, joined by a relay
//! # (a redis-server the run starts); rmcp's pattern at 19,000 beside it
//! cargo run --release -p mcp-subscriptions-benches --bin held_streams -- \
//!     --streams 100000 --replicas 6
//! # the herd: then the first replica killed, its clients (the crate's,
//! # re-listening with its default backoff) back through the shared port
//! cargo run --release -p mcp-subscriptions-benches --bin held_streams -- \
//!     --streams 100000 --replicas 6 --servers endpoint --kill-one
//! cargo run --release -p mcp-subscriptions-benches --bin held_streams -- --help
//! # where the server's heap goes, 2,000 streams (valgrind writes dhat.out.PID)
//! cargo run --release -p mcp-subscriptions-benches --bin held_streams -- \
//!     --streams 2000 --servers endpoint --server-under "valgrind --tool=dhat"
//! ```
//!
//! The server is this program again, in a process of its own, so that its
//! resident memory (`VmRSS`, read before and after the streams open) is
//! its own; the clients are shards of at most 5,000 streams, each a process
//! connecting from its own loopback address. The server needs one open
//! file per stream: `ulimit -n` must allow the streams and a few more.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use harness::{Held, HeldStreams, Server};
use indicatif::{ProgressBar, ProgressStyle};

/// Holds idle listen streams against one server process: acknowledged
/// streams, server memory per stream, and fan-out time to the last one.
#[derive(Parser)]
#[command(name = "held_streams", version)]
struct Options {
    /// Listen streams to hold
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    streams: usize,
    /// Where the server listens (port 0: a free one); clients connect from
    /// 127.0.0.2 on. Or unix:PATH, a Unix domain socket (--servers endpoint)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    addr: String,
    /// Which servers to run, one after the other
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "endpoint,rmcp"
    )]
    servers: Vec<Serving>,
    /// Server processes sharing one port (`SO_REUSEPORT`), joined through
    /// a relay on a `redis-server` the run starts (it must be on PATH).
    /// Only the crate's endpoint joins replicas: the other servers run as
    /// one process, holding at most the streams one process can
    #[arg(long, value_name = "N", default_value_t = 1)]
    replicas: usize,
    /// Once the change reached every stream, kill the first replica
    /// (SIGKILL) and time its clients coming back to the others (the
    /// crate's client, `Relisten::default()`); needs --replicas 2 or more
    #[arg(long)]
    kill_one: bool,
    /// Run the server under this command, split at spaces (a profiler:
    /// "valgrind --tool=dhat"); its memory figures are then the command's
    #[arg(long, value_name = "COMMAND")]
    server_under: Option<String>,
}

/// A server to hold the streams against.
#[derive(Clone, Copy, ValueEnum)]
enum Serving {
    /// The crate's endpoint in front of rmcp's service
    Endpoint,
    /// The anchor: rmcp's own listen, each sink kept in a list
    Rmcp,
    /// The crate's endpoint, the streams older revisions' sessions
    /// (2025-11-25: initialize, then the session's GET stream)
    Sessions,
}

impl Serving {
    fn server(self) -> Server {
        match self {
            Serving::Endpoint => Server::Endpoint,
            Serving::Rmcp => Server::RmcpPattern,
            Serving::Sessions => Server::Sessions,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Serving::Endpoint => "mcp-subscriptions endpoint",
            Serving::Rmcp => "rmcp pattern",
            Serving::Sessions => "older sessions (2025-11-25)",
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    harness::become_held_child();
    let options = Options::parse();
    let style = ProgressStyle::with_template(
        "{prefix:>26} [{elapsed_precise}] {wide_bar} {pos}/{len} acknowledged or failed",
    )?;
    let broker = (options.replicas > 1).then(broker).transpose()?;
    let mut runs = Vec::new();
    for serving in options.servers {
        // Only the endpoint joins replicas; the others hold what one
        // process can.
        let (streams, group) = match (&broker, serving) {
            (Some(url), Serving::Endpoint) => (options.streams, Some(url)),
            (Some(_), _) => (options.streams.min(ONE_PROCESS), None),
            (None, _) => (options.streams, None),
        };
        let progress = ProgressBar::new(streams as u64)
            .with_style(style.clone())
            .with_prefix(serving.name());
        let under = options.server_under.as_deref().unwrap_or_default();
        let mut run = HeldStreams::new(serving.server(), streams)
            .with_addr(&options.addr)
            .with_server_under(under.split_whitespace().map(str::to_owned).collect());
        if let Some(url) = group {
            run = run.with_replicas(options.replicas, &url.url);
            if options.kill_one {
                run = run.with_herd();
            }
        }
        runs.push((serving, run.run(&progress)?));
    }
    print!("{}", summary(&runs));
    Ok(())
}

/// The most streams one server process holds under the per-process limit
/// of 20,000 open files.
const ONE_PROCESS: usize = 19_000;

/// The broker a group of replicas joins through, running for the run.
struct Group {
    url: String,
    #[cfg(feature = "relay")]
    _redis: harness::RedisServer,
}

#[cfg(feature = "relay")]
fn broker() -> Result<Group, Box<dyn std::error::Error>> {
    let redis = harness::RedisServer::start()?;
    Ok(Group {
        url: redis.url(),
        _redis: redis,
    })
}

#[cfg(not(feature = "relay"))]
fn broker() -> Result<Group, Box<dyn std::error::Error>> {
    Err("replicas join through the relay: build with the `relay` feature".into())
}

/// The runs as a markdown table.
fn summary(runs: &[(Serving, Held)]) -> String {
    let mut table = String::from(
        "| server | processes | streams | acknowledged | failed | lost | RSS before | RSS after | per stream | fan-out to last |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (serving, held) in runs {
        table += &format!(
            "| {} | {} | {} | {} | {} | {} | {:.1} MiB | {:.1} MiB | {:.0} B ({:.1} KiB) | {} |\n",
            serving.name(),
            held.servers,
            held.streams,
            held.acknowledged,
            held.failed,
            held.lost,
            mib(held.resident_before),
            mib(held.resident_after),
            held.resident_per_stream(),
            held.resident_per_stream() / 1024.0,
            held.fanout.map_or("over a minute".to_owned(), millis),
        );
        if let Some(failure) = &held.first_failure {
            table += &format!("\nfirst failure ({}): {failure}\n", serving.name());
        }
        if let Some(herd) = &held.herd {
            table += &format!(
                "\nthe herd ({}, the first replica killed): {} streams lost, {} acknowledged \
                 again (resynced), {} stale, {} ended; half back in {}, all back in {}; at \
                 their peaks, the survivors accepted {:.0} connections a second together, the \
                 busiest used {:.2} cores, the client shards {:.2} together\n",
                serving.name(),
                herd.lost,
                herd.resynced,
                herd.lost.saturating_sub(herd.resynced),
                herd.ended,
                herd.half_recovered.map_or("-".to_owned(), millis),
                herd.recovered
                    .map_or("not within two minutes".to_owned(), millis),
                herd.peak_accepts_per_s,
                herd.peak_server_cpu,
                herd.peak_clients_cpu,
            );
        }
    }
    table
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn millis(elapsed: Duration) -> String {
    format!("{:.1} ms", elapsed.as_secs_f64() * 1e3)
}
