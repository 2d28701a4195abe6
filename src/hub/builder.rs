//! Building a hub with options.

use std::sync::Arc;

use super::config::Config;
use super::handle::Hub;
use crate::audience::Audience;
use crate::filter::Capabilities;
use crate::queue::Overflow;
use crate::queue::Settings;
use crate::util::hook::Hook;

/// Builds a [`Hub`] with options; [`Hub::new`] takes every default.
///
/// ```
/// use mcp_subscriptions::queue::Settings;
/// use mcp_subscriptions::{Hub, Overflow};
///
/// let hub = Hub::builder()
///     .queue(Settings::new(64).with_overflow(Overflow::Disconnect))
///     .max_listeners(100)
///     .build();
/// assert_eq!(hub.queue().capacity(), 64);
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct HubBuilder {
    config: Config,
}

impl HubBuilder {
    /// Each listener's queue: its bounds and policy, unless it asks for its
    /// own (default [`Settings::default`]). [`capacity`](Self::capacity),
    /// [`overflow`](Self::overflow), [`coalesce`](Self::coalesce) and
    /// [`max_queued_bytes`](Self::max_queued_bytes) set one of them.
    pub fn queue(mut self, settings: Settings) -> Self {
        self.config.queue = settings;
        self
    }

    /// Each listener's queue capacity, unless it asks for its own
    /// (default [`DEFAULT_CAPACITY`](crate::hub::DEFAULT_CAPACITY)). Queues grow on demand up to it.
    ///
    /// # Panics
    ///
    /// When `capacity` is zero.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.config.queue = self.config.queue.with_capacity(capacity);
        self
    }

    /// Each listener's overflow policy, unless it asks for its own (default
    /// [`Overflow::DropOldest`]).
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.config.queue = self.config.queue.with_overflow(overflow);
        self
    }

    /// The most distinct resource URIs one listener may ask for (default
    /// [`DEFAULT_MAX_URIS`](crate::hub::DEFAULT_MAX_URIS)); more is refused with `-32602`.
    pub fn max_uris(mut self, max_uris: usize) -> Self {
        self.config.max_uris = max_uris;
        self
    }

    /// The most listeners open at once (default [`DEFAULT_MAX_LISTENERS`](crate::hub::DEFAULT_MAX_LISTENERS));
    /// one more is refused with `-32603` `Subscription limit reached`.
    pub fn max_listeners(mut self, max_listeners: usize) -> Self {
        self.config.max_listeners = max_listeners;
        self
    }

    /// Whether each listener's queue coalesces duplicate idempotent signals,
    /// unless it asks otherwise (default `false`). A list-changed kind, or
    /// an update of one URI, published while the same one is still queued
    /// is absorbed and counted as coalesced instead of taking a slot: under
    /// overload nothing a client needs is lost, and a queue never holds more
    /// than one copy of each signal. The pending copy keeps its place in the
    /// queue, so the signal is delivered there, after its latest publish.
    /// Events with any other params (an `_meta`, say) are never absorbed.
    ///
    /// Off by default, though a duplicate signal is almost never wanted:
    /// a coalescing listener keeps a queue of its own, so listeners alike
    /// no longer share a lane, and a publish to thousands of them becomes a
    /// push per listener instead of one (about 14 times fewer deliveries a
    /// second at 4,096 listeners alike, `BENCHMARKS.md`). The drop-oldest
    /// bound already keeps what a slow listener holds small; turn this on
    /// where few listeners are alike, or where a reader may fall far behind
    /// and must not lose a distinct signal to a run of duplicates.
    pub fn coalesce(mut self, coalesce: bool) -> Self {
        self.config.queue = self.config.queue.with_coalesce(coalesce);
        self
    }

    /// The most bytes (the rendered size of its events) each listener's
    /// queue holds, unless it asks for its own (default
    /// [`DEFAULT_MAX_QUEUED_BYTES`](crate::hub::DEFAULT_MAX_QUEUED_BYTES)). A
    /// push that would exceed it applies the listener's overflow policy, as
    /// a full queue does; an event larger than the bound is still queued,
    /// alone.
    pub fn max_queued_bytes(mut self, max_queued_bytes: usize) -> Self {
        self.config.queue = self.config.queue.with_max_bytes(max_queued_bytes);
        self
    }

    /// The most bytes all listeners' queues hold together (default: no
    /// hub-wide bound). A push that would exceed it applies the pushing
    /// listener's overflow policy to that listener's own queue. Checked per
    /// push without a lock across listeners, so concurrent publishers may
    /// overshoot it by one event each.
    pub fn max_hub_queued_bytes(mut self, max_hub_queued_bytes: usize) -> Self {
        self.config.max_hub_queued_bytes = Some(max_hub_queued_bytes);
        self
    }

    /// What the server advertises; requests are narrowed to it (default:
    /// every core capability, no extension).
    pub fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.config.capabilities = capabilities;
        self
    }

    /// Calls `hook` with each audience this hub revokes, whether through
    /// [`Hub::revoke`] here or from another replica through a relay, before
    /// its streams are ended.
    ///
    /// Ending the streams is the hub's half of a revocation; refusing the
    /// credential is the authorizer's, or the next listen with it is
    /// served again. An authorizer that checks its own table of
    /// credentials (rather than asking the identity provider each time)
    /// marks the audience's principals revoked here, so that every replica
    /// refuses them from then on.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use mcp_subscriptions::{Audience, Hub};
    ///
    /// let revoked = Arc::new(Mutex::new(Vec::new()));
    /// let hub = Hub::builder()
    ///     .on_revoke({
    ///         let revoked = revoked.clone();
    ///         move |audience: &Audience| {
    ///             revoked.lock().unwrap().extend(audience.principals().iter().cloned());
    ///         }
    ///     })
    ///     .build();
    /// hub.revoke(&Audience::principal("alice"));
    /// assert_eq!(revoked.lock().unwrap()[0].as_str(), "alice");
    /// ```
    ///
    /// The hook runs on the thread that revokes (for another replica's
    /// revocation, the relay's task): keep it short, and never revoke from
    /// it.
    pub fn on_revoke(mut self, hook: impl Fn(&Audience) + Send + Sync + 'static) -> Self {
        self.config.on_revoke = Some(Hook(Arc::new(hook)));
        self
    }

    /// Builds the hub.
    pub fn build(self) -> Hub {
        Hub::from_config(self.config)
    }
}

impl Hub {
    /// A builder for a hub with options.
    pub fn builder() -> HubBuilder {
        HubBuilder::default()
    }
}
