//! The `Relay` handle, what a hub forwards to it, and the task that runs
//! it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::broker::Broker;
use super::driver;
use super::error::RelayError;
use super::options::RelayOptions;
use super::outbound::Outbound;
use super::shared::Inner;
use super::stats::{Counters, RelayStats, bump};
use crate::audience::Audience;
use crate::event::Event;
use crate::hub::{Forward, Hub};
use crate::queue::Pushed;
use crate::util::backoff::random_u64;

/// Closes the relay, and detaches it from its hub, when the last handle
/// goes.
struct Alive(Arc<Inner>);

impl Alive {
    fn close(&self) {
        // Also breaks the cycle hub -> relay -> hub.
        self.0.hub.door().detach();
        self.0.closed.store(true, Ordering::Release);
        self.0.wake.notify_one();
        self.0.closing.notify_one();
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.close();
    }
}

/// Joins a local [`Hub`] to the other replicas' through a broker: while
/// it runs, what is published through the hub ([`Hub::publish`], every
/// `notify_*`, `notify_task`) reaches this replica's listeners at once and
/// the other replicas' through the broker. See the [module](super) docs.
///
/// Cheap to clone. The relay runs while a handle lives: its task ends, and
/// the hub publishes to its own listeners alone again, when the last
/// handle is dropped or the hub completes.
#[derive(Clone)]
#[must_use = "the relay stops when its last handle is dropped"]
pub struct Relay {
    inner: Arc<Inner>,
    _alive: Arc<Alive>,
}

impl Relay {
    /// A relay attached to `hub` through `broker`, and the task that runs
    /// it, for any tokio runtime to drive (it uses tokio's timers and, for
    /// NATS, spawns). [`spawn`](Self::spawn) spawns it for you.
    ///
    /// The hub's interest is watched from here on, so no listener opened
    /// after this call is missed, however late the task starts; events
    /// published before the task runs wait in its outbound queue.
    ///
    /// # Errors
    ///
    /// [`RelayError::AlreadyAttached`] when `hub` already has a relay.
    pub fn new(
        hub: Hub,
        broker: Broker,
        options: RelayOptions,
    ) -> Result<(Self, RelayTask), RelayError> {
        let watch = hub.watch_interest();
        let inner = Arc::new(Inner {
            hub: hub.clone(),
            origin: origin_id(),
            outbound: Mutex::new(Outbound::new(options.outbound_capacity)),
            wake: Notify::new(),
            closing: Notify::new(),
            counters: Counters::default(),
            closed: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            ended_notify: Notify::new(),
        });
        if !hub.door().attach(inner.clone()) {
            return Err(RelayError::AlreadyAttached);
        }
        let task = RelayTask(Box::pin(driver::run(inner.clone(), broker, options, watch)));
        let relay = Self {
            _alive: Arc::new(Alive(inner.clone())),
            inner,
        };
        Ok((relay, task))
    }

    /// [`new`](Self::new), with the task spawned on the current tokio
    /// runtime.
    ///
    /// # Errors
    ///
    /// [`RelayError::AlreadyAttached`] when `hub` already has a relay.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn spawn(hub: Hub, broker: Broker, options: RelayOptions) -> Result<Self, RelayError> {
        let (relay, task) = Self::new(hub, broker, options)?;
        tokio::spawn(task);
        Ok(relay)
    }

    /// Stops the relay gracefully, for a replica that is shutting down:
    /// its task sends what is still queued, then tells the other replicas
    /// that this one is leaving, so that its going costs their listeners
    /// nothing (its silence alone would resync them, as for a replica that
    /// died). Resolves once the task has ended. From then on the hub
    /// publishes to its own listeners alone, as when the last handle is
    /// dropped.
    ///
    /// When the broker is out of reach the task ends at once and says
    /// nothing; each send is bounded by [`RelayOptions::timeout`]. A task
    /// that is not running (never spawned, or its runtime gone) has nothing
    /// to wait for: the future resolves when the task's future is dropped.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the relay closing: the task goes on to
    /// its end.
    pub async fn close(&self) {
        let ended = self.inner.ended_notify.notified();
        let mut ended = std::pin::pin!(ended);
        // Registered before the flag is read: an end in between still wakes it.
        ended.as_mut().enable();
        self._alive.close();
        if !self.inner.ended.load(Ordering::Acquire) {
            ended.await;
        }
    }

    /// The local hub.
    pub fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    /// This replica's id on the bus (random, fixed for the relay's life).
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// A snapshot of the relay's counters.
    pub fn stats(&self) -> RelayStats {
        let queued = self.inner.outbound.lock().len();
        self.inner.counters.snapshot(queued)
    }

    /// Records [`stats`](Self::stats) to the installed `metrics` recorder
    /// (see [`RelayStats::record`]).
    #[cfg(feature = "metrics")]
    pub fn record_metrics(&self) {
        self.stats().record();
    }
}

/// What the hub hands the relay: each event published through it, pushed
/// onto the outbound queue under a short lock. Never blocks and never
/// awaits, whatever the broker is doing: a full queue drops its oldest
/// event (counted in [`RelayStats::outbound_dropped`]).
impl Forward for Inner {
    fn forward(&self, event: Event) {
        let pushed = self.outbound.lock().push(event);
        match pushed {
            Pushed::DroppedOldest => bump(&self.counters.outbound_dropped),
            Pushed::Coalesced => bump(&self.counters.outbound_coalesced),
            Pushed::Queued | Pushed::Disconnected | Pushed::NotOpen => {}
        }
        if pushed != Pushed::Coalesced {
            self.wake.notify_one();
        }
    }

    fn revoke(&self, audience: Audience) {
        self.outbound.lock().revoke(audience);
        self.wake.notify_one();
    }
}

impl fmt::Debug for Relay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relay")
            .field("origin", &self.inner.origin)
            .finish_non_exhaustive()
    }
}

/// The task that runs a relay: connects, subscribes, sends and receives,
/// reconnects. It ends when every [`Relay`] handle is dropped or the hub
/// completes.
#[must_use = "a relay does nothing until its task runs"]
pub struct RelayTask(Pin<Box<dyn Future<Output = ()> + Send>>);

impl Future for RelayTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl fmt::Debug for RelayTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayTask").finish_non_exhaustive()
    }
}

/// A replica's id on the bus: 64 random bits, in hex.
fn origin_id() -> String {
    format!("{:016x}", random_u64())
}
