//! The herd, small: three example server replicas sharing one port
//! (`--reuse-port`, joined by `--relay` through a real `redis-server`),
//! 3,000 listen streams of this crate's client and 30 live catalogs held
//! across them, one replica killed with `SIGKILL`. Every stream the killed
//! replica held listens again through the shared port and is resynced
//! exactly once, none ends, each lost catalog fetches its tools list
//! exactly once more, and one change afterwards reaches every stream.
//!
//! The bench report's herd section is the same run at scale, with
//! timings (`cargo bench-report --only herd`).

#![cfg(all(feature = "redis", feature = "client"))]

use std::time::Duration;

use crate::support::example::{HttpServer, call};
use mcp_subscriptions::Filter;
use mcp_subscriptions_client::catalog::{Catalog, CatalogKind, CatalogOptions, ListenState};
use mcp_subscriptions_client::{Item, Relisten, SubscribeOptions, Subscription};
use serde_json::json;
use tokio::sync::mpsc;

const REPLICAS: usize = 3;
const STREAMS: usize = 3_000;
const CATALOGS: usize = 30;
const WAIT: Duration = Duration::from_secs(60);

/// What one stream's reader saw after the kill.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    relistened: bool,
    resynced: u32,
    ended: bool,
    changes: u32,
}

/// Fails loudly when this process may not hold the streams.
fn enough_open_files() {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<usize>().ok());
    if let Some(soft) = soft {
        assert!(
            soft > 2 * STREAMS,
            "the herd test holds {STREAMS} streams and needs `ulimit -n` above {}, not {soft}",
            2 * STREAMS
        );
    }
}

/// Waits until `holds`, polling, or fails naming `what`.
async fn until(what: &str, mut holds: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !holds() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_under_held_streams_loses_none_of_them() {
    enough_open_files();
    let broker = crate::broker::Broker::redis();
    let url = broker.url();
    let max = (STREAMS + 1_000).to_string();
    let args = ["--reuse-port", "--relay", &url, "--max-subscriptions", &max];
    // Quiet: each would log every stream it opens.
    let first = HttpServer::start_quiet_on("127.0.0.1:0", &args).await;
    let mut replicas = vec![first];
    for _ in 1..REPLICAS {
        let addr = replicas[0].addr();
        replicas.push(HttpServer::start_quiet_on(&addr, &args).await);
    }
    // Ready once a run of answers, from whichever replica, all say its
    // relay hears the others.
    let mut ready_in_a_row = 0;
    let deadline = tokio::time::Instant::now() + WAIT;
    while ready_in_a_row < 8 * REPLICAS {
        let relay = replicas[0].stats().await["relay"].clone();
        let ready = relay["connected"] == true && relay["replicas"] == (REPLICAS as u64 - 1);
        ready_in_a_row = if ready { ready_in_a_row + 1 } else { 0 };
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready: {relay}"
        );
    }

    // The streams, each read by a task that reports what it saw.
    let mcp = replicas[0].mcp_url();
    let (tell, mut told) = mpsc::unbounded_channel::<(usize, Item)>();
    let tools = Filter::new().with_tools_list_changed();
    let options = SubscribeOptions::default().with_relisten(Relisten::default());
    let opening = std::sync::Arc::new(tokio::sync::Semaphore::new(64));
    let mut opened = Vec::with_capacity(STREAMS);
    for stream in 0..STREAMS {
        let (mcp, tools, options, tell) =
            (mcp.clone(), tools.clone(), options.clone(), tell.clone());
        let opening = std::sync::Arc::clone(&opening);
        opened.push(tokio::spawn(async move {
            let permit = opening.acquire_owned().await;
            let mut subscription = Subscription::http(mcp, &tools, options).await.unwrap();
            drop(permit);
            tokio::spawn(async move {
                while let Some(item) = subscription.next().await {
                    let _ = tell.send((stream, item));
                }
            });
        }));
    }
    for task in opened {
        tokio::time::timeout(WAIT, task)
            .await
            .expect("every stream opens")
            .unwrap();
    }
    let mut catalogs = Vec::with_capacity(CATALOGS);
    for _ in 0..CATALOGS {
        catalogs.push(
            Catalog::http(mcp.clone(), CatalogOptions::default())
                .await
                .unwrap(),
        );
    }

    let mut seen = vec![Seen::default(); STREAMS];
    let record = |item: (usize, Item), seen: &mut Vec<Seen>| {
        let entry = &mut seen[item.0];
        match item.1 {
            Item::Relistening(_) => entry.relistened = true,
            Item::Resynced(_) => entry.resynced += 1,
            Item::End(_) => entry.ended = true,
            Item::Event(_) => entry.changes += 1,
            _ => {}
        }
    };
    let mut killed = replicas.remove(0);
    killed.child.kill().await.unwrap();
    until("every lost stream and catalog listening again", || {
        while let Ok(item) = told.try_recv() {
            record(item, &mut seen);
        }
        let lost = seen.iter().filter(|s| s.relistened).count();
        lost > 0
            && seen
                .iter()
                .filter(|s| s.relistened && s.resynced == 0)
                .count()
                == 0
            && catalogs
                .iter()
                .all(|catalog| catalog.health().listen == ListenState::Listening)
    })
    .await;
    // Long enough for a second re-listen, or a catalog's refetch, to show.
    tokio::time::sleep(Duration::from_secs(1)).await;
    while let Ok(item) = told.try_recv() {
        record(item, &mut seen);
    }
    let lost = seen.iter().filter(|s| s.relistened).count();
    assert!(
        lost > 0 && lost < STREAMS,
        "{lost} of {STREAMS} streams were on the killed replica"
    );
    assert!(seen.iter().all(|s| !s.ended), "no stream ended");
    assert!(
        seen.iter().all(|s| s.resynced == u32::from(s.relistened)),
        "each lost stream resynced exactly once, the others not at all"
    );
    let lost_catalogs: Vec<u64> = catalogs
        .iter()
        .map(Catalog::health)
        .filter(|health| health.discovery.fetches > 1)
        .map(|health| health.list(CatalogKind::Tools).unwrap().fetches)
        .collect();
    assert!(
        !lost_catalogs.is_empty(),
        "some catalog was on the killed replica"
    );
    assert!(
        lost_catalogs.iter().all(|&fetches| fetches == 2),
        "one tools/list each coming back: {lost_catalogs:?}"
    );

    // One change, from whichever survivor answers, reaches every stream.
    let client = replicas[0].client().await;
    call(&client, "test_trigger_tool_change", json!({})).await;
    until("the change reaching every stream", || {
        while let Ok(item) = told.try_recv() {
            record(item, &mut seen);
        }
        seen.iter().all(|s| s.changes >= 1)
    })
    .await;
}
