//! A chaos run: three replicas with listeners on each, publishing at
//! random while the broker is killed and frozen and replicas are killed
//! (and started again), partitioned from the broker or cut off from it,
//! on a schedule drawn from a seed. Then everything heals, and every
//! listener that watched a key from before a publish to the end must hear
//! of that publish after it was made, as the event itself or as a resync,
//! within a few seconds of the first moment everything is healthy again.
//!
//! A short run per broker is part of the suite; a long one on demand:
//! `MCP_CHAOS_SECS=300 cargo test --all-features --test relay chaos`
//! (`MCP_CHAOS_SEED` replays a schedule; each run prints its seed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_subscriptions::relay::{Relay, RelayOptions};
use mcp_subscriptions::{Event, EventKind, Filter, Hub, ListKind, Next};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::broker::{Broker, Kind};
use crate::proxy::Proxy;
use crate::replicas::{Replica, options};

const REPLICAS: usize = 3;
const URIS: usize = 5;

/// How long after everything healed every listener must have heard of
/// every publish it should.
const HEALED_WITHIN: Duration = Duration::from_secs(10);

/// What a listener can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Tools,
    Uri(usize),
}

impl Key {
    fn event(self) -> Event {
        match self {
            Key::Tools => Event::tools_list_changed(),
            Key::Uri(i) => Event::resource_updated(uri(i)),
        }
    }

    fn of(event: &Event) -> Option<Self> {
        match event.kind() {
            EventKind::ListChanged(ListKind::Tools) => Some(Key::Tools),
            EventKind::ResourceUpdated { uri } => uri
                .strip_prefix("file:///")
                .and_then(|i| i.parse().ok())
                .map(Key::Uri),
            _ => None,
        }
    }
}

fn uri(i: usize) -> String {
    format!("file:///{i}")
}

/// Each replica's listeners: two overlapping filters.
fn filters() -> [Vec<Key>; 2] {
    [
        vec![Key::Tools, Key::Uri(0), Key::Uri(1), Key::Uri(2)],
        vec![Key::Uri(2), Key::Uri(3), Key::Uri(4)],
    ]
}

/// One listener's life: what it watches, when it was acknowledged, whether
/// it lasted to the end, and what it heard when (`None`: it lagged, so it
/// was told it may have missed anything).
struct Watch {
    keys: Vec<Key>,
    opened: Instant,
    lasted: bool,
    heard: Vec<(Option<Key>, Instant)>,
}

struct Publish {
    key: Key,
    at: Instant,
}

#[derive(Default)]
struct Log {
    watches: Vec<Watch>,
    publishes: Vec<Publish>,
}

impl Log {
    /// Each publish a listener that watched its key from before it to the
    /// end has not heard of since: (publish, listener) indices.
    fn unheard(&self) -> Vec<(usize, usize)> {
        let mut unheard = Vec::new();
        for (p, publish) in self.publishes.iter().enumerate() {
            for (w, watch) in self.watches.iter().enumerate() {
                let owed =
                    watch.lasted && watch.opened < publish.at && watch.keys.contains(&publish.key);
                let heard = watch
                    .heard
                    .iter()
                    .any(|(key, at)| *at >= publish.at && key.is_none_or(|key| key == publish.key));
                if owed && !heard {
                    unheard.push((p, w));
                }
            }
        }
        unheard
    }
}

/// A replica's slot: its proxy to the broker, and the replica in it now,
/// with or without a relay.
struct Slot {
    proxy: Proxy,
    node: Option<Node>,
    relayed: bool,
    /// Its listeners' entries in the log.
    watches: Vec<usize>,
}

enum Node {
    Relayed(Replica),
    Alone(Hub),
}

impl Node {
    fn hub(&self) -> &Hub {
        match self {
            Node::Relayed(replica) => &replica.hub,
            Node::Alone(hub) => hub,
        }
    }

    fn relay(&self) -> Option<&Relay> {
        match self {
            Node::Relayed(replica) => Some(&replica.relay),
            Node::Alone(_) => None,
        }
    }
}

impl Slot {
    fn start(&mut self, broker: &Broker, options: &RelayOptions, log: &Arc<Mutex<Log>>) {
        let url = match broker.kind {
            Kind::Redis => format!("redis://127.0.0.1:{}", self.proxy.port),
            Kind::Nats => format!("nats://127.0.0.1:{}", self.proxy.port),
        };
        let node = if self.relayed {
            Node::Relayed(Replica::start(&url, options.clone()))
        } else {
            Node::Alone(Hub::new())
        };
        self.watches.clear();
        for keys in filters() {
            let filter = keys.iter().fold(Filter::new(), |filter, key| match key {
                Key::Tools => filter.with_tools_list_changed(),
                Key::Uri(i) => filter.with_resource(uri(*i)),
            });
            let mut listener = node.hub().listen(&filter).unwrap();
            let index = {
                let mut log = log.lock();
                log.watches.push(Watch {
                    keys,
                    opened: Instant::now(),
                    lasted: true,
                    heard: Vec::new(),
                });
                log.watches.len() - 1
            };
            self.watches.push(index);
            let log = Arc::clone(log);
            tokio::spawn(async move {
                loop {
                    let heard = match listener.next().await {
                        Next::Event(event) => Key::of(&event),
                        Next::Lagged(_) => None,
                        _ => return,
                    };
                    let at = Instant::now();
                    log.lock().watches[index].heard.push((heard, at));
                }
            });
        }
        self.node = Some(node);
    }

    /// Kills the replica in it: its listeners end with it.
    fn kill(&mut self, log: &Mutex<Log>) {
        let Some(node) = self.node.take() else { return };
        let mut log = log.lock();
        for index in &self.watches {
            log.watches[*index].lasted = false;
        }
        drop(log);
        node.hub().complete();
        if let Node::Relayed(replica) = node {
            replica.kill();
        }
    }
}

/// A fault in progress, and when it heals.
#[derive(Clone, Copy)]
enum Fault {
    BrokerDown(Instant),
    BrokerFrozen(Instant),
    ReplicaDead(usize, Instant),
    Partitioned(usize, Instant),
    /// A partitioned replica dies then, holding what it could not send.
    Doomed(usize, Instant),
}

/// What a run found.
struct Outcome {
    seed: u64,
    publishes: usize,
    faults: usize,
    unheard: Vec<String>,
    healed_in: Option<Duration>,
}

/// A run's settings.
struct Chaos {
    kind: Kind,
    length: Duration,
    /// Whether faults happen (`false`: publishing alone).
    faulty: bool,
    /// A replica that runs without a relay.
    alone: Option<usize>,
    /// How long after healing everything must have been heard.
    patience: Duration,
}

impl Chaos {
    fn new(kind: Kind, length: Duration) -> Self {
        Self {
            kind,
            length,
            faulty: true,
            alone: None,
            patience: HEALED_WITHIN,
        }
    }
}

async fn run(chaos: Chaos) -> Outcome {
    let Chaos {
        kind,
        length,
        alone,
        patience,
        ..
    } = chaos;
    let seed = std::env::var("MCP_CHAOS_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("chaos on {kind:?} for {length:?}: MCP_CHAOS_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut broker = Broker::start(kind);
    let options = options("chaos");
    let log = Arc::new(Mutex::new(Log::default()));
    let mut slots: Vec<Slot> = (0..REPLICAS)
        .map(|i| Slot {
            proxy: Proxy::start(broker.port),
            node: None,
            relayed: alone != Some(i),
            watches: Vec::new(),
        })
        .collect();
    for slot in &mut slots {
        slot.start(&broker, &options, &log);
    }
    crate::waiting::until("every relay connected", || {
        slots.iter().all(|slot| {
            slot.node
                .as_ref()
                .and_then(Node::relay)
                .is_none_or(|relay| relay.stats().connected)
        })
    })
    .await;

    let mut faults: Vec<Fault> = Vec::new();
    let mut started = 0;
    let end = Instant::now() + length;
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while Instant::now() < end {
        tick.tick().await;
        let now = Instant::now();
        // Heal what is due.
        let mut deaths = Vec::new();
        faults.retain(|fault| match *fault {
            Fault::BrokerDown(until) if until <= now => {
                broker.restart();
                false
            }
            Fault::BrokerFrozen(until) if until <= now => {
                broker.resume();
                false
            }
            Fault::ReplicaDead(i, until) if until <= now => {
                slots[i].start(&broker, &options, &log);
                false
            }
            Fault::Partitioned(i, until) if until <= now => {
                slots[i].proxy.heal();
                false
            }
            Fault::Doomed(i, at) if at <= now => {
                if slots[i].node.is_some() {
                    slots[i].kill(&log);
                    let restart = now + Duration::from_millis(rng.random_range(200..1_500));
                    deaths.push(Fault::ReplicaDead(i, restart));
                }
                false
            }
            _ => true,
        });
        faults.extend(deaths);
        // Publish on a live replica.
        let live: Vec<usize> = (0..REPLICAS).filter(|i| slots[*i].node.is_some()).collect();
        if !live.is_empty() {
            let slot = &slots[live[rng.random_range(0..live.len())]];
            let key = if rng.random_bool(0.3) {
                Key::Tools
            } else {
                Key::Uri(rng.random_range(0..URIS))
            };
            let at = Instant::now();
            slot.node.as_ref().unwrap().hub().publish(key.event());
            log.lock().publishes.push(Publish { key, at });
        }
        // Now and then, a new fault.
        if !chaos.faulty || !rng.random_bool(0.015) {
            continue;
        }
        let heal = now + Duration::from_millis(rng.random_range(200..2_000));
        let broker_faulty = faults
            .iter()
            .any(|f| matches!(f, Fault::BrokerDown(_) | Fault::BrokerFrozen(_)));
        let i = rng.random_range(0..REPLICAS);
        // A partitioned replica may die, so that what it held unsent dies
        // with it; a dead one is only started again.
        let dead = faults
            .iter()
            .any(|f| matches!(f, Fault::ReplicaDead(j, _) if *j == i));
        let partitioned = faults
            .iter()
            .any(|f| matches!(f, Fault::Partitioned(j, _) if *j == i));
        match rng.random_range(0..6) {
            0 if !broker_faulty => {
                broker.kill();
                faults.push(Fault::BrokerDown(heal));
            }
            1 if !broker_faulty => {
                broker.stop();
                faults.push(Fault::BrokerFrozen(heal));
            }
            2 if !dead => {
                slots[i].kill(&log);
                faults.push(Fault::ReplicaDead(i, heal));
            }
            3 if !dead && !partitioned => {
                slots[i].proxy.hold();
                faults.push(Fault::Partitioned(i, heal));
            }
            // Cut off long enough to be taken as gone, then dead.
            5 if !dead && !partitioned => {
                slots[i].proxy.hold();
                let dies = now + Duration::from_millis(rng.random_range(800..1_500));
                faults.push(Fault::Doomed(i, dies));
                faults.push(Fault::Partitioned(i, dies + Duration::from_millis(500)));
            }
            4 => slots[i].proxy.cut(),
            _ => continue,
        }
        started += 1;
    }

    // Everything heals at once: from here on, all must be heard.
    for fault in faults {
        match fault {
            Fault::BrokerDown(_) => broker.restart(),
            Fault::BrokerFrozen(_) => broker.resume(),
            Fault::ReplicaDead(i, _) => slots[i].start(&broker, &options, &log),
            Fault::Partitioned(i, _) => slots[i].proxy.heal(),
            Fault::Doomed(..) => {}
        }
    }
    let healed = Instant::now();
    let mut healed_in = None;
    while healed.elapsed() < patience {
        if log.lock().unheard().is_empty() {
            healed_in = Some(healed.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = log.lock();
    let unheard = log
        .unheard()
        .into_iter()
        .map(|(p, w)| {
            let (publish, watch) = (&log.publishes[p], &log.watches[w]);
            format!(
                "{:?} published at +{:?}, unheard by a listener opened at +{:?}",
                publish.key,
                publish.at.duration_since(log.publishes[0].at),
                watch.opened.duration_since(log.publishes[0].at),
            )
        })
        .collect();
    Outcome {
        seed,
        publishes: log.publishes.len(),
        faults: started,
        unheard,
        healed_in,
    }
}

/// The length of a run: `MCP_CHAOS_SECS`, or `default` seconds.
fn length(default: u64) -> Duration {
    Duration::from_secs(
        std::env::var("MCP_CHAOS_SECS")
            .ok()
            .and_then(|secs| secs.parse().ok())
            .unwrap_or(default),
    )
}

fn assert_all_heard(outcome: &Outcome) {
    assert!(
        outcome.unheard.is_empty(),
        "MCP_CHAOS_SEED={}: {} of {} publishes unheard ({} faults), first: {:#?}",
        outcome.seed,
        outcome.unheard.len(),
        outcome.publishes,
        outcome.faults,
        &outcome.unheard[..outcome.unheard.len().min(10)]
    );
    println!(
        "{} publishes, {} faults, all heard {:?} after healing",
        outcome.publishes,
        outcome.faults,
        outcome.healed_in.unwrap()
    );
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_redis_leaves_no_listener_stale() {
    assert_all_heard(&run(Chaos::new(Kind::Redis, length(8))).await);
}

#[cfg(feature = "nats")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_on_nats_leaves_no_listener_stale() {
    assert_all_heard(&run(Chaos::new(Kind::Nats, length(8))).await);
}

/// The check can fail: a replica running without a relay never hears the
/// others, nor they it, and the run says so.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_finds_a_replica_without_the_relay() {
    let outcome = run(Chaos {
        faulty: false,
        alone: Some(1),
        patience: Duration::from_secs(2),
        ..Chaos::new(Kind::Redis, Duration::from_secs(2))
    })
    .await;
    assert!(
        !outcome.unheard.is_empty(),
        "{} publishes",
        outcome.publishes
    );
}
