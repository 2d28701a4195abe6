//! The task that keeps a catalog: it reads the listen stream, schedules
//! fetches (`schedule.rs`), runs them (`fetcher.rs`), and publishes each new
//! snapshot.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use parking_lot::Mutex;
use rmcp::model::{DiscoverResult, ServerCapabilities};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use super::entry::{CatalogKind, Entry, Listed};
use super::fetcher::{Fetched, Fetcher};
use super::health::{FetchHealth, Health, ListenState};
use super::schedule::{Part, Schedule, Timing};
use super::snapshot::{Snapshot, Stored};
use crate::error::SubscribeError;
use crate::item::Item;
use crate::options::Relisten;
use crate::pump::sleep_until;
use crate::request::Request;
use crate::subscription::Subscription;
use mcp_subscriptions::EventKind;
use mcp_subscriptions::Filter;

/// What readers of a catalog share with its keeper.
pub(super) struct State {
    pub(super) snapshot: watch::Sender<Arc<Snapshot>>,
    pub(super) health: Mutex<Health>,
    /// Rises with every change of `health`, for whoever follows it (a
    /// catalog set's stream of changes).
    pub(super) health_changes: watch::Sender<u64>,
}

impl State {
    /// Changes the health, and tells its followers.
    fn change_health<T>(&self, change: impl FnOnce(&mut Health) -> T) -> T {
        let changed = change(&mut self.health.lock());
        self.health_changes.send_modify(|version| *version += 1);
        changed
    }
}

/// The lists a server has, by its capabilities; templates come with
/// resources.
pub(super) fn kinds(capabilities: &ServerCapabilities) -> BTreeSet<CatalogKind> {
    let mut kinds = BTreeSet::new();
    if capabilities.tools.is_some() {
        kinds.insert(CatalogKind::Tools);
    }
    if capabilities.prompts.is_some() {
        kinds.insert(CatalogKind::Prompts);
    }
    if capabilities.resources.is_some() {
        kinds.insert(CatalogKind::Resources);
        kinds.insert(CatalogKind::Templates);
    }
    kinds
}

/// The listen request that covers what the server can tell of: its list
/// changes, and the watched URIs when it takes resource subscriptions
/// (the subscription splits them over as many streams as it needs);
/// `None` when that is nothing.
pub(super) fn listen_filter(capabilities: &ServerCapabilities, watch: &[String]) -> Option<Filter> {
    let mut filter = Filter::new();
    if capabilities.tools.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter = filter.with_tools_list_changed();
    }
    if capabilities.prompts.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter = filter.with_prompts_list_changed();
    }
    let resources = capabilities.resources.as_ref();
    if resources.and_then(|c| c.list_changed) == Some(true) {
        filter = filter.with_resources_list_changed();
    }
    if resources.and_then(|c| c.subscribe) == Some(true) {
        filter = watch
            .iter()
            .fold(filter, |filter, uri| filter.with_resource(uri));
    }
    (!filter.is_empty()).then_some(filter)
}

/// The parts a granted filter tells of.
fn told_by(granted: &Filter, part: &Part) -> bool {
    match part {
        Part::Discovery => false,
        Part::List(kind) => granted.list_changed(kind.list_kind()),
        Part::Contents(uri) => granted
            .resource_subscriptions()
            .any(|watched| watched == uri),
    }
}

/// The keeper's own state.
pub(super) struct Keeper<R> {
    fetcher: Arc<Fetcher<R>>,
    state: Arc<State>,
    /// The latest snapshot, published on each change.
    working: Snapshot,
    schedule: Schedule,
    fetches: JoinSet<(Part, Result<Fetched, SubscribeError>)>,
    /// The listen stream, until it ends for good.
    listen: Option<Subscription>,
    /// What it granted; nothing once it ended.
    granted: Filter,
    /// Parts not yet fetched once, and who waits for that.
    unsettled: BTreeSet<Part>,
    settled: Option<oneshot::Sender<()>>,
}

impl<R: Request> Keeper<R> {
    /// A keeper for a server discovered as `server`, listening on
    /// `listen`; every part is due at once, and `settled` fires when each
    /// has been fetched (or failed) once.
    pub(super) fn new(
        fetcher: Arc<Fetcher<R>>,
        server: DiscoverResult,
        listen: Option<Subscription>,
        settled: oneshot::Sender<()>,
    ) -> (Self, Arc<State>) {
        let listening = listen.is_some();
        let granted = listen
            .as_ref()
            .map(Subscription::granted)
            .unwrap_or_default();
        let mut parts: Vec<Part> = kinds(&server.capabilities)
            .into_iter()
            .map(Part::List)
            .collect();
        parts.extend(fetcher.options.watch.iter().cloned().map(Part::Contents));
        let mut health = Health {
            listen: if listening {
                ListenState::Listening
            } else {
                ListenState::NotListening
            },
            discovery: FetchHealth {
                fetches: 1,
                last_success: Some(SystemTime::now()),
                ..FetchHealth::default()
            },
            lists: Default::default(),
            contents: Default::default(),
        };
        let mut schedule = Schedule::new(Timing {
            gather: fetcher.options.gather,
            debounce: fetcher.options.debounce,
            max_delay: fetcher.options.max_delay,
        });
        let now = Instant::now();
        for part in &parts {
            schedule.due_by(part, now);
            *health_of(&mut health, part) = FetchHealth {
                live: told_by(&granted, part),
                ..FetchHealth::default()
            };
        }
        let working = Snapshot::new(server);
        let state = Arc::new(State {
            snapshot: watch::Sender::new(Arc::new(working.clone())),
            health: Mutex::new(health),
            health_changes: watch::Sender::new(0),
        });
        let keeper = Self {
            fetcher,
            state: Arc::clone(&state),
            working,
            schedule,
            fetches: JoinSet::new(),
            listen,
            granted,
            unsettled: parts.into_iter().collect(),
            settled: Some(settled),
        };
        (keeper, state)
    }

    /// Runs until the catalog is dropped.
    pub(super) async fn run(mut self) {
        self.settle_if_done();
        loop {
            let now = Instant::now();
            for part in self.schedule.start_due(now) {
                let fetcher = Arc::clone(&self.fetcher);
                self.fetches.spawn(async move {
                    let fetched = fetcher.fetch(&part).await;
                    (part, fetched)
                });
            }
            let next_due = self.schedule.next_due();
            tokio::select! {
                Some(done) = self.fetches.join_next() => match done {
                    Ok((part, fetched)) => self.fetched(part, fetched),
                    // A fetch panicked: a bug in a decoder, reported as such.
                    Err(err) => tracing::error!(target: "mcp_subscriptions", %err, "a catalog fetch failed"),
                },
                Some(item) = next_item(&mut self.listen) => self.heard(item),
                () = sleep_until(next_due) => {}
            }
        }
    }

    /// An item of the listen stream.
    fn heard(&mut self, item: Item) {
        let now = Instant::now();
        match item {
            Item::Event(event) => match event.kind() {
                EventKind::ListChanged(list) => {
                    for kind in CatalogKind::ALL {
                        if kind.list_kind() == *list {
                            self.changed(&Part::List(kind), now);
                        }
                    }
                }
                EventKind::ResourceUpdated { uri } => {
                    self.changed(&Part::Contents(uri.clone()), now);
                }
                // Extensions' notifications: no part of a catalog.
                _ => {}
            },
            // Something was lost: whatever the stream tells of may have
            // changed.
            Item::Lagged(_) => self.changed_all_granted(now),
            Item::Relistening(relistening) => {
                self.state.change_health(|health| {
                    health.listen = ListenState::Relistening {
                        attempt: relistening.attempt,
                        reason: relistening.reason,
                    };
                });
            }
            // Nothing in between was replayed: refetch what the new stream
            // grants, and discovery (a restarted server may have changed).
            Item::Resynced(granted) => {
                self.granted = granted;
                self.state
                    .change_health(|health| health.listen = ListenState::Listening);
                self.changed(&Part::Discovery, now);
                self.changed_all_granted(now);
                self.mark_live();
            }
            Item::End(end) => {
                self.listen = None;
                self.granted = Filter::new();
                self.state
                    .change_health(|health| health.listen = ListenState::Ended(end));
                self.mark_live();
            }
        }
    }

    /// `part` changed, if the catalog keeps it.
    fn changed(&mut self, part: &Part, now: Instant) {
        if self.schedule.knows(part) || *part == Part::Discovery {
            self.schedule.changed(part, now);
        }
    }

    fn changed_all_granted(&mut self, now: Instant) {
        let told: Vec<Part> = self
            .parts()
            .into_iter()
            .filter(|part| told_by(&self.granted, part))
            .collect();
        for part in told {
            self.schedule.changed(&part, now);
        }
    }

    /// The parts kept: each list the server has, and each watched URI.
    fn parts(&self) -> Vec<Part> {
        let health = self.state.health.lock();
        let lists = health.lists.keys().copied().map(Part::List);
        let contents = health.contents.keys().cloned().map(Part::Contents);
        lists.chain(contents).collect()
    }

    /// Which parts a stream tells of now: the others refresh by their ttl.
    fn mark_live(&mut self) {
        let parts = self.parts();
        let now = Instant::now();
        let (granted, min_refresh) = (&self.granted, self.fetcher.options.min_refresh);
        let schedule = &mut self.schedule;
        self.state.change_health(|health| {
            for part in parts {
                let live = told_by(granted, &part);
                let kept = health_of(health, &part);
                if kept.live
                    && !live
                    && let Some(ttl) = kept.ttl
                {
                    schedule.due_by(&part, now + ttl.max(min_refresh));
                }
                kept.live = live;
            }
        });
    }

    /// One fetch ended.
    fn fetched(&mut self, part: Part, fetched: Result<Fetched, SubscribeError>) {
        let now = Instant::now();
        if !self.schedule.knows(&part) && part != Part::Discovery {
            return;
        }
        match fetched {
            Ok(fetched) => {
                let (changed, hints) = self.apply(fetched);
                let min = self.fetcher.options.min_refresh;
                let refresh = self.state.change_health(|health| {
                    let kept = health_of(health, &part);
                    kept.fetches += 1;
                    kept.last_success = Some(SystemTime::now());
                    kept.last_error = None;
                    kept.retrying = false;
                    if let Some((ttl, cache_scope)) = hints {
                        kept.ttl = ttl;
                        kept.cache_scope = cache_scope;
                    }
                    // A list no stream tells of goes stale by its ttl.
                    (!kept.live)
                        .then_some(kept.ttl)
                        .flatten()
                        .map(|ttl| ttl.max(min))
                });
                self.schedule.succeeded(&part, now, refresh);
                if changed {
                    self.publish();
                }
            }
            Err(error) => {
                let transient = error.is_transient();
                let backoff = self
                    .fetcher
                    .options
                    .subscribe
                    .relisten
                    .clone()
                    .unwrap_or_default();
                let retrying = self.schedule.failed(&part, now, |failures| {
                    transient.then(|| Relisten::delay(&backoff, failures))
                });
                tracing::debug!(target: "mcp_subscriptions", ?part, %error, retrying, "a catalog fetch failed");
                self.state.change_health(|health| {
                    let kept = health_of(health, &part);
                    kept.fetches += 1;
                    kept.last_error = Some(error);
                    kept.retrying = retrying;
                });
            }
        }
        self.unsettled.remove(&part);
        self.settle_if_done();
    }

    /// Puts what a fetch brought into the working snapshot: whether
    /// anything changed, and the cache hints of a list.
    fn apply(&mut self, fetched: Fetched) -> (bool, Option<Hints>) {
        fn list<T: Entry + Stored>(
            snapshot: &mut Snapshot,
            listed: Listed<T>,
        ) -> (bool, Option<Hints>) {
            let hints = Some((listed.ttl, listed.cache_scope));
            let list = T::list(snapshot);
            if **list == listed.items {
                return (false, hints);
            }
            *list = Arc::new(listed.items);
            (true, hints)
        }
        let snapshot = &mut self.working;
        match fetched {
            Fetched::Discovery(server) => {
                if *snapshot.server == server {
                    return (false, None);
                }
                let kinds = kinds(&server.capabilities);
                snapshot.server = Arc::new(server);
                self.kinds(&kinds);
                (true, None)
            }
            Fetched::Tools(listed) => list(snapshot, listed),
            Fetched::Prompts(listed) => list(snapshot, listed),
            Fetched::Resources(listed) => list(snapshot, listed),
            Fetched::Templates(listed) => list(snapshot, listed),
            Fetched::Contents(contents) => {
                let kept = Arc::make_mut(&mut snapshot.contents);
                match kept.iter_mut().find(|kept| kept.uri == contents.uri) {
                    Some(old) if *old == contents => return (false, None),
                    Some(old) => *old = contents,
                    None => kept.push(contents),
                }
                (true, None)
            }
        }
    }

    /// A rediscovered server lists `kinds`: a new one is fetched, one gone
    /// is emptied and no longer fetched.
    fn kinds(&mut self, kinds: &BTreeSet<CatalogKind>) {
        let now = Instant::now();
        let (schedule, snapshot) = (&mut self.schedule, &mut self.working);
        self.state.change_health(|health| {
            for kind in CatalogKind::ALL {
                let part = Part::List(kind);
                match (kinds.contains(&kind), health.lists.contains_key(&kind)) {
                    (true, false) => {
                        health.lists.insert(kind, FetchHealth::default());
                        schedule.due_by(&part, now);
                    }
                    (false, true) => {
                        health.lists.remove(&kind);
                        schedule.forget(&part);
                        match kind {
                            CatalogKind::Tools => snapshot.tools = Arc::default(),
                            CatalogKind::Prompts => snapshot.prompts = Arc::default(),
                            CatalogKind::Resources => snapshot.resources = Arc::default(),
                            CatalogKind::Templates => snapshot.templates = Arc::default(),
                        }
                    }
                    _ => {}
                }
            }
        });
    }

    /// Publishes the working snapshot as the next generation.
    fn publish(&mut self) {
        self.working.generation += 1;
        self.state
            .snapshot
            .send_replace(Arc::new(self.working.clone()));
    }

    fn settle_if_done(&mut self) {
        if self.unsettled.is_empty()
            && let Some(settled) = self.settled.take()
        {
            let _ = settled.send(());
        }
    }
}

/// A list's cache hints: its `ttlMs` and `cacheScope`.
type Hints = (Option<std::time::Duration>, Option<rmcp::model::CacheScope>);

/// The health entry of `part`, made if missing.
fn health_of<'a>(health: &'a mut Health, part: &Part) -> &'a mut FetchHealth {
    match part {
        Part::Discovery => &mut health.discovery,
        Part::List(kind) => health.lists.entry(*kind).or_default(),
        Part::Contents(uri) => health.contents.entry(uri.clone()).or_default(),
    }
}

/// The listen stream's next item; never, without one.
async fn next_item(listen: &mut Option<Subscription>) -> Option<Item> {
    match listen {
        Some(listen) => listen.next().await,
        None => std::future::pending().await,
    }
}
