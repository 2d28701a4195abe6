//! Real brokers for the relay's tests: `redis-server` and `nats-server`,
//! each started on a free loopback port and stopped when dropped, and a
//! Redis Cluster of three such servers.
//!
//! A broker missing from `PATH` is installed from the Debian packages when
//! the tests run as root with `apt-get`; otherwise the test fails naming
//! the command that installs it. Never skipped.

#![allow(dead_code, unreachable_pub)]

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Which broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Redis,
    Nats,
}

impl Kind {
    fn program(self) -> &'static str {
        match self {
            Kind::Redis => "redis-server",
            Kind::Nats => "nats-server",
        }
    }

    fn package(self) -> &'static str {
        self.program()
    }
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Held while installing: tests in one process install one at a time, and
/// apt-get waits for the package lock that tests in other processes hold.
static INSTALLING: Mutex<()> = Mutex::new(());

/// Makes sure `kind`'s server is on `PATH`, installing it if it can.
fn ensure(kind: Kind) {
    let program = kind.program();
    let _installing = INSTALLING.lock().unwrap_or_else(PoisonError::into_inner);
    if on_path(program) {
        return;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let install = format!("apt-get update && apt-get install -y {}", kind.package());
    if root && on_path("apt-get") {
        let apt_get = |args: &[&str]| {
            let _ = Command::new("apt-get")
                .args(["-o", "DPkg::Lock::Timeout=300"])
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status();
        };
        apt_get(&["update"]);
        apt_get(&["install", "-y", kind.package()]);
    }
    assert!(
        on_path(program),
        "`{program}` is not on PATH and could not be installed here; install it with: {install}"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running broker on `127.0.0.1:port`.
pub struct Broker {
    pub kind: Kind,
    pub port: u16,
    /// More arguments for the server (a cluster node's).
    args: Vec<String>,
    child: Option<Child>,
}

impl Broker {
    pub fn start(kind: Kind) -> Self {
        ensure(kind);
        Self::start_with(kind, free_port(), Vec::new())
    }

    fn start_with(kind: Kind, port: u16, args: Vec<String>) -> Self {
        let mut broker = Self {
            kind,
            port,
            args,
            child: None,
        };
        broker.restart();
        broker
    }

    pub fn redis() -> Self {
        Self::start(Kind::Redis)
    }

    pub fn nats() -> Self {
        Self::start(Kind::Nats)
    }

    pub fn url(&self) -> String {
        match self.kind {
            Kind::Redis => format!("redis://127.0.0.1:{}", self.port),
            Kind::Nats => format!("nats://127.0.0.1:{}", self.port),
        }
    }

    /// Starts it again on the same port (after `kill`).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the broker is running");
        let port = self.port.to_string();
        let mut command = Command::new(self.kind.program());
        match self.kind {
            Kind::Redis => command.args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ]),
            Kind::Nats => command.args(["-a", "127.0.0.1", "-p", &port]),
        };
        command.args(&self.args);
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.kind.program()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{} did not start",
                self.kind.program()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills it (SIGKILL) and waits for it to be gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        assert!(
            Command::new("kill")
                .args([signal, &pid])
                .status()
                .unwrap()
                .success()
        );
    }

    /// Freezes it (SIGSTOP): connections stay open, nothing is answered.
    pub fn stop(&self) {
        self.signal("-STOP");
    }

    /// Thaws it (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// `redis-cli` against this Redis, its output's lines.
    pub fn redis_cli(&self, args: &[&str]) -> Vec<String> {
        assert_eq!(self.kind, Kind::Redis);
        let output = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli (it comes with redis-server's package, redis-tools)");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// Redis's active channels matching `pattern`, with their subscriber
    /// counts (`PUBSUB CHANNELS`, `PUBSUB NUMSUB`).
    pub fn redis_subscribers(&self, pattern: &str) -> Vec<(String, u64)> {
        let mut channels = self.redis_cli(&["PUBSUB", "CHANNELS", pattern]);
        channels.sort();
        channels
            .into_iter()
            .map(|channel| {
                let numsub = self.redis_cli(&["PUBSUB", "NUMSUB", &channel]);
                (channel, numsub[1].parse().unwrap())
            })
            .collect()
    }
}

/// A Redis Cluster: three primaries on free loopback ports, their cluster
/// state in a scratch folder, all stopped when dropped.
pub struct RedisCluster {
    pub nodes: Vec<Broker>,
    dir: PathBuf,
}

impl RedisCluster {
    pub fn start() -> Self {
        ensure(Kind::Redis);
        let dir = std::env::temp_dir().join(format!(
            "mcp-subscriptions-cluster-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let nodes: Vec<Broker> = (0..3)
            .map(|_| {
                let port = free_port();
                let args = [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &dir.join(format!("nodes-{port}.conf")).to_string_lossy(),
                    // The bus port would be port + 10,000 otherwise, which
                    // may be taken or out of range.
                    "--cluster-port",
                    &free_port().to_string(),
                    "--cluster-node-timeout",
                    "2000",
                ]
                .map(String::from)
                .to_vec();
                Broker::start_with(Kind::Redis, port, args)
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli (it comes with redis-server's package, redis-tools)");
        assert!(
            created.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&created.stdout)
        );
        let cluster = Self { nodes, dir };
        cluster.wait_ok();
        cluster
    }

    /// Waits until every node says the cluster is up.
    pub fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.nodes.iter().all(|node| {
            node.redis_cli(&["CLUSTER", "INFO"])
                .iter()
                .any(|line| line.trim() == "cluster_state:ok")
        }) {
            assert!(Instant::now() < deadline, "the cluster did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The URL the relay takes.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// The cluster's sharded channels matching `pattern`, with their
    /// subscriber counts, asked of every node (`PUBSUB SHARDCHANNELS`,
    /// `PUBSUB SHARDNUMSUB`: each node answers for its own slots).
    pub fn shard_subscribers(&self, pattern: &str) -> Vec<(String, u64)> {
        let mut found = Vec::new();
        for node in &self.nodes {
            for channel in node.redis_cli(&["PUBSUB", "SHARDCHANNELS", pattern]) {
                let numsub = node.redis_cli(&["PUBSUB", "SHARDNUMSUB", &channel]);
                found.push((channel, numsub[1].parse().unwrap()));
            }
        }
        found.sort();
        found
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A stopped process cannot die until it is continued.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
    }
}
