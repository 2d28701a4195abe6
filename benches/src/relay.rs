//! The cross-replica relay (feature `relay`): two replicas in one process,
//! each a hub with a [`Relay`], joined through a real `redis-server` on a
//! free loopback port, with 10,000 watched URIs spread over them (one
//! listener per URI, half on each replica).
//!
//! Three measurements:
//!
//! - latency: a paced publisher on replica A updates a URI that a listener
//!   on A and one on B watch, one event at a time; each listener's task
//!   notes when the event reached it, so every event gives a local and a
//!   cross-replica sample, side by side;
//! - throughput: A updates every URI B watches, as fast as it can, round
//!   after round; what B's relay received per second;
//! - broker messages per event: both replicas update all 10,000 URIs; the
//!   relays' own counters give the messages the broker carried (publishes
//!   in, deliveries out) for those events.
//!
//! The anchor, [`one_channel`], is the design without per-key channels:
//! raw Redis Pub/Sub on one channel that both replicas subscribe, so that
//! each receives everything, published as the relay publishes (one
//! `PUBLISH` awaited at a time).
//!
//! Only the report uses these: no criterion bench, a broker's round trip
//! being no microbenchmark.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mcp_subscriptions::relay::{Broker, Relay, RelayOptions};
use mcp_subscriptions::{Filter, Hub, Listener, Next};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

/// The command that installs the broker, named when it is missing.
const INSTALL: &str = "apt-get install redis-server";

/// Whether `redis-server` is on `PATH`.
pub fn redis_on_path() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A `redis-server` of its own on a free loopback port, without
/// persistence; stopped when dropped.
pub struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// Starts one and waits until it takes connections.
    ///
    /// # Errors
    ///
    /// `redis-server` is not on `PATH` (the message names the command that
    /// installs it), or did not start within five seconds.
    pub fn start() -> Result<Self, String> {
        if !redis_on_path() {
            return Err(format!(
                "the relay section needs `redis-server` on PATH; install it with: {INSTALL}"
            ));
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|err| format!("no free port: {err}"))?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|err| format!("redis-server did not start: {err}"))?;
        let server = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!("redis-server took no connection on port {port}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(server)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two replicas joined through one broker, with their listeners.
pub struct Replicas {
    runtime: Runtime,
    a: Relay,
    b: Relay,
    /// Every watched URI; the odd ones are B's, the even ones A's.
    uris: Vec<String>,
    /// The URIs B's listeners watch.
    b_uris: Vec<String>,
    /// Held so that the URIs stay watched.
    _listeners: Vec<Listener>,
    /// A listener on each replica for [`LATENCY_URI`](Self::LATENCY_URI):
    /// arrivals, in order, A's `true`.
    arrivals: mpsc::UnboundedReceiver<(bool, Instant)>,
}

impl Replicas {
    /// The URI of the latency measurement, watched on both replicas.
    pub const LATENCY_URI: &str = "file:///latency";
    /// The publisher's pause between latency events, untimed.
    pub const GAP: Duration = Duration::from_micros(500);
    /// How long the replicas are left once ready, so that the catch-up of
    /// every newly subscribed key and the resync for hearing each other
    /// are over before anything is measured.
    const SETTLE: Duration = Duration::from_millis(200);

    /// Two replicas through the broker at `url`, `uris` watched URIs split
    /// between them, every relay connected and every key subscribed.
    ///
    /// # Panics
    ///
    /// When the relays are not ready within ten seconds.
    pub fn new(url: &str, uris: usize) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let _entered = runtime.enter();
        // Large enough that a round never drops, and no heartbeat inside a
        // measurement: the counters then count the events alone. The
        // resync that hearing the other replica first causes comes at once,
        // before any measurement.
        let options = RelayOptions::default()
            .with_outbound_capacity(4 * uris)
            .with_heartbeat(Duration::from_secs(3_600))
            .with_resync_jitter(Self::SETTLE / 4);
        let hub = || Hub::builder().max_listeners(uris + 1).build();
        let (hub_a, hub_b) = (hub(), hub());
        let relay = |hub: &Hub| {
            let broker = Broker::from_url(url).expect("a redis:// URL");
            Relay::spawn(hub.clone(), broker, options.clone()).expect("a new hub has no relay")
        };
        let (a, b) = (relay(&hub_a), relay(&hub_b));

        let all: Vec<String> = (0..uris)
            .map(|i| format!("file:///replica/{i:05}"))
            .collect();
        let mut listeners = Vec::with_capacity(uris);
        let mut b_uris = Vec::with_capacity(uris / 2);
        for (i, uri) in all.iter().enumerate() {
            let on_b = i % 2 == 1;
            let hub = if on_b { &hub_b } else { &hub_a };
            listeners.push(
                hub.listen(&Filter::new().with_resource(uri.as_str()))
                    .unwrap(),
            );
            if on_b {
                b_uris.push(uri.clone());
            }
        }
        let (sender, mut arrivals) = mpsc::unbounded_channel();
        for (on_a, hub) in [(true, &hub_a), (false, &hub_b)] {
            let mut listener = hub
                .listen(&Filter::new().with_resource(Self::LATENCY_URI))
                .unwrap();
            let sender = sender.clone();
            runtime.spawn(async move {
                loop {
                    let next = listener.next().await;
                    // The moment first, before anything else is done.
                    let at = Instant::now();
                    match next {
                        Next::Event(_) if sender.send((on_a, at)).is_err() => return,
                        next if next.is_terminal() => return,
                        _ => {}
                    }
                }
            });
        }
        let keys_a = (uris - b_uris.len() + 1) as u64;
        let keys_b = (b_uris.len() + 1) as u64;
        runtime.block_on(until("both relays connected, every key subscribed", || {
            let (sa, sb) = (a.stats(), b.stats());
            sa.connected
                && sb.connected
                && sa.subscribed_keys == keys_a
                && sb.subscribed_keys == keys_b
        }));
        runtime.block_on(tokio::time::sleep(Self::SETTLE));
        while arrivals.try_recv().is_ok() {}
        Self {
            runtime,
            a,
            b,
            uris: all,
            b_uris,
            _listeners: listeners,
            arrivals,
        }
    }

    /// Publishes `events` updates of [`LATENCY_URI`](Self::LATENCY_URI)
    /// on A, one at a time; for each, the nanoseconds until A's listener
    /// and until B's had it: (local, cross-replica) samples.
    pub fn latency(&mut self, events: usize) -> (Vec<u64>, Vec<u64>) {
        let (a, arrivals) = (&self.a, &mut self.arrivals);
        self.runtime.block_on(async {
            let (mut local, mut remote) = (Vec::new(), Vec::new());
            for _ in 0..events {
                let sent = Instant::now();
                a.hub().notify_resource_updated(Self::LATENCY_URI);
                let (mut at_a, mut at_b) = (None, None);
                while at_a.is_none() || at_b.is_none() {
                    let arrival = tokio::time::timeout(Duration::from_secs(5), arrivals.recv());
                    match arrival.await {
                        Ok(Some((true, at))) => at_a = Some(at),
                        Ok(Some((false, at))) => at_b = Some(at),
                        _ => panic!("an event did not reach both replicas within five seconds"),
                    }
                }
                let nanos = |at: Option<Instant>| at.map_or(0, |at| nanos(at - sent));
                local.push(nanos(at_a));
                remote.push(nanos(at_b));
                tokio::time::sleep(Self::GAP).await;
            }
            (local, remote)
        })
    }

    /// Updates every URI B watches from A, `rounds` times, each round once
    /// B has received the last; B's relayed events per second.
    pub fn throughput(&mut self, rounds: usize) -> f64 {
        let (a, b, uris) = (&self.a, &self.b, &self.b_uris);
        self.runtime.block_on(async {
            let start = Instant::now();
            let before = b.stats().received;
            for round in 1..=rounds {
                for uri in uris {
                    a.hub().notify_resource_updated(uri.as_str());
                }
                let expected = before + (round * uris.len()) as u64;
                until("B received the round", || b.stats().received >= expected).await;
            }
            (rounds * uris.len()) as f64 / start.elapsed().as_secs_f64()
        })
    }

    /// Each replica updates all the watched URIs once; the messages the
    /// broker carried per event: publishes in and deliveries out, from
    /// the relays' counters (`published`; `received` and `echo_skipped`,
    /// a replica's own message coming back on a key it watches too).
    pub fn broker_messages_per_event(&mut self) -> f64 {
        let (a, b, uris) = (&self.a, &self.b, &self.uris);
        self.runtime.block_on(async {
            let count = || {
                let (sa, sb) = (a.stats(), b.stats());
                let delivered = sa.received + sa.echo_skipped + sb.received + sb.echo_skipped;
                (sa.published + sb.published, delivered)
            };
            let (published_before, delivered_before) = count();
            for relay in [a, b] {
                for uri in uris {
                    relay.hub().notify_resource_updated(uri.as_str());
                }
            }
            let events = 2 * uris.len() as u64;
            until("every event published and delivered", || {
                let (published, delivered) = count();
                published - published_before >= events && delivered - delivered_before >= events
            })
            .await;
            // Anything more (a second delivery) arrives now or never.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let (published, delivered) = count();
            (published - published_before + delivered - delivered_before) as f64 / events as f64
        })
    }
}

/// The anchor: raw Redis Pub/Sub on one channel that `replicas`
/// subscribers all subscribe; `events` messages of `payload` published
/// `pipeline` to a round trip (1: one awaited `PUBLISH` at a time). Events
/// per second (until every subscriber had every message) and broker
/// messages per event.
pub fn one_channel(
    url: &str,
    replicas: usize,
    events: usize,
    payload: &[u8],
    pipeline: usize,
) -> (f64, f64) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = redis::Client::open(url).expect("a redis:// URL");
        let mut publisher = client.get_multiplexed_async_connection().await.unwrap();
        let received = Arc::new(AtomicU64::new(0));
        for _ in 0..replicas {
            let (mut sink, mut stream) = client.get_async_pubsub().await.unwrap().split();
            sink.subscribe("everything").await.unwrap();
            let received = received.clone();
            tokio::spawn(async move {
                let _sink = sink;
                while stream.next().await.is_some() {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let start = Instant::now();
        let mut delivered = 0;
        let mut left = events;
        while left > 0 {
            let batch = left.min(pipeline.max(1));
            left -= batch;
            let mut commands = redis::pipe();
            for _ in 0..batch {
                commands.cmd("PUBLISH").arg("everything").arg(payload);
            }
            let receivers: Vec<u64> = commands.query_async(&mut publisher).await.unwrap();
            delivered += receivers.iter().sum::<u64>();
        }
        let expected = (replicas * events) as u64;
        until("every subscriber had every message", || {
            received.load(Ordering::Relaxed) >= expected
        })
        .await;
        let rate = events as f64 / start.elapsed().as_secs_f64();
        (rate, (events as u64 + delivered) as f64 / events as f64)
    })
}

/// Waits until `condition` holds, or panics after thirty seconds naming
/// it.
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
