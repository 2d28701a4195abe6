//! The `Hub` handle: opening listeners, publishing, completing, and reading
//! the counters.

use std::fmt;
use std::task::Waker;

use super::config::Config;
use super::entry::Entry;
#[cfg(any_relay)]
use super::forward::Door;
use super::id::ListenerId;
use super::interest::InterestWatch;
use super::lane::LaneKey;
use super::listener::Listener;
use super::own_queue::OwnQueue;
use super::publish::PublishReport;
use super::shared::Shared;
use super::stats::{HubStats, ListenerStats};
use crate::audience::Audience;
use crate::context::OpenContext;
use crate::error::OpenError;
use crate::event::Event;
use crate::filter::{Capabilities, Filter};
use crate::queue::Settings;
use crate::source::{Opened, Source};
use crate::sync::{Arc, Ordering};

/// The subscription hub: publish changes, and every listener whose filter
/// matches gets them in its own bounded queue.
///
/// `Hub` is a cheap handle (clone it into every task that publishes).
/// Publishing is a plain function: it never blocks on a listener, never
/// awaits, and needs no runtime.
///
/// # How an event travels
///
/// [`Hub::publish`] takes an [`Event`] (already rendered to JSON once), reads
/// the routing index for the listeners whose granted filter matches it, and
/// pushes it into each one's bounded queue under that listener's
/// [`Overflow`](crate::Overflow) policy, waking the reader only if it is waiting. The cost is
/// proportional to the listeners that match, not to all listeners.
///
/// # Listeners alike share a lane
///
/// Listeners granted the same filter, with the same capacity and byte bound,
/// [`Overflow::DropOldest`](crate::Overflow::DropOldest) and no [coalescing](crate::hub::HubBuilder::coalesce)
/// (the defaults), would each hold the same events in the same order. From
/// the second of them on, they share one ring of those events instead, each
/// reading from its own position, as `tokio::sync::broadcast` receivers do:
/// a publish reaches them with one push per 64 of them (past that, alike
/// listeners open another lane, so that readers do not all wait on one
/// lock), and each reader finds for itself what eviction cost it. (The
/// first keeps a queue of its own, so a listener alike to no other pays
/// for no ring.)
///
/// Nothing observable changes. Each listener keeps its capacity and byte
/// bound, its [`Next::Lagged`](crate::Next::Lagged) reports and its exact
/// counts, and a [`PublishReport`] still counts every listener that lost an
/// event to the push. These keep a queue of their own: a listener that
/// disconnects on overflow, coalesces, counts against a
/// [hub-wide byte bound](crate::hub::HubBuilder::max_hub_queued_bytes), or asks
/// for extension events or everything; and every listener, once an event
/// with a [`Succession`](crate::Succession) is about to reach a shared ring
/// (the listeners sharing rings then move to queues of their own, holding
/// what they had yet to read).
///
/// # Waking readers that keep up
///
/// Where readers keep up with the publisher (on many cores they do), each
/// of them is asleep when each event comes, and waking them one by one
/// from the publisher's thread would be serial work that caps one
/// publisher's rate. So a push into a lane wakes at most two of the
/// members that wait and hands the others' wake-ups to the lane: each
/// member that reads an event wakes up to eight more, on its own thread,
/// until the lane's waiters are all awake. A member that goes away passes
/// every wake-up on, and a push that finds the last wave unfinished wakes
/// what is left itself, so nothing waits for a wake-up that never comes;
/// but a woken member that does not read (its task stalled, or busy with
/// something else while registered through its [`Stream`] impl) delays the
/// members after it until one of them reads or the next event. Listeners
/// with queues of their own are woken by the publisher, one each.
///
/// [`Stream`]: futures_core::Stream
///
/// # Why locks and not an actor task
///
/// All listener state has one owner, the hub, reached only through its
/// handle, as an actor's would be. But the owner is state behind short locks
/// rather than a task with a mailbox: a mailbox would make every publish an
/// allocation and a hop to another task, would need a runtime to publish at
/// all, and would turn "publish never waits for a listener" into "publish
/// waits for the mailbox". Here the registry is behind one read-write lock
/// that publishers share (many at once) and that only opening, closing and
/// completing take for writing; each listener's queue, and each shared
/// ring, has its own mutex, held for a push or a pop and never across an
/// `.await` or a wake-up. So nothing runs in the background and there is no
/// future to spawn: the hub needs no runtime, and any executor, or none, can
/// drive its readers.
///
/// # Ordering
///
/// Events published by one thread reach each listener in publish order: a
/// publish has pushed into every matching queue before it returns. (A
/// duplicate absorbed by a [coalescing](crate::hub::HubBuilder::coalesce) queue is
/// delivered at the place of its pending copy.)
///
/// # Closing and completing
///
/// A [`Listener`] that is dropped or [closed](Listener::close) is
/// unregistered at once. [`Hub::complete`] refuses new listeners and lets
/// each listener drain what it holds before it reports [`Next::Complete`](crate::Next::Complete);
/// dropping the last `Hub` handle completes the hub the same way.
///
/// # Example
///
/// ```
/// use mcp_subscriptions::{Filter, Hub, Next};
///
/// let hub = Hub::new();
/// let mut listener = hub.listen(&Filter::new().with_resource("file:///a")).unwrap();
///
/// let report = hub.notify_resource_updated("file:///a");
/// assert_eq!(report.queued, 1);
/// assert_eq!(hub.notify_resource_updated("file:///b").matched, 0);
///
/// let Some(Next::Event(event)) = listener.try_next() else { panic!() };
/// assert_eq!(event.method(), "notifications/resources/updated");
/// assert_eq!(hub.stats().events.delivered, 1);
/// ```
pub struct Hub {
    shared: Arc<Shared>,
}

impl Hub {
    /// A hub with every default: capacity [`DEFAULT_CAPACITY`](crate::hub::DEFAULT_CAPACITY) per listener,
    /// [`Overflow::DropOldest`](crate::Overflow::DropOldest), at most [`DEFAULT_MAX_LISTENERS`](crate::hub::DEFAULT_MAX_LISTENERS) listeners
    /// and [`DEFAULT_MAX_URIS`](crate::hub::DEFAULT_MAX_URIS) URIs each, and every
    /// core capability advertised.
    pub fn new() -> Self {
        Self::from_config(Config::default())
    }

    pub(crate) fn from_config(config: Config) -> Self {
        Self {
            shared: Arc::new(Shared::new(config)),
        }
    }

    /// Opens a listener for `requested` with the hub's default capacity and
    /// policy. The listener's [filter](Listener::filter) is the request
    /// narrowed by the hub's capabilities.
    ///
    /// # Errors
    ///
    /// See [`listen_with`](Self::listen_with).
    pub fn listen(&self, requested: &Filter) -> Result<Listener, OpenError> {
        self.listen_with(requested, &OpenContext::default())
    }

    /// Opens a listener for `requested`, with `context` overriding its
    /// capacity or policy. Its principal and labels are the context's: the
    /// [audiences](crate::Audience) it is in.
    ///
    /// # Errors
    ///
    /// - [`OpenError::InvalidParams`] when the request names more distinct
    ///   URIs than the hub's limit;
    /// - [`OpenError::LimitReached`] when the hub already serves its maximum
    ///   number of listeners;
    /// - [`OpenError::Completed`] after [`complete`](Self::complete).
    pub fn listen_with(
        &self,
        requested: &Filter,
        context: &OpenContext,
    ) -> Result<Listener, OpenError> {
        let config = &self.shared.config;
        let filter = config.grant(requested)?;
        let settings = context.queue.unwrap_or(config.queue);
        let membership = context.membership();
        let lane = LaneKey::of(&filter, &membership, settings, self.shared.budget.is_some());
        let mut registry = self.shared.registry.write();
        if registry.completed {
            return Err(OpenError::Completed);
        }
        if registry.entries.len() >= config.max_listeners {
            return Err(OpenError::LimitReached {
                limit: config.max_listeners,
            });
        }
        let id = ListenerId(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let queue = || OwnQueue::new(id, settings, self.shared.budget.clone());
        let (inbox, unpaired) = registry.place(lane, &filter, &membership, queue);
        let entry = Arc::new(Entry {
            id,
            filter,
            inbox,
            membership,
            unpaired,
        });
        registry.admit(entry.clone());
        let watchers = registry.interest.take_wakers();
        drop(registry);
        watchers.into_iter().for_each(Waker::wake);
        Ok(Listener::new(self.shared.clone(), entry))
    }

    /// Delivers `event` to every listener whose granted filter matches it,
    /// each under its own overflow policy, and reports what happened. With
    /// a relay attached (module `relay`, features `redis` and `nats`), the
    /// event is then queued for the other replicas too (the report is this
    /// hub's), unless its audience names only listeners of this hub.
    ///
    /// Never blocks on a listener and never awaits: a full queue applies its
    /// policy instead of waiting. The only waits are for the short locks a
    /// concurrent open, close or push holds.
    pub fn publish(&self, event: Event) -> PublishReport {
        let Some(forward) = self.shared.door.forward() else {
            return self.publish_here(event);
        };
        let report = self.publish_here(event.clone());
        if let Some(event) = event.for_other_replicas() {
            forward.forward(event);
        }
        report
    }

    /// Where a relay attaches.
    #[cfg(any_relay)]
    pub(crate) fn door(&self) -> &Door {
        &self.shared.door
    }

    /// [`publish`](Self::publish) to this hub's listeners alone: what a
    /// relay publishes of other replicas' events, which must not go back
    /// out.
    pub(crate) fn publish_here(&self, event: Event) -> PublishReport {
        self.shared.publish_here(event)
    }

    /// Publishes `notifications/tools/list_changed`.
    pub fn notify_tools_list_changed(&self) -> PublishReport {
        self.publish(Event::tools_list_changed())
    }

    /// Publishes `notifications/prompts/list_changed`.
    pub fn notify_prompts_list_changed(&self) -> PublishReport {
        self.publish(Event::prompts_list_changed())
    }

    /// Publishes `notifications/resources/list_changed`.
    pub fn notify_resources_list_changed(&self) -> PublishReport {
        self.publish(Event::resources_list_changed())
    }

    /// Publishes `notifications/resources/updated` for `uri`.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) -> PublishReport {
        self.publish(Event::resource_updated(uri))
    }

    /// Ends every stream `audience` names (every stream, for everyone) with
    /// [`StreamError::Revoked`](crate::error::StreamError::Revoked): what
    /// each held is discarded, and its reader gets the error next, which a
    /// listen stream sends as [`REVOKED_ERROR_CODE`](crate::error::REVOKED_ERROR_CODE)
    /// with `data: {"reason":"revoked"}`. Returns how many of this hub's
    /// listeners it ended: 0 for a principal or label no open stream has.
    /// With a relay attached, every other replica ends its own streams of
    /// the audience too (listeners named by id are this hub's alone).
    ///
    /// Ending the streams is the hub's half of a revocation. Refusing the
    /// credential is the authorizer's: the next listen with the same token
    /// is authorized as before unless the authorizer refuses it, so revoke
    /// the credential where it is checked (the identity provider, the token
    /// table) too. [`HubBuilder::on_revoke`](crate::hub::HubBuilder::on_revoke)
    /// tells each replica of every revocation, its own and the others'.
    ///
    /// ```
    /// use mcp_subscriptions::audience::Principal;
    /// use mcp_subscriptions::{Audience, Filter, Hub, Next, OpenContext};
    ///
    /// let hub = Hub::new();
    /// let alice = OpenContext::default().with_principal(Principal::new("alice"));
    /// let mut listener = hub.listen_with(&Filter::new().with_tools_list_changed(), &alice).unwrap();
    /// assert_eq!(hub.revoke(&Audience::principal("alice")), 1);
    /// assert!(matches!(listener.try_next(), Some(Next::Failed(_))));
    /// assert_eq!(hub.revoke(&Audience::principal("mallory")), 0, "no stream of hers is open");
    /// ```
    pub fn revoke(&self, audience: &Audience) -> usize {
        let ended = self.shared.revoke_here(audience);
        if let Some(forward) = self.shared.door.forward() {
            forward.revoke(audience.without_listeners());
        }
        ended
    }

    /// [`revoke`](Self::revoke) among this hub's listeners alone: what a
    /// relay does for another replica's revocation.
    #[cfg(any_relay)]
    pub(crate) fn revoke_here(&self, audience: &Audience) -> usize {
        self.shared.revoke_here(audience)
    }

    /// Shuts the hub down gracefully: refuses new listeners, stops matching,
    /// and lets every listener drain what it holds before it reports
    /// [`Next::Complete`](crate::Next::Complete). Idempotent.
    pub fn complete(&self) {
        let (waiters, watchers, first, open) = {
            let mut registry = self.shared.registry.write();
            let (first, open) = (!registry.completed, registry.entries.len());
            (
                registry.complete(),
                registry.interest.take_wakers(),
                first,
                open,
            )
        };
        if first {
            tracing::info!(target: "mcp_subscriptions", listeners = open, "hub completed");
        }
        for waiter in waiters {
            waiter.wake();
        }
        watchers.into_iter().for_each(Waker::wake);
    }

    /// Reports the keys (resource URIs, extension keys such as task ids)
    /// this hub's listeners watch as that set changes: the first listener
    /// naming a key arriving, the last one leaving (see [`InterestWatch`]).
    /// What a relay subscribes its broker channels by.
    pub fn watch_interest(&self) -> InterestWatch {
        let mut registry = self.shared.registry.write();
        let registry = &mut *registry;
        let pending = registry.interest.watch(registry.entries.values());
        if registry.completed {
            registry.interest.complete();
        }
        InterestWatch::new(pending)
    }

    /// Whether [`complete`](Self::complete) was called (or every handle
    /// dropped).
    pub fn is_complete(&self) -> bool {
        self.shared.registry.read().completed
    }

    /// Each listener's queue settings, unless it asked for its own.
    pub fn queue(&self) -> Settings {
        self.shared.config.queue
    }

    /// The most bytes all listeners' queues hold together, when bounded.
    pub fn max_hub_queued_bytes(&self) -> Option<usize> {
        self.shared.config.max_hub_queued_bytes
    }

    /// The most listeners open at once.
    pub fn max_listeners(&self) -> usize {
        self.shared.config.max_listeners
    }

    /// The capabilities requests are narrowed to.
    pub fn capabilities(&self) -> &Capabilities {
        &self.shared.config.capabilities
    }

    /// `base` with the subscription bits this hub serves, for a 2026-07-28
    /// client: set only under a capability `base` declares, never more than
    /// the hub serves (see [`Capabilities::advertise_to`] for a client of
    /// an older revision).
    ///
    /// ```
    /// use mcp_subscriptions::Hub;
    /// use rmcp::model::ServerCapabilities;
    ///
    /// let hub = Hub::new();
    /// let caps = hub.advertise(ServerCapabilities::builder().enable_resources().build());
    /// let resources = caps.resources.unwrap();
    /// assert_eq!((resources.list_changed, resources.subscribe), (Some(true), Some(true)));
    /// assert!(caps.tools.is_none(), "a server without tools claims none");
    /// ```
    pub fn advertise(
        &self,
        base: rmcp::model::ServerCapabilities,
    ) -> rmcp::model::ServerCapabilities {
        self.capabilities().advertise(base)
    }

    /// The most distinct resource URIs one listener may ask for.
    pub fn max_uris(&self) -> usize {
        self.shared.config.max_uris
    }

    /// A snapshot of the hub's counters.
    pub fn stats(&self) -> HubStats {
        let registry = self.shared.registry.read();
        let mut events = registry.retired;
        let mut max_queue_depth = registry.retired_max_depth;
        let mut queued_bytes = 0;
        for entry in registry.entries.values() {
            let snap = entry.inbox.snapshot();
            events += snap.counts;
            max_queue_depth = max_queue_depth.max(snap.max_depth);
            queued_bytes += snap.bytes as u64;
        }
        HubStats {
            listeners_active: registry.entries.len() as u64,
            listeners_opened: registry.opened,
            listeners_closed: registry.closed,
            events_published: self.shared.published.load(Ordering::Relaxed),
            events,
            max_queue_depth,
            queued_bytes,
        }
    }

    /// A snapshot of every open listener, ordered by id.
    pub fn listeners(&self) -> Vec<ListenerStats> {
        let registry = self.shared.registry.read();
        let mut listeners: Vec<_> = registry.entries.values().map(|e| e.stats()).collect();
        listeners.sort_unstable_by_key(|l| l.id);
        listeners
    }

    /// Records [`stats`](Self::stats) to the installed `metrics` recorder
    /// (see [`HubStats::record`]).
    #[cfg(feature = "metrics")]
    pub fn record_metrics(&self) {
        self.stats().record();
    }
}

impl Default for Hub {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for Hub {
    fn clone(&self) -> Self {
        self.shared.handles.fetch_add(1, Ordering::Relaxed);
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        // AcqRel so that the handle that sees the count reach zero sees every
        // other handle's work; completing then ends the listeners, which
        // could otherwise wait forever for a publisher that no longer exists.
        if self.shared.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.complete();
        }
    }
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Source for Hub {
    type Handle = Listener;

    fn capabilities(&self) -> Capabilities {
        self.shared.config.capabilities.clone()
    }

    fn max_uris(&self) -> usize {
        self.shared.config.max_uris
    }

    fn open(
        &self,
        requested: &Filter,
        context: &OpenContext,
    ) -> Result<Opened<Listener>, OpenError> {
        let listener = self.listen_with(requested, context)?;
        Ok(Opened::new(listener.filter().clone(), listener))
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests;
