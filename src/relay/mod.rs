//! Several replicas, one catalog: a relay that joins each replica's
//! [`Hub`](crate::Hub) to the others' through a broker the operators
//! already run: Redis Pub/Sub, or sharded pub/sub on a Redis Cluster
//! (feature `redis`), or core NATS (feature `nats`).
//!
//! A listen stream lands on replica A; the catalog changes on replica B.
//! Without a relay, A's listener never hears of it. With one attached to
//! each replica's hub, B publishes as it always does, through its hub:
//! B's own listeners get the event at once, exactly as
//! [`Hub::publish`](crate::Hub::publish) delivers, and the hub hands it to
//! the relay, whose task sends it to the broker; A's relay receives it and
//! publishes it into A's hub (to A's listeners alone: it does not go back
//! out).
//!
//! ```no_run
//! use mcp_subscriptions::relay::{Broker, Relay, RelayOptions};
//! use mcp_subscriptions::Hub;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let hub = Hub::new();
//! let broker = Broker::from_url("redis://127.0.0.1:6379")?;
//! // Attached to the hub while `relay` lives.
//! let relay = Relay::spawn(hub.clone(), broker, RelayOptions::default())?;
//! // Serve listen streams from `hub`; publish through it, as without a relay:
//! hub.notify_tools_list_changed();
//! # drop(relay);
//! # Ok(()) }
//! ```
//!
//! A hub has one relay at most, and the relay runs while a handle of it
//! lives: dropping the last one detaches it, and the hub publishes to its
//! own listeners alone again.
//!
//! # Never waiting for the broker
//!
//! [`Hub::publish`](crate::Hub::publish) delivers to the local listeners,
//! then pushes the event onto the relay's bounded outbound queue under a
//! short lock, and returns. The relay's task
//! sends from that queue, whatever it holds (up to 64 events) in one round
//! trip: a pipeline of `PUBLISH`es on Redis, one for each shard reached on
//! a Redis Cluster, the client's own buffered writes on NATS. A broker
//! that is slow, stopped or gone fills the queue, and a full queue drops
//! its oldest event (counted) instead of making a publisher wait; a "list
//! changed" or "URI updated" signal already queued is not queued twice
//! (counted as coalesced).
//!
//! # On the bus
//!
//! Each message is a versioned JSON envelope: the origin replica's id, a
//! sequence number, and the event's rendered notification with its routing
//! (the selector and succession of an extension event). A relay ignores
//! its own messages coming back. A receiving relay makes one [`Event`](crate::Event)
//! of the message, so each replica renders an event once.
//!
//! List changes, extension events without a key, and heartbeats go on one
//! catalog channel every replica subscribes to. A resource update and a
//! keyed extension event (a task's status) go on the channel of their key,
//! named by a hash of it (the full key travels inside, and the hub matches
//! it exactly). A relay subscribes a key's channel when the first local
//! listener needs the key ([`Hub::watch_interest`](crate::Hub::watch_interest))
//! and unsubscribes a grace period after the last one leaves, so a
//! replica's broker traffic grows with the keys its own listeners watch,
//! not with every event of the deployment. No pattern subscriptions.
//!
//! # Ordering
//!
//! One relay sends in publish order, and a replica receives each origin's
//! events in that order, across channels. Over Redis it reads every
//! channel on one connection. Over NATS the client hands each subject's
//! subscription its messages apart; the relay reads them all as one,
//! in batches that hold everything delivered before, and puts each batch
//! back in every origin's order (the envelope numbers an origin's
//! messages). On a Redis Cluster each node's messages come on a connection
//! of their own, so order holds within a shard (the key channels of one
//! [`RelayOptions::shards`] share a hash slot) and on the catalog channel,
//! not between them; with one shard it holds between keys too. A batch
//! that spans shards sends its first message's shard first (its
//! revocations lead it, so they go ahead of its events), then every other
//! shard's at once.
//!
//! # At most once, and resyncs
//!
//! Delivery across replicas is at most once, as in both brokers: nothing
//! is replayed, and every notification is a cue to refetch anyway. What
//! the relay promises instead is that no listener is left silently stale:
//! a listener that watches a key from before a change, published on any
//! replica, to the end hears of that change after it was made, as the
//! event itself or as a resync, within a few seconds of the moment the
//! broker, the replicas and the network between them are all healthy
//! again. The suite checks exactly that under random broker kills and
//! freezes, replica kills, partitions and cut connections, on Redis and on
//! NATS (`tests/relay/chaos.rs`; `MCP_CHAOS_SECS` makes a run longer).
//!
//! A resync is due only where a loss may have happened, so a deployment
//! that changes gracefully costs listeners nothing. A replica heard for the
//! first time has published nothing its peers could have missed (a new
//! process starts with an empty outbound queue), so it costs them nothing
//! unless it may follow a loss (below). A replica that stops gracefully
//! ([`Relay::close`], its last handle dropped, or its hub completed) first
//! sends what it still holds, then says goodbye on the catalog channel:
//! its peers drop it with nothing owed ([`RelayStats::replicas_left`]),
//! where its silence would have resynced them. So starting a replica,
//! stopping one gracefully and starting its replacement, or scaling out,
//! reaches no listener but with the events that happened.
//!
//! A resync is sent to the local listeners after a random delay within
//! [`RelayOptions::resync_jitter`]: a list change of each kind and an
//! update of each watched URI, each reaching only the listeners that asked
//! for it; and the relay asks the other replicas to send again the latest
//! events they keep for that ([`RelayOptions::with_resend`]: each live
//! task's latest status), which reach the replicas that watch their keys.
//! Several causes before it is due make one resync. Streams are
//! never closed to signal a gap. Each cause covers a schedule:
//!
//! - **This relay reconnected** (the broker went away, or stalled past
//!   [`RelayOptions::timeout`]): whatever was sent meanwhile is lost. The
//!   replicas it knew are kept across the reconnect, each with its silence
//!   clock started again, since none could be heard while away.
//! - **Another replica's catalog sequence has a gap, or its count of
//!   dropped events rose**: its messages were lost on the way, or its
//!   outbound queue overflowed while the broker was slow.
//! - **Another replica went silent** for three heartbeats, without a
//!   goodbye: it died, or it is cut off from the broker and queues what it
//!   publishes. It is then forgotten, and held outstanding (below).
//! - **A replica is heard for the first time while a replica forgotten
//!   for its silence is outstanding**, or that forgotten replica speaks
//!   again (a partition healed). A replica that died holding changes it
//!   could not send, after its peers had already resynced for its silence,
//!   leaves their listeners stale unless something follows its death: the
//!   process that takes its place is that something. That first hearing
//!   settles every outstanding replica; a forgotten one speaking again
//!   settles itself.
//! - **This relay's first connection, when the hub already has
//!   listeners**: what other replicas sent before this one could hear them
//!   went by those listeners unheard. Only this replica's listeners get it.
//! - **A listener was acknowledged before its key's channel was
//!   subscribed**: a change published elsewhere in between went by
//!   unheard, so once the subscription is confirmed the relay publishes an
//!   update of each newly subscribed URI to its local listeners at once
//!   ([`RelayStats::keys_caught_up`]). A listener of a new URI therefore
//!   gets one update right after its acknowledgement.
//!
//! Still at most once, and said here so that no one relies on it:
//! - Task statuses are sent again at a resync only by replicas whose relay
//!   has a [`RelayOptions::with_resend`] hook; without one, the next status
//!   of a task arrives as usual. A status resent reaches again the
//!   listeners that already had it. The catch-up of a newly subscribed key
//!   resends no status.
//! - A replica that dies holding an unsent change, after its peers already
//!   resynced for its silence, and is never replaced: nothing follows its
//!   death, so nothing tells its peers. Nor, when two replicas were
//!   forgotten for their silence, does one replacement's resync cover a
//!   change the other sent later, still cut off, before it died and was
//!   replaced too.
//! - A replica that stops gracefully while it cannot reach the broker says
//!   no goodbye (it could not send what it held): its silence resyncs its
//!   peers, as for a replica that died.
//! - A change whose broker message is lost while every clock looks healthy
//!   (a broker that acknowledges a publish it then drops) is seen only
//!   through the sequence gap of the origin's next catalog message.
//!
//! # Faults
//!
//! While the broker is unreachable the relay is degraded
//! ([`RelayStats::connected`] is `false`): local delivery goes on, the
//! outbound queue holds what it can, and the relay connects again after an
//! exponential backoff with jitter, then subscribes every channel its
//! listeners need. Publishing only queues: it never aborts a connect in
//! flight nor cuts a backoff short, however many publishes a second a
//! replica takes. [`RelayOptions::timeout`] bounds every broker operation:
//! it is also the redis client's connection and response timeout (Redis
//! and Redis Cluster) and the NATS client's connection and request
//! timeout, so a stall shorter than it is ridden out on the same
//! connection, and a longer one counts as a lost connection. The NATS
//! client reconnects by itself; the relay resyncs when it says it is back.
//!
//! # Limits
//!
//! A [match-everything](crate::Filter::everything) listener (the
//! notification channel) or one that takes a whole extension field
//! (`"taskIds": true`) names no key, so it receives from other replicas
//! what goes on the catalog channel and the keys some other local listener
//! watches, not every key.
//!
//! # Redis Cluster
//!
//! `Broker::redis_cluster` (or a `redis+cluster://HOST:PORT,...` URL)
//! uses sharded pub/sub: `SPUBLISH` and `SSUBSCRIBE`, over RESP3. A key's
//! channel carries a hash tag naming one of [`RelayOptions::shards`]
//! shards, so that the key channels spread over that many hash slots, and
//! each batch of subscriptions is at most one command per shard; the
//! catalog channel has a slot of its own. Each shard's tag is chosen for
//! the middle slot of its equal share of the 16,384, so the shards spread
//! over the nodes as evenly as their slot ranges do, not as a handful of
//! hashes happen to fall. A lost node connection is
//! handled as a lost broker: connect again, subscribe, resync.

mod broker;
mod channels;
mod driver;
mod envelope;
mod error;
mod handle;
mod incoming;
mod link;
#[cfg(feature = "nats")]
mod nats;
mod options;
mod origins;
mod outbound;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_cluster;
mod shared;
mod stats;
mod subscriptions;

pub use broker::Broker;
pub use error::RelayError;
pub use handle::{Relay, RelayTask};
pub use options::RelayOptions;
pub use stats::RelayStats;
