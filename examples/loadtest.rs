//! A load generator: N listeners (tasks on a tokio runtime), one publisher
//! thread, M events, a live progress bar, and a summary table.
//!
//! ```sh
//! cargo run --release --example loadtest -- --listeners 1000 --events 10000
//! cargo run --release --example loadtest -- --help
//! ```
//!
//! Every listener subscribes to all K keys, so each event reaches every
//! listener. Without `--coalesce` the events are extension events that carry
//! their sequence number, and latency is exact: publish to receipt. With
//! `--coalesce` they are resource updates of K URIs, which coalescing queues
//! absorb; what is reported then is each signal's age when received: the
//! time since that URI was last published.

#[path = "support/cli.rs"]
mod cli;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use mcp_subscriptions::{
    Capabilities, Event, EventKind, Extension, Filter, Hub, Next, Overflow, Selector,
};
use serde_json::json;

/// A load generator: listeners on a tokio runtime, one publisher thread, a
/// live progress bar and a summary table.
#[derive(Parser)]
#[command(version)]
struct Options {
    /// Listeners, each a task reading every key
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    listeners: usize,
    /// Events to publish
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    events: u64,
    /// What a full queue does with one more event
    #[arg(
        long,
        value_name = "POLICY",
        default_value_t = Overflow::DropOldest,
        value_parser = cli::overflow_parser()
    )]
    policy: Overflow,
    /// Events each listener may queue
    #[arg(
        long,
        value_name = "N",
        default_value_t = mcp_subscriptions::hub::DEFAULT_CAPACITY,
        value_parser = cli::at_least_one
    )]
    capacity: usize,
    /// Publish resource updates that coalescing queues absorb, and report
    /// each signal's age instead of exact latency
    #[arg(long)]
    coalesce: bool,
    /// Distinct keys (extension values, or URIs with --coalesce)
    #[arg(long, value_name = "K", default_value_t = 16, value_parser = cli::at_least_one)]
    keys: usize,
    /// Events per second to publish at (0: as fast as possible)
    #[arg(long, value_name = "EVENTS_PER_SEC", default_value_t = 0)]
    rate: u64,
    /// Worker threads of the listeners' runtime
    #[arg(long, value_name = "W", default_value_t = 2, value_parser = cli::at_least_one)]
    workers: usize,
}

/// What one listener saw.
#[derive(Default)]
struct Seen {
    delivered: u64,
    lag: u64,
    disconnected: bool,
    /// Latencies in microseconds (every event, or a sample under heavy load).
    latencies: Vec<u32>,
}

/// Nanoseconds since the run began, per published sequence number (exact
/// mode) or per key (coalescing mode: the latest publish).
struct Clock {
    start: Instant,
    stamps: Vec<AtomicU64>,
}

impl Clock {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn stamp(&self, slot: usize) {
        self.stamps[slot].store(self.now(), Ordering::Release);
    }

    fn micros_since(&self, slot: usize) -> u32 {
        let then = self.stamps[slot].load(Ordering::Acquire);
        (self.now().saturating_sub(then) / 1_000) as u32
    }
}

fn key_name(key: usize) -> String {
    format!("loadtest://{key}")
}

fn main() {
    let options = Options::parse();
    let hub = Hub::builder()
        .capacity(options.capacity)
        .overflow(options.policy)
        .coalesce(options.coalesce)
        .max_listeners(options.listeners)
        .capabilities(
            Capabilities::default()
                .with_extension(Extension::new("loadtest/k").with_field("k", |_| Ok(()))),
        )
        .build();
    let filter = if options.coalesce {
        (0..options.keys).fold(Filter::new(), |f, k| f.with_resource(key_name(k)))
    } else {
        let keys: Vec<String> = (0..options.keys).map(|k| k.to_string()).collect();
        Filter::new().with_extension("k", json!(keys))
    };
    let slots = if options.coalesce {
        options.keys
    } else {
        options.events as usize
    };
    let clock = Arc::new(Clock {
        start: Instant::now(),
        stamps: (0..slots).map(|_| AtomicU64::new(0)).collect(),
    });
    let deliveries = options.events * options.listeners as u64;
    // Keep about a million latency samples in all.
    let sample_every = (deliveries / 1_000_000).max(1);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.workers)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let coalesce = options.coalesce;
    let readers: Vec<_> = (0..options.listeners)
        .map(|_| {
            let mut listener = hub.listen(&filter).expect("within the listener limit");
            let clock = clock.clone();
            runtime.spawn(async move {
                let mut seen = Seen::default();
                loop {
                    match listener.next().await {
                        Next::Event(event) => {
                            seen.delivered += 1;
                            if seen.delivered % sample_every == 0 {
                                let slot = match event.kind() {
                                    EventKind::ResourceUpdated { uri } if coalesce => {
                                        uri.trim_start_matches("loadtest://").parse().unwrap_or(0)
                                    }
                                    _ => event
                                        .method()
                                        .trim_start_matches("loadtest/")
                                        .parse()
                                        .unwrap_or(0),
                                };
                                seen.latencies.push(clock.micros_since(slot));
                            }
                        }
                        Next::Lagged(n) => seen.lag += n,
                        Next::Failed(_) => {
                            seen.disconnected = true;
                            break;
                        }
                        _ => break,
                    }
                }
                seen
            })
        })
        .collect();

    let bar = ProgressBar::new(options.events);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} published {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let publisher = {
        let (hub, clock, bar) = (hub.clone(), clock.clone(), bar.clone());
        let (events, keys, rate) = (options.events, options.keys, options.rate);
        std::thread::spawn(move || {
            for seq in 0..events {
                let key = seq as usize % keys;
                if coalesce {
                    hub.publish(Event::resource_updated(key_name(key)));
                    // After the publish: a copy read before this line is
                    // measured against an earlier publish, so the age it
                    // reports is never too small.
                    clock.stamp(key);
                } else {
                    // Before the publish: a reader may have it at once.
                    clock.stamp(seq as usize);
                    hub.publish(Event::extension(
                        format!("loadtest/{seq}"),
                        Default::default(),
                        Some(Selector::new("k", Some(key.to_string()))),
                    ));
                }
                if seq % 256 == 0 {
                    bar.set_position(seq);
                }
                // Paced, when asked: each event at its slot in time.
                if let Some(offset) = (seq * 1_000_000_000).checked_div(rate) {
                    let due = started + Duration::from_nanos(offset);
                    std::thread::sleep(due.saturating_duration_since(Instant::now()));
                }
            }
        })
    };
    while !publisher.is_finished() {
        let stats = hub.stats();
        bar.set_message(format!(
            "| delivered {} dropped {} coalesced {} queued {}",
            stats.events.delivered,
            stats.events.dropped,
            stats.events.coalesced,
            stats.events.queued
        ));
        std::thread::sleep(Duration::from_millis(100));
    }
    publisher.join().expect("the publisher finishes");
    let published_in = started.elapsed();
    hub.complete();
    let seen: Vec<Seen> = runtime.block_on(async {
        let mut seen = Vec::with_capacity(readers.len());
        for reader in readers {
            seen.push(reader.await.expect("a reader finishes"));
        }
        seen
    });
    let drained_in = started.elapsed();
    bar.finish_with_message("| done");

    let stats = hub.stats();
    let mut latencies: Vec<u32> = seen
        .iter()
        .flat_map(|s| s.latencies.iter().copied())
        .collect();
    latencies.sort_unstable();
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p) as usize)
            .map_or("-".to_owned(), |us| format!("{us} µs"))
    };
    let delivered: u64 = seen.iter().map(|s| s.delivered).sum();
    // A coalesced signal has no single publish to measure from: what is
    // reported is its age, the time since its latest publish.
    let labels = if coalesce {
        ["signal age p50", "signal age p99", "signal age max"]
    } else {
        ["latency p50", "latency p99", "latency max"]
    };
    let rows = [
        ("listeners", options.listeners.to_string()),
        ("events published", stats.events_published.to_string()),
        ("deliveries expected", deliveries.to_string()),
        ("delivered", delivered.to_string()),
        ("dropped", stats.events.dropped.to_string()),
        ("coalesced", stats.events.coalesced.to_string()),
        (
            "lag reported",
            seen.iter().map(|s| s.lag).sum::<u64>().to_string(),
        ),
        (
            "listeners disconnected",
            seen.iter().filter(|s| s.disconnected).count().to_string(),
        ),
        (labels[0], percentile(0.50)),
        (labels[1], percentile(0.99)),
        (labels[2], percentile(1.0)),
        (
            "events/s published",
            format!("{:.0}", options.events as f64 / published_in.as_secs_f64()),
        ),
        (
            "deliveries/s",
            format!("{:.0}", delivered as f64 / drained_in.as_secs_f64()),
        ),
        (
            "accounting balanced",
            stats.events.is_balanced().to_string(),
        ),
    ];
    println!();
    println!("| figure | value |");
    println!("| --- | --- |");
    for (name, value) in rows {
        println!("| {name} | {value} |");
    }
}
