//! The cross-replica relay: two replicas through a `redis-server` started
//! for the section, 10,000 watched URIs spread over them. Cross-replica
//! latency against local delivery of the same events, relayed events per
//! second and broker messages per event against one channel that every
//! replica receives everything on.

use harness::{RedisServer, Replicas, one_channel};

use crate::rows::Row;
use crate::settings::Settings;

/// Watched URIs, half on each replica.
const URIS: usize = 10_000;

/// `PUBLISH`es a round trip for the pipelined anchor: as many as the relay
/// sends in one.
const PIPELINE: usize = 64;

/// The section's rows.
///
/// # Errors
///
/// `redis-server` is missing or does not start.
pub(crate) fn rows(settings: &Settings) -> Result<Vec<Row>, String> {
    let (latency_events, rounds) = if settings.quick {
        (300, 3)
    } else {
        (3_000, 20)
    };
    let redis = RedisServer::start()?;
    let mut replicas = Replicas::new(&redis.url(), URIS);

    let (mut local, mut remote) = replicas.latency(latency_events);
    local.sort_unstable();
    remote.sort_unstable();
    let mut rows = Vec::new();
    for (name, p) in [("relay_latency_p50", 0.5), ("relay_latency_p99", 0.99)] {
        let (ours, anchor) = (micros_at(&remote, p), micros_at(&local, p));
        rows.push(
            Row::new(
                name,
                URIS,
                ours,
                "local delivery, same events (µs)",
                anchor,
                anchor.max(1.0) / ours.max(1.0),
                0.0,
            )
            .reported(),
        );
    }

    let relayed = replicas.throughput(rounds);
    let messages = replicas.broker_messages_per_event();
    drop(replicas);
    // The anchor's messages: what the relay carries for one of B's URIs,
    // its envelope's size.
    let payload = format!(
        r#"{{"v":1,"origin":"{:016x}","seq":0,"type":"event","notification":{{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{{"uri":"file:///replica/00001"}}}}}}"#,
        u64::MAX
    );
    let events = rounds * URIS / 2;
    let (one_rate, one_messages) = one_channel(&redis.url(), 2, events, payload.as_bytes(), 1);
    let (pipelined_rate, _) = one_channel(&redis.url(), 2, events, payload.as_bytes(), PIPELINE);
    for (name, anchor, rate) in [
        (
            "relay_events_per_s",
            "one channel, raw Redis Pub/Sub (events/s)",
            one_rate,
        ),
        (
            "relay_events_per_s_pipelined",
            "one channel, raw Redis Pub/Sub, 64 a round trip (events/s)",
            pipelined_rate,
        ),
    ] {
        rows.push(Row::new(name, URIS, relayed, anchor, rate, relayed / rate, 0.0).reported());
    }
    rows.push(Row::new(
        "relay_broker_messages_per_event",
        URIS,
        messages,
        "one channel, every replica receives everything",
        one_messages,
        one_messages / messages,
        // Two replicas: one publish and one delivery, against one publish
        // and a delivery to each.
        1.5,
    ));
    Ok(rows)
}

/// The `p` percentile of `sorted` nanoseconds, in microseconds.
fn micros_at(sorted: &[u64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize] as f64 / 1_000.0
}
