//! The herd (feature `relay`): listen streams held against several example
//! server replicas sharing one port (`--reuse-port`, joined by `--relay`
//! through a real `redis-server`), one replica killed with `SIGKILL`, and
//! its clients, the crate's own (`client::Subscription::http` with
//! [`Relisten::default`]), coming back through the shared port to the
//! survivors.
//!
//! Beside the streams, live catalogs (`client::Catalog`, each its own
//! listen stream) of the same replicas: the `tools/list` requests each
//! one lost to the kill made coming back are counted from its health.
//!
//! Measured: how many streams were lost, how long from the kill until each
//! lost stream was acknowledged again (its [`Item::Resynced`]), whether
//! each got exactly one and none ended, the survivors' peak accept rate and
//! CPU while the herd came back (sampled from `/proc`), and whether one
//! tools-list change triggered afterwards reached every stream, those on
//! the survivors from before and those that came back alike: no stream
//! left silently stale.
//!
//! The replicas are the crate's example server, built beforehand with
//! [`BUILD`]; each is a child process killed when the run is dropped,
//! panics included. Every wait has a deadline.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp_subscriptions::Filter;
use mcp_subscriptions_client::catalog::{Catalog, CatalogKind, CatalogOptions, ListenState};
use mcp_subscriptions_client::{Item, Relisten, SubscribeOptions, Subscription};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};

use crate::held::proc::{Peaks, sockets};
use crate::relay::RedisServer;

/// The command that builds the example server the herd runs.
pub(crate) const BUILD: &str = "cargo build --release --example server --features redis";

/// Streams opened at once while the herd gathers.
const OPENING: usize = 64;

/// How long a replica may take to print its address.
const START_LIMIT: Duration = Duration::from_secs(20);

/// How long the replicas' relays may take to hear one another.
const READY_LIMIT: Duration = Duration::from_secs(20);

/// How long every stream may take to open, all together.
const OPEN_LIMIT: Duration = Duration::from_secs(120);

/// How long the lost streams may take to come back, all together.
const BACK_LIMIT: Duration = Duration::from_secs(60);

/// How long the change may take to reach every stream.
const REACH_LIMIT: Duration = Duration::from_secs(20);

/// One herd run: `streams` streams over `replicas` replicas.
#[derive(Debug, Clone, Copy)]
pub struct Herd {
    /// Listen streams held.
    pub streams: usize,
    /// Replicas sharing the port; the first started is killed.
    pub replicas: usize,
    /// Live catalogs held beside the streams.
    pub catalogs: usize,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct HerdRun {
    /// Streams opened and acknowledged.
    pub streams: usize,
    /// Streams each replica held before the kill, counted from its open
    /// sockets (`/proc/<pid>/fd`), the killed one first.
    pub held: Vec<usize>,
    /// Streams that reported [`Item::Relistening`] after the kill.
    pub lost: usize,
    /// From the kill until each lost stream's `Resynced`, sorted; only
    /// those that had one.
    pub reacknowledged: Vec<Duration>,
    /// From the kill until each lost stream's first `Relistening`, sorted.
    pub noticed: Vec<Duration>,
    /// For each lost stream, the time from its last `Relistening` to its
    /// `Resynced` beyond the backoff delay that `Relistening` announced,
    /// sorted: what re-listening costs over the wait.
    pub beyond_delay: Vec<Duration>,
    /// Lost streams with exactly one `Resynced` after the kill.
    pub resynced_once: usize,
    /// Streams with more than one `Resynced`.
    pub resynced_twice: usize,
    /// Streams that ended (any [`Item::End`]).
    pub ended: usize,
    /// The most re-listen attempts one lost stream made.
    pub most_attempts: u32,
    /// The least and greatest backoff delay the lost streams' first attempt
    /// reported.
    pub first_delays: Option<(Duration, Duration)>,
    /// Streams the survivors delivered an event to between the kill and the
    /// publish (a survivor's own resync, for instance).
    pub events_before_publish: usize,
    /// Streams the change published after the herd came back reached.
    pub received_after: usize,
    /// The survivors' accepts a second, together, in the busiest sample.
    pub peak_accepts_per_s: f64,
    /// The busiest survivor's CPU in its busiest sample, in cores.
    pub peak_cpu: f64,
    /// This process's (every client's) CPU in its busiest sample, in cores.
    pub client_peak_cpu: f64,
    /// Catalogs whose listen stream the kill ended (they discovered the
    /// server again).
    pub catalogs_lost: usize,
    /// For each of those, the `tools/list` requests it made coming back,
    /// sorted.
    pub tools_lists_per_relisten: Vec<u64>,
}

impl HerdRun {
    /// The `p` quantile of [`reacknowledged`](Self::reacknowledged), in
    /// milliseconds; infinite when none came back.
    pub fn reacknowledged_ms(&self, p: f64) -> f64 {
        crate::quantile_ms(&self.reacknowledged, p)
    }

    /// Whether every lost stream came back with exactly one `Resynced`, no
    /// stream ended, and at least one stream was lost.
    pub fn all_resynced(&self) -> bool {
        self.lost > 0
            && self.resynced_once == self.lost
            && self.resynced_twice == 0
            && self.ended == 0
    }
}

/// What a stream's reader saw.
#[derive(Debug, Clone, Copy)]
enum Seen {
    Opened,
    Event,
    Relistening(u32, Duration),
    Resynced,
    Ended,
}

/// The replicas and their broker; every child is killed when dropped.
struct Fleet {
    replicas: Vec<Child>,
    port: u16,
    redis: RedisServer,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.replicas {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Fleet {
    fn start(replicas: usize, streams: usize) -> Result<Self, String> {
        let server = server_path()?;
        let redis = RedisServer::start()?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|err| format!("no free port: {err}"))?
            .port();
        let mut fleet = Self {
            replicas: Vec::new(),
            port,
            redis,
        };
        let url = fleet.redis.url();
        let bind = format!("127.0.0.1:{port}");
        let max = (streams + 1_000).to_string();
        for _ in 0..replicas {
            let mut child = Command::new(&server)
                .args(["--bind", &bind, "--reuse-port", "--relay", &url])
                .args(["--max-subscriptions", &max])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|err| format!("{} did not start: {err}", server.display()))?;
            let stdout = child.stdout.take().expect("piped");
            fleet.replicas.push(child);
            // The first line names the address; the rest is drained so the
            // replica never blocks on a full pipe.
            let (said, heard) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stdout).lines();
                let _ = said.send(lines.next().and_then(Result::ok));
                for _ in lines {}
            });
            match heard.recv_timeout(START_LIMIT) {
                Ok(Some(line)) if line.starts_with("listening on") => {}
                other => {
                    return Err(format!(
                        "a replica did not start listening ({other:?}); was it built with \
                         `{BUILD}`?"
                    ));
                }
            }
        }
        Ok(fleet)
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn pid(&self, replica: usize) -> u32 {
        self.replicas[replica].id()
    }
}

/// The example server next to this executable (`target/release/examples`).
fn server_path() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|err| format!("no executable path: {err}"))?;
    let dir = exe.parent().ok_or("the executable has no directory")?;
    let server = dir.join("examples").join("server");
    if server.is_file() {
        Ok(server)
    } else {
        Err(format!(
            "no example server at {}; build it with `{BUILD}`",
            server.display()
        ))
    }
}

/// One HTTP/1.1 request on a connection of its own; the response's body.
async fn request(addr: &str, method: &str, path: &str, body: &str, headers: &str) -> String {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let text = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(text.as_bytes()).await.ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.ok()?;
        let response = String::from_utf8_lossy(&response).into_owned();
        Some(
            response
                .split_once("\r\n\r\n")
                .map_or(String::new(), |(_, body)| body.to_owned()),
        )
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// `GET /stats` from whichever replica answers.
async fn stats(addr: &str) -> serde_json::Value {
    serde_json::from_str(&request(addr, "GET", "/stats", "", "").await)
        .unwrap_or(serde_json::Value::Null)
}

/// Triggers one tools-list change on whichever replica answers, as a
/// 2026-07-28 client does without a session.
async fn trigger_tool_change(addr: &str) -> Result<(), String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": "herd", "method": "tools/call",
        "params": {"name": "test_trigger_tool_change", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }},
    })
    .to_string();
    let headers = "Content-Type: application/json\r\n\
                   Accept: application/json, text/event-stream\r\n\
                   Mcp-Protocol-Version: 2026-07-28\r\n\
                   Mcp-Method: tools/call\r\nMcp-Name: test_trigger_tool_change\r\n";
    let answer = request(addr, "POST", "/mcp", &body, headers).await;
    if answer.contains("\"result\"") && !answer.contains("\"isError\":true") {
        Ok(())
    } else {
        Err(format!("test_trigger_tool_change failed: {answer:?}"))
    }
}

/// Waits, polling every 20 ms, until `holds`, or fails naming `what`.
async fn until(limit: Duration, what: &str, mut holds: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    while !holds() {
        if Instant::now() > deadline {
            return Err(format!("timed out after {limit:?} waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Each stream's items, with when they were seen.
struct Log {
    seen: Vec<Vec<(Instant, Seen)>>,
    items: mpsc::UnboundedReceiver<(usize, Instant, Seen)>,
}

impl Log {
    fn drain(&mut self) {
        while let Ok((stream, at, seen)) = self.items.try_recv() {
            self.seen[stream].push((at, seen));
        }
    }

    fn count(&self, holds: impl Fn(&[(Instant, Seen)]) -> bool) -> usize {
        self.seen.iter().filter(|items| holds(items)).count()
    }
}

fn after(items: &[(Instant, Seen)], from: Instant) -> impl Iterator<Item = &Seen> {
    items
        .iter()
        .filter(move |(at, _)| *at >= from)
        .map(|(_, seen)| seen)
}

impl Herd {
    /// Runs the herd once.
    ///
    /// # Errors
    ///
    /// `redis-server` or the example server is missing, a replica does not
    /// start, or a wait runs past its deadline.
    pub fn run(self) -> Result<HerdRun, String> {
        if self.replicas < 2 {
            return Err("the herd needs two replicas at least".to_owned());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|err| format!("no runtime: {err}"))?;
        let mut fleet = Fleet::start(self.replicas, self.streams)?;
        let result = runtime.block_on(self.measure(&mut fleet));
        // The readers' tasks go with the runtime, before the replicas.
        runtime.shutdown_timeout(Duration::from_secs(5));
        drop(fleet);
        result
    }

    async fn measure(self, fleet: &mut Fleet) -> Result<HerdRun, String> {
        let addr = fleet.addr();
        // Ready once a run of answers, from whichever replica, all say its
        // relay hears the others.
        let deadline = Instant::now() + READY_LIMIT;
        let mut ready_in_a_row = 0;
        while ready_in_a_row < 8 * self.replicas {
            let relay = stats(&addr).await["relay"].clone();
            let ready = relay["connected"] == true
                && relay["replicas"].as_u64() == Some(self.replicas as u64 - 1);
            ready_in_a_row = if ready { ready_in_a_row + 1 } else { 0 };
            if Instant::now() > deadline {
                return Err(format!("the replicas' relays were never ready: {relay}"));
            }
            if !ready {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let pids: Vec<u32> = (0..self.replicas).map(|i| fleet.pid(i)).collect();
        let baseline: Vec<usize> = pids.iter().map(|&pid| sockets(pid)).collect();

        // The herd gathers.
        let url = format!("http://{addr}/mcp");
        let (tell, items) = mpsc::unbounded_channel();
        let mut log = Log {
            seen: vec![Vec::new(); self.streams],
            items,
        };
        let opening = Arc::new(Semaphore::new(OPENING));
        let stop = Arc::new(AtomicBool::new(false));
        for stream in 0..self.streams {
            let (url, tell, opening) = (url.clone(), tell.clone(), Arc::clone(&opening));
            tokio::spawn(async move {
                let filter = Filter::new().with_tools_list_changed();
                let options = SubscribeOptions::default().with_relisten(Relisten::default());
                let permit = opening.acquire_owned().await;
                let opened = Subscription::http(url, &filter, options).await;
                drop(permit);
                let Ok(mut subscription) = opened else {
                    let _ = tell.send((stream, Instant::now(), Seen::Ended));
                    return;
                };
                let _ = tell.send((stream, Instant::now(), Seen::Opened));
                while let Some(item) = subscription.next().await {
                    let seen = match item {
                        Item::Event(_) => Seen::Event,
                        Item::Relistening(relistening) => {
                            Seen::Relistening(relistening.attempt, relistening.delay)
                        }
                        Item::Resynced(_) => Seen::Resynced,
                        Item::End(_) => Seen::Ended,
                        _ => continue,
                    };
                    let _ = tell.send((stream, Instant::now(), seen));
                }
            });
        }
        drop(tell);
        let opened = |items: &[(Instant, Seen)]| {
            items
                .iter()
                .any(|(_, seen)| matches!(seen, Seen::Opened | Seen::Ended))
        };
        until(OPEN_LIMIT, "every stream to open", || {
            log.drain();
            log.count(opened) == self.streams
        })
        .await?;
        let failed = log.count(|items| items.iter().any(|(_, s)| matches!(s, Seen::Ended)));
        if failed > 0 {
            return Err(format!("{failed} streams failed to open or ended"));
        }
        let held = || -> Vec<usize> {
            pids.iter()
                .zip(&baseline)
                .map(|(&pid, &base)| sockets(pid).saturating_sub(base))
                .collect()
        };
        until(
            Duration::from_secs(10),
            "the replicas to hold every stream",
            || held().iter().sum::<usize>() >= self.streams,
        )
        .await?;
        let held = held();
        let catalogs = open_catalogs(&url, self.catalogs).await?;

        // Kill the first replica, and sample the survivors meanwhile.
        let survivors: Vec<u32> = pids[1..].to_vec();
        let sampler = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || Peaks::sample(&survivors, &[std::process::id()], &stop))
        };
        let killed_at = Instant::now();
        let _ = fleet.replicas[0].kill();
        let _ = fleet.replicas[0].wait();
        let came_back = |items: &[(Instant, Seen)]| {
            let mut lost = false;
            for seen in after(items, killed_at) {
                match seen {
                    Seen::Relistening(..) => lost = true,
                    Seen::Resynced => lost = false,
                    _ => {}
                }
            }
            !lost
        };
        let lost = |items: &[(Instant, Seen)]| {
            after(items, killed_at).any(|seen| matches!(seen, Seen::Relistening(..)))
        };
        let waited = until(
            BACK_LIMIT,
            "every lost stream to be acknowledged again",
            || {
                log.drain();
                log.count(lost) >= held[0] && log.count(came_back) == self.streams
            },
        )
        .await;
        // The catalogs listen again too, and refetch.
        let catalogs_back = until(BACK_LIMIT, "every catalog to listen again", || {
            catalogs
                .iter()
                .all(|catalog| catalog.health().listen == ListenState::Listening)
        })
        .await;
        // A little longer, to see any late or second re-listen.
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.store(true, Ordering::Relaxed);
        let Peaks {
            accepts_per_s: peak_accepts_per_s,
            server_cpu: peak_cpu,
            clients_cpu: client_peak_cpu,
        } = sampler.join().unwrap_or_default();
        log.drain();
        waited?;
        catalogs_back?;
        let mut tools_lists_per_relisten: Vec<u64> = catalogs
            .iter()
            .map(Catalog::health)
            .filter(|health| health.discovery.fetches > 1)
            .map(|health| {
                let tools = health
                    .list(CatalogKind::Tools)
                    .map_or(0, |tools| tools.fetches);
                tools.saturating_sub(1)
            })
            .collect();
        tools_lists_per_relisten.sort_unstable();

        // One change, from whichever survivor answers.
        let published_at = Instant::now();
        let events_before_publish = log.count(|items| {
            items
                .iter()
                .any(|(at, s)| *at >= killed_at && *at < published_at && matches!(s, Seen::Event))
        });
        trigger_tool_change(&addr).await?;
        let reached = |items: &[(Instant, Seen)]| {
            after(items, published_at).any(|seen| matches!(seen, Seen::Event))
        };
        // A stream the change missed is counted, not an error.
        let _missed = until(REACH_LIMIT, "the change to reach every stream", || {
            log.drain();
            log.count(reached) == self.streams
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        log.drain();

        let (mut reacknowledged, mut noticed, mut beyond_delay) =
            (Vec::new(), Vec::new(), Vec::new());
        let (mut resynced_once, mut resynced_twice, mut most_attempts) = (0, 0, 0);
        let mut first_delays: Option<(Duration, Duration)> = None;
        for items in &log.seen {
            let from_kill: Vec<&Seen> = after(items, killed_at).collect();
            let resyncs = from_kill
                .iter()
                .filter(|s| matches!(s, Seen::Resynced))
                .count();
            if resyncs > 1 {
                resynced_twice += 1;
            }
            if !from_kill.iter().any(|s| matches!(s, Seen::Relistening(..))) {
                continue;
            }
            if resyncs == 1 {
                resynced_once += 1;
            }
            for seen in &from_kill {
                if let Seen::Relistening(attempt, delay) = seen {
                    most_attempts = most_attempts.max(*attempt);
                    if *attempt <= 1 {
                        first_delays = Some(first_delays.map_or((*delay, *delay), |(lo, hi)| {
                            (lo.min(*delay), hi.max(*delay))
                        }));
                    }
                }
            }
            let relistening = |s: &Seen| matches!(s, Seen::Relistening(..));
            if let Some((at, _)) = items
                .iter()
                .find(|(at, s)| *at >= killed_at && relistening(s))
            {
                noticed.push(*at - killed_at);
            }
            if let Some(resynced) = items
                .iter()
                .position(|(at, s)| *at >= killed_at && matches!(s, Seen::Resynced))
            {
                reacknowledged.push(items[resynced].0 - killed_at);
                if let Some((at, Seen::Relistening(_, delay))) =
                    items[..resynced].iter().rev().find(|(_, s)| relistening(s))
                {
                    beyond_delay.push((items[resynced].0 - *at).saturating_sub(*delay));
                }
            }
        }
        reacknowledged.sort_unstable();
        noticed.sort_unstable();
        beyond_delay.sort_unstable();
        Ok(HerdRun {
            streams: self.streams,
            held,
            lost: log.count(lost),
            reacknowledged,
            noticed,
            beyond_delay,
            resynced_once,
            resynced_twice,
            ended: log.count(|items| items.iter().any(|(_, s)| matches!(s, Seen::Ended))),
            most_attempts,
            first_delays,
            events_before_publish,
            received_after: log.count(reached),
            peak_accepts_per_s,
            peak_cpu,
            client_peak_cpu,
            catalogs_lost: tools_lists_per_relisten.len(),
            tools_lists_per_relisten,
        })
    }
}

/// Opens `n` live catalogs of the server at `url`, [`OPENING`] at a time.
async fn open_catalogs(url: &str, n: usize) -> Result<Vec<Catalog>, String> {
    let opening = Arc::new(Semaphore::new(OPENING));
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let (url, opening) = (url.to_owned(), Arc::clone(&opening));
        tasks.push(tokio::spawn(async move {
            let _permit = opening.acquire_owned().await;
            Catalog::http(url, CatalogOptions::default()).await
        }));
    }
    let mut catalogs = Vec::with_capacity(n);
    for task in tasks {
        let opened = task.await.map_err(|err| err.to_string())?;
        catalogs.push(opened.map_err(|err| format!("a catalog did not open: {err}"))?);
    }
    Ok(catalogs)
}
