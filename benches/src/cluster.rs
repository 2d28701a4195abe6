//! The relay's spread over a Redis Cluster (feature `relay`): a cluster of
//! its own, with as many primaries as asked for, on free loopback ports;
//! one replica that watches many URIs (one listener each, so its relay
//! subscribes one key channel for each), and one that updates each of them
//! once. What each node served, from the nodes themselves: the `SPUBLISH`es
//! it ran (`INFO commandstats`) and the key channels it holds
//! (`PUBSUB SHARDCHANNELS`, which each node answers for its own slots).
//!
//! Only the report uses it: a cluster is no microbenchmark.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_subscriptions::relay::{Broker, Relay, RelayOptions};
use mcp_subscriptions::{Filter, Hub};

use crate::relay::{redis_on_path, until};

/// What each node of the cluster served, in the order of its ports.
pub struct ClusterSpread {
    /// The `SPUBLISH`es each node ran while the URIs were updated.
    pub messages: Vec<u64>,
    /// The key channels subscribed on each node.
    pub channels: Vec<u64>,
    /// The updates relayed per second, from the first published to the
    /// last received.
    pub events_per_s: f64,
}

/// Whether `redis-server` and `redis-cli` (which creates the cluster) are
/// both on `PATH`.
pub fn redis_cluster_on_path() -> bool {
    redis_on_path()
        && Command::new("redis-cli")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
}

/// A cluster of `nodes` primaries, `uris` URIs watched on one replica and
/// updated once each from another, through relays of `shards` shards
/// (`None`: the relay's default): what each node served.
///
/// # Errors
///
/// The cluster does not start.
///
/// # Panics
///
/// When the relays are not ready, or the updates do not all arrive, within
/// thirty seconds.
pub fn cluster_spread(
    nodes: usize,
    uris: usize,
    shards: Option<u16>,
) -> Result<ClusterSpread, String> {
    let cluster = RedisCluster::start(nodes)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    // No heartbeat inside the measurement and no drop: the nodes then
    // count the updates alone.
    let shards = shards.unwrap_or(RelayOptions::default().shards);
    let options = RelayOptions::default()
        .with_shards(shards)
        .with_outbound_capacity(4 * uris)
        .with_heartbeat(Duration::from_secs(3_600))
        .with_resync_jitter(Duration::from_millis(50));
    let relay = |hub: &Hub| {
        let broker = Broker::from_url(&cluster.url()).expect("a redis+cluster:// URL");
        Relay::spawn(hub.clone(), broker, options.clone()).expect("a new hub has no relay")
    };
    let (publisher, watcher) = (Hub::new(), Hub::builder().max_listeners(uris).build());
    let (a, b) = (relay(&publisher), relay(&watcher));
    let all: Vec<String> = (0..uris)
        .map(|i| format!("file:///spread/{i:05}"))
        .collect();
    let _listeners: Vec<_> = all
        .iter()
        .map(|uri| {
            watcher
                .listen(&Filter::new().with_resource(uri.as_str()))
                .unwrap()
        })
        .collect();
    runtime.block_on(async {
        until("both relays connected, every key subscribed", || {
            a.stats().connected && b.stats().connected && b.stats().subscribed_keys == uris as u64
        })
        .await;
        // The catch-up of the new keys and the resync for hearing the
        // other replica, over before the count starts.
        tokio::time::sleep(Duration::from_millis(200)).await;
    });
    cluster.each(&["CONFIG", "RESETSTAT"])?;
    let before = b.stats().received;
    let events_per_s = runtime.block_on(async {
        let start = Instant::now();
        for uri in &all {
            publisher.notify_resource_updated(uri.as_str());
        }
        until("every update relayed", || {
            b.stats().received >= before + uris as u64
        })
        .await;
        uris as f64 / start.elapsed().as_secs_f64()
    });
    let messages = cluster
        .each(&["INFO", "commandstats"])?
        .iter()
        .map(|info| calls(info, "spublish"))
        .collect();
    let channels = cluster
        .nodes
        .iter()
        .map(|node| {
            node.query::<Vec<String>>(&["PUBSUB", "SHARDCHANNELS", "*.key.*"])
                .map(|channels| channels.len() as u64)
        })
        .collect::<Result<_, _>>()?;
    drop((a, b));
    Ok(ClusterSpread {
        messages,
        channels,
        events_per_s,
    })
}

/// The calls of `command` in the text of `INFO commandstats`:
/// `cmdstat_spublish:calls=3,usec=…`; 0 when it never ran.
fn calls(info: &str, command: &str) -> u64 {
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.trim().strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(0)
}

/// One node of a [`RedisCluster`].
struct Node {
    child: Child,
    port: u16,
}

impl Node {
    /// `args` as one command on a connection of its own; the reply as `T`.
    fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> Result<T, String> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}", self.port))
            .map_err(|err| err.to_string())?;
        let mut connection = client.get_connection().map_err(|err| err.to_string())?;
        let mut command = redis::cmd(args[0]);
        for arg in &args[1..] {
            command.arg(*arg);
        }
        command
            .query(&mut connection)
            .map_err(|err| format!("{} on port {}: {err}", args.join(" "), self.port))
    }
}

/// A Redis Cluster of primaries on free loopback ports, without
/// persistence, its slots split evenly by `redis-cli --cluster create`
/// (as a cluster usually is); stopped, and its scratch folder removed,
/// when dropped.
struct RedisCluster {
    nodes: Vec<Node>,
    dir: PathBuf,
}

impl RedisCluster {
    /// Starts `primaries` nodes and joins them, and waits until every node
    /// says the cluster is up.
    fn start(primaries: usize) -> Result<Self, String> {
        if !redis_cluster_on_path() {
            return Err(
                "the cluster_spread section needs `redis-server` and `redis-cli` on \
                 PATH; install them with: apt-get install redis-server"
                    .to_owned(),
            );
        }
        let dir = std::env::temp_dir().join(format!(
            "mcp-subscriptions-bench-cluster-{}-{}",
            std::process::id(),
            free_port()?
        ));
        std::fs::create_dir_all(&dir).map_err(|err| err.to_string())?;
        let mut cluster = Self {
            nodes: Vec::new(),
            dir,
        };
        for _ in 0..primaries {
            let (port, bus) = (free_port()?, free_port()?);
            let child = Command::new("redis-server")
                .current_dir(&cluster.dir)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes"])
                .args(["--cluster-config-file", &format!("nodes-{port}.conf")])
                // The bus port would be port + 10,000 otherwise, which may
                // be taken or out of range.
                .args(["--cluster-port", &bus.to_string()])
                .args(["--cluster-node-timeout", "2000"])
                .stdout(Stdio::null())
                .spawn()
                .map_err(|err| format!("redis-server did not start: {err}"))?;
            cluster.nodes.push(Node { child, port });
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for node in &cluster.nodes {
            while TcpStream::connect(("127.0.0.1", node.port)).is_err() {
                if Instant::now() > deadline {
                    return Err(format!("redis-server took no connection on {}", node.port));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(cluster.addresses())
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .map_err(|err| format!("redis-cli did not start: {err}"))?;
        if !created.status.success() {
            return Err(format!(
                "redis-cli --cluster create: {}",
                String::from_utf8_lossy(&created.stdout)
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while !cluster
            .each(&["CLUSTER", "INFO"])?
            .iter()
            .all(|info| info.lines().any(|line| line.trim() == "cluster_state:ok"))
        {
            if Instant::now() > deadline {
                return Err("the cluster did not come up within 20 s".to_owned());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(cluster)
    }

    fn addresses(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect()
    }

    /// The URL the relay takes.
    fn url(&self) -> String {
        format!("redis+cluster://{}", self.addresses().join(","))
    }

    /// `args` run on every node: their text replies, in the nodes' order.
    fn each(&self, args: &[&str]) -> Result<Vec<String>, String> {
        self.nodes.iter().map(|node| node.query(args)).collect()
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            let _ = node.child.kill();
            let _ = node.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|err| format!("no free port: {err}"))
}
