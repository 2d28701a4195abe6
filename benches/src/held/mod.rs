//! Held streams: many idle listen streams held open against one server
//! process, to see what each costs the server and how fast one change
//! reaches them all.
//!
//! The server runs in a process of its own, so that the resident memory
//! read from its `/proc/<pid>/status` before and after the streams open is
//! the server's alone. The clients are spread over shard processes of at
//! most [`SHARD_STREAMS`] streams each, every shard connecting from a
//! loopback address of its own (`127.0.0.2`, `127.0.0.3`, ...): no process
//! then needs more open files than the per-process limit, and no source
//! address runs out of ports.
//!
//! Both kinds of child are this same executable, spawned again with
//! [`CHILD`] in its environment: every binary that runs [`HeldStreams`]
//! calls [`become_held_child`] first thing in `main`. Parent and children
//! speak in lines over stdin and stdout, and a child exits when its stdin
//! closes, so none outlives the run.
//!
//! The fan-out time runs from the parent asking the server to publish one
//! tools-list change until the last shard reports that every one of its
//! streams has it: it includes two pipe hops, tens of microseconds.

pub(crate) mod proc;
mod server;
mod shard;

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::Server;
use proc::Peaks;

/// The environment variable that makes this executable a child of a run:
/// `server KIND ADDR STREAMS [RELAY REPLICAS]` (a replica of a group with
/// RELAY and REPLICAS) or `shard KIND ADDR FROM FIRST_ID COUNT`, KIND one
/// of `endpoint`, `rmcp`, `sessions`.
const CHILD: &str = "HARNESS_HELD_STREAMS_CHILD";

/// The most streams one client shard opens.
const SHARD_STREAMS: usize = 5_000;

/// Open files the server needs beyond one per stream: its listener, its
/// pipes, the runtime's own.
const SERVER_FILES: usize = 64;

/// How long the streams may take to open, all together.
const OPEN_LIMIT: Duration = Duration::from_secs(600);

/// How long the server is left alone after the last stream opened, before
/// its memory is read: work still queued for the last streams settles.
const SETTLE: Duration = Duration::from_secs(1);

/// How long a published change may take to reach every stream.
const FANOUT_LIMIT: Duration = Duration::from_secs(60);

/// If this process was spawned by a [`HeldStreams`] run as its server or a
/// client shard, plays that part and exits; otherwise returns at once.
pub fn become_held_child() {
    let Ok(role) = std::env::var(CHILD) else {
        return;
    };
    let words: Vec<&str> = role.split_whitespace().collect();
    let number = |word: &str| word.parse::<usize>().expect("a count");
    match words[..] {
        ["server", kind, addr, streams] => {
            server::main(server_kind(kind), addr, number(streams), None);
        }
        ["server", kind, addr, streams, relay, replicas] => server::main(
            server_kind(kind),
            addr,
            number(streams),
            Some(server::Replica {
                relay,
                replicas: number(replicas),
            }),
        ),
        ["shard", "herd", addr, from, _, count] => shard::relistening(
            addr.parse().expect("a server address"),
            from.parse().expect("a source address"),
            number(count),
        ),
        ["shard", "endpoint", addr, _, first_id, count] if addr.starts_with("unix:") => {
            shard::main_unix(
                addr["unix:".len()..].to_owned(),
                number(first_id),
                number(count),
            );
        }
        ["shard", kind, addr, from, first_id, count] => shard::main(
            server_kind(kind),
            addr.parse().expect("a server address"),
            from.parse().expect("a source address"),
            number(first_id),
            number(count),
        ),
        _ => panic!("{CHILD}={role}: not a part of a held-streams run"),
    }
    std::process::exit(0);
}

/// The server a child's role names.
fn server_kind(kind: &str) -> Server {
    match kind {
        "endpoint" => Server::Endpoint,
        "rmcp" => Server::RmcpPattern,
        "sessions" => Server::Sessions,
        _ => panic!("unknown server {kind}"),
    }
}

/// One line to the parent, flushed at once: it is waiting on it.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// `streams` listen streams for tools-list changes, opened against a
/// `server` in a process of its own and held idle.
pub struct HeldStreams {
    server: Server,
    streams: usize,
    addr: String,
    server_under: Vec<String>,
    /// Replicas sharing the port, joined through the relay at this URL.
    group: Option<(usize, String)>,
    /// Kill the first replica once the change reached every stream, and
    /// watch its clients come back (the crate's client in the shards).
    herd: bool,
}

/// What one run saw.
#[derive(Debug)]
pub struct Held {
    /// Streams asked for.
    pub streams: usize,
    /// Server processes that held them (replicas sharing one port).
    pub servers: usize,
    /// Streams the server acknowledged.
    pub acknowledged: usize,
    /// Streams refused or failed before their acknowledgement.
    pub failed: usize,
    /// Why the first of those failed.
    pub first_failure: Option<String>,
    /// Acknowledged streams that ended before the published change reached
    /// them.
    pub lost: usize,
    /// The servers' resident memory before any stream opened, in bytes,
    /// all together.
    pub resident_before: u64,
    /// The servers' resident memory with every stream held, in bytes, all
    /// together.
    pub resident_after: u64,
    /// From asking the server to publish one tools-list change until every
    /// held stream had it; `None` if that took longer than a minute.
    pub fanout: Option<Duration>,
    /// The herd, when one was asked for.
    pub herd: Option<HerdSeen>,
}

impl Held {
    /// The server's resident memory per acknowledged stream, in bytes.
    pub fn resident_per_stream(&self) -> f64 {
        self.resident_after.saturating_sub(self.resident_before) as f64
            / self.acknowledged.max(1) as f64
    }

    /// Whether every stream was acknowledged and reached by the change.
    pub fn all_reached(&self) -> bool {
        self.acknowledged == self.streams && self.lost == 0 && self.fanout.is_some()
    }

    /// Counts one line from a child.
    fn note(&mut self, from: usize, line: &str, progress: &ProgressBar) -> std::io::Result<Note> {
        match line.split_once(' ').map_or(line, |(word, _)| word) {
            "acked" => {
                self.acknowledged += 1;
                progress.inc(1);
            }
            "failed" => {
                self.failed += 1;
                progress.inc(1);
                self.first_failure
                    .get_or_insert_with(|| line["failed ".len()..].to_owned());
            }
            "lost" => self.lost += 1,
            "opened" => return Ok(Note::Opened),
            "received" => return Ok(Note::Received),
            "published" => {}
            _ => {
                return Err(std::io::Error::other(format!(
                    "{} exited or said {line:?}",
                    child_name(from)
                )));
            }
        }
        Ok(Note::Other)
    }
}

impl HeldStreams {
    /// `streams` streams against `server`, listening on a free loopback
    /// port.
    pub fn new(server: Server, streams: usize) -> Self {
        Self {
            server,
            streams,
            addr: "127.0.0.1:0".to_owned(),
            server_under: Vec::new(),
            group: None,
            herd: false,
        }
    }

    /// Holds the streams against `replicas` server processes sharing one
    /// port (`SO_REUSEPORT`), joined through the relay at `relay` (a
    /// broker URL, feature `relay`); one tools-list change is published on
    /// the first and reaches the others' streams through the relay.
    pub fn with_replicas(mut self, replicas: usize, relay: impl Into<String>) -> Self {
        self.group = (replicas > 1).then(|| (replicas, relay.into()));
        self
    }

    /// Once the change reached every stream, kills the first replica
    /// (`SIGKILL`) and measures the herd: the shards hold the streams with
    /// the crate's client, re-listening with `Relisten::default()`, and
    /// say when each lost stream is acknowledged again.
    pub fn with_herd(mut self) -> Self {
        self.herd = true;
        self
    }

    /// The address the server listens on (default `127.0.0.1:0`, a free
    /// port). Clients connect from `127.0.0.2` on, so it should be a
    /// loopback address. `unix:PATH` serves on a Unix domain socket
    /// instead (the crate's endpoint alone, one process).
    pub fn with_addr(mut self, addr: impl Into<String>) -> Self {
        self.addr = addr.into();
        self
    }

    /// Runs the server under `command` (a profiler, say: `valgrind
    /// --tool=dhat`), which is given the server's executable as its last
    /// argument. The memory figures are then the command's, not the
    /// server's.
    pub fn with_server_under(mut self, command: Vec<String>) -> Self {
        self.server_under = command;
        self
    }

    /// Runs the server and the shards, opens the streams (counted on
    /// `progress`), reads the server's memory, publishes one change and
    /// waits for it to reach every stream.
    ///
    /// # Errors
    ///
    /// When there are more streams than loopback addresses for their
    /// shards, the open-file limit is too low for the server, a child
    /// cannot be spawned, or one exits before its part is done.
    pub fn run(&self, progress: &ProgressBar) -> std::io::Result<Held> {
        // Source addresses 127.0.0.2 to 127.0.0.254, one per shard.
        if self.streams.div_ceil(SHARD_STREAMS) > 253 {
            return Err(std::io::Error::other(format!(
                "at most {} streams: one shard per loopback address",
                253 * SHARD_STREAMS
            )));
        }
        if self.addr.starts_with("unix:")
            && (self.server != Server::Endpoint || self.group.is_some() || self.herd)
        {
            return Err(std::io::Error::other(
                "a Unix socket serves the crate's endpoint alone, as one process",
            ));
        }
        let replicas = self.group.as_ref().map_or(1, |(replicas, _)| *replicas);
        // The kernel spreads a group's connections about evenly (hashed by
        // their addresses: within a few percent at these counts); a tenth
        // more than an even share leaves room for that.
        // After a kill, the survivors hold them all.
        let holding = if self.herd { replicas - 1 } else { replicas };
        let per_server = if holding <= 1 {
            self.streams
        } else {
            self.streams.div_ceil(holding) * 11 / 10
        };
        let limit = proc::open_file_limit()?;
        if (limit as usize) < per_server + SERVER_FILES {
            return Err(std::io::Error::other(format!(
                "each server needs {} open files and `ulimit -n` allows {limit}",
                per_server + SERVER_FILES
            )));
        }
        let (lines, from_children) = channel();
        let kind = match self.server {
            Server::Endpoint => "endpoint",
            Server::RmcpPattern => "rmcp",
            Server::Sessions => "sessions",
        };
        let mut servers = Vec::with_capacity(replicas);
        let mut addr = self.addr.clone();
        for replica in 0..replicas {
            let mut role = format!("server {kind} {addr} {}", self.streams);
            if let Some((replicas, relay)) = &self.group {
                role += &format!(" {relay} {replicas}");
            }
            let index = server_index(replica);
            servers.push(Process::spawn(&role, &self.server_under, index, &lines)?);
            // The first binds the address (a free port); the others share it.
            addr = match expect(&from_children, index, OPEN_LIMIT)? {
                line if line.starts_with("listening ") => line["listening ".len()..].to_owned(),
                line => return Err(std::io::Error::other(format!("server said {line:?}"))),
            };
        }
        // A group serves once every replica's relay hears the others.
        let joining = if self.group.is_some() { replicas } else { 0 };
        for _ in 0..joining {
            match next(&from_children, Instant::now() + OPEN_LIMIT)? {
                (_, line) if line == server::JOINED => {}
                (from, line) => {
                    return Err(std::io::Error::other(format!(
                        "{} said {line:?}",
                        child_name(from)
                    )));
                }
            }
        }
        // A Unix socket's path, or an address the shards parse.
        if !addr.starts_with("unix:") {
            addr.parse::<SocketAddr>().map_err(std::io::Error::other)?;
        }
        let resident = |servers: &[Process]| -> std::io::Result<u64> {
            servers.iter().map(|s| proc::resident_bytes(s.id())).sum()
        };
        let resident_before = resident(&servers)?;

        let shards: Vec<Process> = (0..self.streams.div_ceil(SHARD_STREAMS))
            .map(|shard| {
                let first_id = shard * SHARD_STREAMS;
                let count = SHARD_STREAMS.min(self.streams - first_id);
                let from = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + shard as u8));
                let client = if self.herd { "herd" } else { kind };
                let role = format!("shard {client} {addr} {from} {first_id} {count}");
                Process::spawn(&role, &[], shard, &lines)
            })
            .collect::<Result<_, _>>()?;
        drop(lines);

        let mut held = Held {
            streams: self.streams,
            servers: replicas,
            acknowledged: 0,
            failed: 0,
            first_failure: None,
            lost: 0,
            resident_before,
            resident_after: 0,
            fanout: None,
            herd: None,
        };
        progress.set_length(self.streams as u64);
        let (mut opened, mut received) = (0, Vec::new());
        let deadline = Instant::now() + OPEN_LIMIT;
        while opened < shards.len() {
            let (shard, line) = next(&from_children, deadline)?;
            match held.note(shard, &line, progress)? {
                Note::Opened => opened += 1,
                Note::Received => received.push(shard),
                Note::Other => {}
            }
        }
        progress.finish();

        std::thread::sleep(SETTLE);
        held.resident_after = resident(&servers)?;

        let start = Instant::now();
        servers[0].tell(server::PUBLISH)?;
        let deadline = start + FANOUT_LIMIT;
        while received.len() < shards.len() {
            let Ok((shard, line)) = next(&from_children, deadline) else {
                return Ok(held);
            };
            if let Note::Received = held.note(shard, &line, progress)? {
                received.push(shard);
            }
        }
        held.fanout = Some(start.elapsed());
        if self.herd && servers.len() > 1 {
            let (victim, survivors) = servers.split_first_mut().expect("more than one");
            let survivors: Vec<u32> = survivors.iter().map(Process::id).collect();
            let clients: Vec<u32> = shards.iter().map(Process::id).collect();
            held.herd = Some(herd(victim, &survivors, &clients, &from_children)?);
        }
        Ok(held)
    }
}

/// What the first replica's clients did once it was killed.
#[derive(Debug, Clone, Copy)]
pub struct HerdSeen {
    /// Streams that lost their stream and re-listened.
    pub lost: usize,
    /// Of those, the ones acknowledged again (each `Resynced`).
    pub resynced: usize,
    /// Streams that ended for good.
    pub ended: usize,
    /// From the kill until the last lost stream was acknowledged again;
    /// `None` if some were not within `HERD_LIMIT`.
    pub recovered: Option<Duration>,
    /// From the kill until half of them were.
    pub half_recovered: Option<Duration>,
    /// The survivors' new sockets a second, together, at their peak
    /// while the herd came back.
    pub peak_accepts_per_s: f64,
    /// The busiest survivor's CPU at its peak, in cores.
    pub peak_server_cpu: f64,
    /// The client shards' CPU together at its peak, in cores.
    pub peak_clients_cpu: f64,
}

/// How long the killed replica's streams may take to come back.
const HERD_LIMIT: Duration = Duration::from_secs(120);

/// Quiet this long after the last stream noticed, with every one back,
/// and the herd is over.
const HERD_SETTLED: Duration = Duration::from_secs(2);

/// Kills `victim` and counts its clients coming back, sampling the
/// `survivors` and the `clients` meanwhile.
fn herd(
    victim: &mut Process,
    survivors: &[u32],
    clients: &[u32],
    lines: &Receiver<(usize, String)>,
) -> std::io::Result<HerdSeen> {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (survivors, clients, stop) = (survivors.to_vec(), clients.to_vec(), Arc::clone(&stop));
        std::thread::spawn(move || Peaks::sample(&survivors, &clients, &stop))
    };
    victim.child.kill()?;
    let killed = Instant::now();
    let mut seen = HerdSeen {
        lost: 0,
        resynced: 0,
        ended: 0,
        recovered: None,
        half_recovered: None,
        peak_accepts_per_s: 0.0,
        peak_server_cpu: 0.0,
        peak_clients_cpu: 0.0,
    };
    let (mut last_noticed, mut back) = (killed, Vec::new());
    let deadline = killed + HERD_LIMIT;
    loop {
        let settled =
            seen.lost > 0 && seen.resynced >= seen.lost && last_noticed.elapsed() >= HERD_SETTLED;
        if settled || Instant::now() >= deadline {
            break;
        }
        let wait = Instant::now() + Duration::from_millis(100);
        let Ok((_, line)) = next(lines, wait.min(deadline)) else {
            continue;
        };
        match line.as_str() {
            "relistening" => {
                seen.lost += 1;
                last_noticed = Instant::now();
            }
            "resynced" => {
                seen.resynced += 1;
                back.push(killed.elapsed());
            }
            "lost" => seen.ended += 1,
            // The killed replica's reader thread, and late lines of the run.
            _ => {}
        }
    }
    if seen.lost > 0 && seen.resynced >= seen.lost {
        seen.recovered = back.last().copied();
    }
    seen.half_recovered = back.get(back.len().saturating_sub(1) / 2).copied();
    stop.store(true, Ordering::Relaxed);
    let peaks = sampler.join().unwrap_or_default();
    (
        seen.peak_accepts_per_s,
        seen.peak_server_cpu,
        seen.peak_clients_cpu,
    ) = (peaks.accepts_per_s, peaks.server_cpu, peaks.clients_cpu);
    Ok(seen)
}

/// What a child's line meant to the run.
enum Note {
    Opened,
    Received,
    Other,
}

/// Servers are numbered down from the top among the children; shards
/// from 0 up.
fn server_index(replica: usize) -> usize {
    usize::MAX - replica
}

fn child_name(index: usize) -> String {
    match usize::MAX - index {
        0 => "the server".to_owned(),
        replica if replica < 1_000 => format!("server replica {replica}"),
        _ => format!("client shard {index}"),
    }
}

/// What a child's reader thread sends when its stdout closes.
const EXITED: &str = "exited";

/// The next line from any child, before `deadline`.
fn next(lines: &Receiver<(usize, String)>, deadline: Instant) -> std::io::Result<(usize, String)> {
    lines
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "the children went quiet"))
}

/// The next line, which must come from child `index` within `limit`.
fn expect(
    lines: &Receiver<(usize, String)>,
    index: usize,
    limit: Duration,
) -> std::io::Result<String> {
    match next(lines, Instant::now() + limit)? {
        (from, line) if from == index && line != EXITED => Ok(line),
        (from, line) => Err(std::io::Error::other(format!(
            "{} said {line:?}",
            child_name(from)
        ))),
    }
}

/// A child of the run, asked to exit when dropped (its stdin closed) and
/// killed if it has not within [`EXIT_GRACE`].
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
}

/// How long a child may take to exit once its stdin closed: a server under
/// a profiler writes its profile then.
const EXIT_GRACE: Duration = Duration::from_secs(60);

impl Process {
    /// This executable again, as `role`, run by the command `under` if it
    /// is not empty; its stdout's lines go to `lines` tagged with `index`,
    /// then [`EXITED`].
    fn spawn(
        role: &str,
        under: &[String],
        index: usize,
        lines: &Sender<(usize, String)>,
    ) -> std::io::Result<Self> {
        let exe = std::env::current_exe()?;
        let mut command = match under {
            [] => Command::new(exe),
            [program, args @ ..] => {
                let mut command = Command::new(program);
                command.args(args).arg(exe);
                command
            }
        };
        let mut child = command
            .env(CHILD, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(std::io::Error::other("a child without its pipes"));
        };
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send((index, line)).is_err() {
                    return;
                }
            }
            let _ = lines.send((index, EXITED.to_owned()));
        });
        Ok(Self {
            child,
            stdin: Some(stdin),
        })
    }

    fn id(&self) -> u32 {
        self.child.id()
    }

    /// One line to the child.
    fn tell(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().expect("open until dropped");
        writeln!(stdin, "{line}")?;
        stdin.flush()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + EXIT_GRACE;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
