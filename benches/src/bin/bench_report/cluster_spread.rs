//! The relay's spread over a Redis Cluster: on a cluster of 3 and one of 6
//! primaries (slots split evenly by `redis-cli --cluster create`), 10,000
//! URIs watched on one replica and updated once each from another. The
//! sharded messages each node ran and the key channels each holds, their
//! greatest over their least, against a perfectly even spread (10,000 /
//! nodes on each, 1x). A relay whose key channels sat on a few hash tags
//! that happen to share nodes would leave some nodes idle. Beside them, the
//! updates relayed per second, reported against the same relays with the
//! 16 shards that were once the default: more shards, more pipelines for
//! a batch of publishes that spans them.

use harness::{ClusterSpread, cluster_spread};

use crate::rows::Row;

/// Watched URIs, each its own key channel.
const URIS: usize = 10_000;

/// The cluster sizes.
const NODES: [usize; 2] = [3, 6];

/// The most the busiest node may carry over the idlest.
const AT_MOST: f64 = 1.5;

/// The shards of the throughput's anchor.
const FEWER_SHARDS: u16 = 16;

/// The section's rows.
///
/// # Errors
///
/// `redis-server` or `redis-cli` is missing, or a cluster does not start.
pub(crate) fn rows() -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for nodes in NODES {
        let ClusterSpread {
            messages,
            channels,
            events_per_s,
        } = cluster_spread(nodes, URIS, None)?;
        for (what, counts) in [("messages", &messages), ("channels", &channels)] {
            rows.push(row(
                &format!("cluster_spread_{what}_{nodes}_nodes"),
                nodes,
                counts,
            ));
        }
        let fewer = cluster_spread(nodes, URIS, Some(FEWER_SHARDS))?.events_per_s;
        rows.push(
            Row::new(
                &format!("cluster_spread_events_per_s_{nodes}_nodes"),
                URIS,
                events_per_s,
                &format!("the same relays with {FEWER_SHARDS} shards (events/s)"),
                fewer,
                events_per_s / fewer,
                0.0,
            )
            .reported(),
        );
    }
    Ok(rows)
}

/// A row for `counts`, one for each node: their greatest over their least,
/// against an even spread; the counts themselves in the anchor's text.
fn row(scenario: &str, nodes: usize, counts: &[u64]) -> Row {
    let (most, least) = (
        counts.iter().copied().max().unwrap_or(0),
        counts.iter().copied().min().unwrap_or(0),
    );
    let spread = most as f64 / least.max(1) as f64;
    let per_node: Vec<String> = counts.iter().map(u64::to_string).collect();
    let mut row = Row::new(
        scenario,
        URIS,
        spread,
        &format!(
            "even, {} a node (max/min 1); per node: {}",
            URIS / nodes,
            per_node.join(" / ")
        ),
        1.0,
        1.0 / spread,
        1.0 / AT_MOST,
    );
    row.target = format!("max/min <= {AT_MOST}");
    row.met = Some(least > 0 && spread <= AT_MOST);
    row
}
