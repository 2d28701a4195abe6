//! A soak: listeners opened and ended every way there is, for as long as
//! asked, with publishers running throughout, then a check that nothing
//! leaked.
//!
//! ```sh
//! cargo run --release --example soak -- --duration 600
//! ```
//!
//! In process, each cycle opens a listen stream and ends it one of four
//! ways, in turn: closed after reading (cancel), cancelled before reading,
//! its task aborted while it waits, or dropped. Over HTTP (an in-process
//! Streamable HTTP endpoint on loopback), each cycle opens a listen
//! stream, reads its acknowledgement and closes the response. It runs
//! until both cycle counts are reached and the duration has passed, then
//! prints a summary: active listeners (must be 0), the accounting identity
//! (must hold), and resident memory now against just after warm-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use mcp_subscriptions::http::HttpTransport;
use mcp_subscriptions::{CloseReason, Filter, Hub, ListenService, Next};
use rmcp::model::RequestId;
use serde_json::json;

/// Open and end listen streams every way there is, with publishers running,
/// and check that nothing leaked.
#[derive(Parser)]
#[command(version)]
struct Options {
    /// Run at least this many seconds
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    duration: u64,
    /// In-process open/end cycles, at least
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    cycles: u64,
    /// Open/end cycles over HTTP, at least
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    http_cycles: u64,
    /// Publisher threads running throughout
    #[arg(long, value_name = "N", default_value_t = 2)]
    publishers: usize,
    /// Cycles in flight at once
    #[arg(long, value_name = "N", default_value_t = 64)]
    concurrency: usize,
}

/// Resident memory of this process, in bytes.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|pages| pages.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// One in-process cycle, ending the stream the `n`th way.
async fn cycle(hub: &Hub, service: &ListenService<Hub>, n: u64) {
    let filter = Filter::new()
        .with_tools_list_changed()
        .with_resource(format!("file:///{}", n % 100));
    match n % 4 {
        // Read one item (or give up waiting), then close as cancelled.
        0 => {
            let mut listener = hub.listen(&filter).unwrap();
            let _ = tokio::time::timeout(Duration::from_millis(1), listener.next()).await;
            listener.close(CloseReason::Cancelled);
        }
        // A served stream: its acknowledgement, then the client cancels.
        1 => {
            let params = json!({"notifications": {"toolsListChanged": true}});
            let mut stream = service
                .open(RequestId::Number(n as i64), Some(&params))
                .unwrap();
            let _ = stream.next_message().await;
            stream.cancel(CloseReason::Cancelled);
        }
        // The task waiting on it is aborted.
        2 => {
            let mut listener = hub.listen(&filter).unwrap();
            let waiting = tokio::spawn(async move {
                loop {
                    if let Next::Complete | Next::Closed = listener.next().await {
                        return;
                    }
                }
            });
            tokio::task::yield_now().await;
            waiting.abort();
            let _ = waiting.await;
        }
        // Dropped, without a word.
        _ => drop(hub.listen(&filter).unwrap()),
    }
}

/// One HTTP cycle: a listen stream opened, acknowledged, and its response
/// closed.
async fn http_cycle(client: &reqwest::Client, url: &str, n: u64) {
    let body = json!({"jsonrpc": "2.0", "id": n, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}}});
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send()
        .await;
    if let Ok(mut response) = response {
        let _ = response.chunk().await;
    }
}

fn main() {
    let options = Options::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let hub = Hub::builder().max_listeners(1_000_000).build();
    let service = ListenService::new(hub.clone());

    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(AtomicU64::new(0));
    let publishers: Vec<_> = (0..options.publishers)
        .map(|p| {
            let (hub, stop, published) = (hub.clone(), stop.clone(), published.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    match i % 3 {
                        0 => hub.notify_tools_list_changed(),
                        _ => {
                            hub.notify_resource_updated(format!("file:///{}", (i + p as u64) % 100))
                        }
                    };
                    published.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                    if i.is_multiple_of(64) {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();

    let url = runtime.block_on(async {
        let http = HttpTransport::new(service.clone(), axum::Router::new());
        let app = axum::Router::new().route("/mcp", http.into_method_router());
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", tcp.local_addr().unwrap());
        tokio::spawn(mcp_subscriptions::http::serve(
            tcp,
            app,
            std::future::pending(),
        ));
        url
    });

    let bar = ProgressBar::new(options.cycles + options.http_cycles);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} cycles {msg}")
            .expect("a valid template"),
    );
    let started = Instant::now();
    let duration = Duration::from_secs(options.duration);
    // Warm-up: the first twentieth of the cycles or the first tenth of the
    // duration, whichever ends later, so that caches (the allocator's, the
    // HTTP connections') have grown to their working size.
    let warm_up = (options.cycles / 20).max(1);
    let warm_up_time = duration / 10;
    let (mut done, mut http_done) = (0u64, 0u64);
    let mut rss_after_warm_up = None;
    let client = reqwest::Client::new();
    while done < options.cycles || http_done < options.http_cycles || started.elapsed() < duration {
        runtime.block_on(async {
            let batch: Vec<_> = (0..options.concurrency as u64)
                .map(|k| {
                    let (hub, service) = (hub.clone(), service.clone());
                    let n = done + k;
                    tokio::spawn(async move { cycle(&hub, &service, n).await })
                })
                .collect();
            for task in batch {
                let _ = task.await;
            }
            // One HTTP cycle for every fifty in process, as the counts ask.
            if http_done * 50 < done || done >= options.cycles {
                let batch: Vec<_> = (0..options.concurrency.min(16) as u64)
                    .map(|k| {
                        let (client, url) = (client.clone(), url.clone());
                        let n = http_done + k;
                        tokio::spawn(async move { http_cycle(&client, &url, n).await })
                    })
                    .collect();
                for task in batch {
                    let _ = task.await;
                }
                http_done += options.concurrency.min(16) as u64;
            }
        });
        done += options.concurrency as u64;
        if rss_after_warm_up.is_none() && done >= warm_up && started.elapsed() >= warm_up_time {
            rss_after_warm_up = Some(resident_bytes());
        }
        bar.set_position((done + http_done).min(bar.length().unwrap_or(u64::MAX)));
        bar.set_message(format!(
            "| http {http_done} | active {} | published {}",
            hub.stats().listeners_active,
            published.load(Ordering::Relaxed)
        ));
    }
    stop.store(true, Ordering::Relaxed);
    for publisher in publishers {
        publisher.join().expect("a publisher thread");
    }
    // HTTP streams end when their connections do; give them a moment.
    runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        while hub.stats().listeners_active > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    bar.finish();

    let stats = hub.stats();
    let rss_end = resident_bytes();
    let rss_warm = rss_after_warm_up.unwrap_or(rss_end);
    let growth = (rss_end as f64 - rss_warm as f64) / rss_warm as f64 * 100.0;
    let closed = stats.listeners_closed;
    println!();
    println!("| figure | value |");
    println!("| --- | --- |");
    println!("| elapsed | {:.1} s |", started.elapsed().as_secs_f64());
    println!("| in-process cycles | {done} |");
    println!("| HTTP cycles | {http_done} |");
    println!("| events published | {} |", stats.events_published);
    println!("| listeners opened | {} |", stats.listeners_opened);
    println!(
        "| closed: cancelled / disconnected / complete / error / overflow | {} / {} / {} / {} / {} |",
        closed.cancelled, closed.disconnected, closed.complete, closed.error, closed.overflow
    );
    println!(
        "| listeners active at the end | {} |",
        stats.listeners_active
    );
    println!(
        "| accounting identity | {} (matched {} = delivered {} + dropped {} + coalesced {} + queued {} + discarded {}) |",
        if stats.events.is_balanced() {
            "holds"
        } else {
            "BROKEN"
        },
        stats.events.matched,
        stats.events.delivered,
        stats.events.dropped,
        stats.events.coalesced,
        stats.events.queued,
        stats.events.discarded
    );
    println!(
        "| resident memory after warm-up / at the end | {:.1} MiB / {:.1} MiB ({growth:+.1} %) |",
        rss_warm as f64 / 1048576.0,
        rss_end as f64 / 1048576.0
    );
    if stats.listeners_active != 0 || !stats.events.is_balanced() {
        eprintln!("error: something leaked");
        std::process::exit(1);
    }
}
