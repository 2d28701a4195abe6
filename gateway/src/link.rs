//! One upstream as a scope holds it: its catalog, the upstream URIs and
//! task ids downstream demand holds (its [`Watch`]es), and the task that
//! keeps one upstream listen covering exactly them.
//!
//! # Wanted and listened
//!
//! The demand hooks change the *wanted* set: an attach adds a watch and
//! waits until a listen that covers it was acknowledged upstream; a detach
//! (after the grace) takes one away. Each change raises the wanted
//! generation and wakes the task, which brings the upstream listen to the
//! wanted set in one step however many changes came meanwhile (a thousand
//! attaches arriving together make one filter change, not a thousand):
//! the first URI opens the listen, a change of set goes through
//! [`set_filter`](mcp_subscriptions_client::Subscription::set_filter) (the new streams
//! acknowledged before the old ones close, copies dropped), and the last
//! URI gone cancels it. It then publishes the generation it reached, with
//! what the upstream granted, for the attaches waiting on it.
//!
//! # Refusals
//!
//! A URI the upstream leaves out of its grant, or a filter it refuses, is
//! refused to the attach that asked for it, with the upstream's own error,
//! and taken out of the wanted set. When a change adding several URIs is
//! refused as a whole, each is tried alone, so that one bad URI refuses
//! only the listens that need it. A failure to reach the upstream refuses
//! only the URIs not yet attached: those already held stay wanted, and the
//! listen is opened again with backoff.
//!
//! # Resync
//!
//! Whenever the upstream listen may have missed something (it re-listened
//! after an abrupt end, its buffer lagged, or it was opened again after
//! ending), each URI it covers is published downstream as updated, so that
//! downstream listeners refetch, and each task's status is fetched
//! (`tasks/get`) and published: never silence.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmcp::model::{DetailedTask, ErrorData, GetTaskResult};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::members::Members;
use crate::stats::UpstreamStats;
use crate::upstream::Upstream;
use crate::watch::{self, Watch};
use mcp_subscriptions::Backoff;
use mcp_subscriptions::Hub;
use mcp_subscriptions::{Event, EventKind, tasks};
use mcp_subscriptions_client::catalog::{Catalog, CatalogSet, ListenState, Namespace};
use mcp_subscriptions_client::{FilterHandle, Item, SubscribeError, Subscription};

/// How long the task waits before opening a listen that ended or failed
/// again, doubling per failure: as the client re-listens.
const REOPEN: Backoff = Backoff {
    initial: Duration::from_millis(500),
    max: Duration::from_secs(30),
};

/// What downstream demand holds of the upstream: each watch with how many
/// hold it (the principals of a scope that shares credentials each attach
/// it; one principal's hooks of a key never overlap).
#[derive(Default)]
struct Wanted {
    watches: BTreeMap<Watch, usize>,
    /// Raised at each change of `watches`.
    generation: u64,
    /// Why a watch was refused, until its attach reads it.
    refused: HashMap<Watch, ErrorData>,
}

/// What the task last brought the upstream listen to.
#[derive(Default)]
struct Applied {
    /// The wanted generation it reached.
    generation: u64,
    /// What the upstream granted then.
    listening: Arc<BTreeSet<Watch>>,
}

/// One upstream, shared by the demand hooks, the task and the gateway.
pub(super) struct Link {
    pub(super) upstream: Upstream,
    /// The gateway's catalogs, this upstream's under its name.
    catalogs: CatalogSet,
    wanted: Mutex<Wanted>,
    wake: Notify,
    applied: tokio::sync::watch::Sender<Applied>,
    stats: Mutex<UpstreamStats>,
}

impl Link {
    pub(super) fn new(upstream: Upstream, catalogs: CatalogSet) -> Self {
        let stats = UpstreamStats::new(&upstream.name);
        Self {
            upstream,
            catalogs,
            wanted: Mutex::default(),
            wake: Notify::new(),
            applied: tokio::sync::watch::Sender::new(Applied::default()),
            stats: Mutex::new(stats),
        }
    }

    /// The upstream's catalog, once it has joined.
    pub(super) fn catalog(&self) -> Result<Arc<Catalog>, SubscribeError> {
        self.catalogs.get(&self.upstream.name).ok_or_else(|| {
            SubscribeError::Connect(format!("upstream {} is not up yet", self.upstream.name))
        })
    }

    /// Adds `watch` to the wanted set and waits until the upstream listen
    /// covers it.
    ///
    /// # Errors
    ///
    /// The upstream's refusal, or that it left the watch out of its grant.
    pub(super) async fn attach(&self, watch: Watch) -> Result<(), ErrorData> {
        let generation = {
            let mut wanted = self.wanted.lock();
            wanted.refused.remove(&watch);
            *wanted.watches.entry(watch.clone()).or_default() += 1;
            wanted.generation += 1;
            wanted.generation
        };
        self.wake.notify_one();
        let mut applied = self.applied.subscribe();
        let listening = Arc::clone(
            &applied
                .wait_for(|applied| applied.generation >= generation)
                .await
                .map_err(|_| ErrorData::internal_error("the gateway is closed", None))?
                .listening,
        );
        if let Some(refused) = self.wanted.lock().refused.remove(&watch) {
            return Err(refused);
        }
        if listening.contains(&watch) {
            Ok(())
        } else {
            Err(not_granted(&self.upstream.name, &watch))
        }
    }

    /// One holder of `watch` fewer: the last one takes it out of the
    /// wanted set.
    pub(super) fn detach(&self, watch: &Watch) {
        {
            let mut wanted = self.wanted.lock();
            let Some(holders) = wanted.watches.get_mut(watch) else {
                return;
            };
            *holders -= 1;
            if *holders > 0 {
                return;
            }
            wanted.watches.remove(watch);
            wanted.generation += 1;
        }
        self.wake.notify_one();
    }

    /// Its figures now.
    pub(super) fn stats(&self) -> UpstreamStats {
        let mut stats = self.stats.lock().clone();
        stats.lists_live = self
            .catalog()
            .is_ok_and(|catalog| matches!(catalog.health().listen, ListenState::Listening));
        stats
    }

    /// Keeps the upstream listen covering the wanted set until the
    /// gateway is dropped, publishing what it hears into `hub` for
    /// its scope's `members`.
    pub(super) async fn run(self: Arc<Self>, hub: Hub, members: Members) {
        let mut listen = Listen {
            link: self,
            hub,
            members,
            subscription: None,
            listening: BTreeSet::new(),
            attached: BTreeSet::new(),
            failures: 0,
            retry_at: None,
            resync_when_open: false,
        };
        loop {
            let retry_at = listen.retry_at;
            tokio::select! {
                Some(item) = next_item(&mut listen.subscription) => listen.heard(item),
                () = listen.link.wake.notified() => listen.apply().await,
                () = sleep_until(retry_at), if retry_at.is_some() => {
                    listen.retry_at = None;
                    listen.apply().await;
                }
            }
        }
    }
}

/// The task's own state: the upstream listen and what it covers.
struct Listen {
    link: Arc<Link>,
    hub: Hub,
    /// Whom the events heard are for: the scope's members, or everyone.
    members: Members,
    subscription: Option<(Subscription, FilterHandle)>,
    /// What the upstream granted the listen (empty without one).
    listening: BTreeSet<Watch>,
    /// Watches whose attach was answered `Ok` and that are still wanted: a
    /// failure never refuses them.
    attached: BTreeSet<Watch>,
    /// Opens failed in a row, for the backoff.
    failures: u32,
    retry_at: Option<Instant>,
    /// The listen ended: once open again, what it covers is resynced.
    resync_when_open: bool,
}

impl Listen {
    /// Brings the upstream listen to the wanted set, and publishes the
    /// generation reached.
    async fn apply(&mut self) {
        let (target, generation): (BTreeSet<Watch>, u64) = {
            let wanted = self.link.wanted.lock();
            (wanted.watches.keys().cloned().collect(), wanted.generation)
        };
        self.attached.retain(|watch| target.contains(watch));
        if target != self.listening || (self.subscription.is_none() && !target.is_empty()) {
            match self.change_to(&target).await {
                Ok(()) => self.failures = 0,
                Err(error) => self.failed(&target, error).await,
            }
        }
        self.attached
            .extend(target.intersection(&self.listening).cloned());
        self.refuse_ungranted(&target);
        self.record();
        self.link.applied.send_replace(Applied {
            generation,
            listening: Arc::new(self.listening.clone()),
        });
    }

    /// Opens, changes or cancels the upstream listen so it asks for
    /// `target`.
    async fn change_to(&mut self, target: &BTreeSet<Watch>) -> Result<(), SubscribeError> {
        if target.is_empty() {
            if let Some((subscription, _)) = self.subscription.take() {
                subscription.cancel().await;
            }
            self.listening.clear();
            // No one is left to resync.
            self.resync_when_open = false;
            return Ok(());
        }
        let filter = watch::filter(target);
        let Some((_, handle)) = &self.subscription else {
            let subscription = self.link.catalog()?.subscribe(&filter).await?;
            let handle = subscription.filter_handle();
            self.listening = watch::granted(&subscription.granted());
            self.subscription = Some((subscription, handle));
            if std::mem::take(&mut self.resync_when_open) {
                self.resync(&self.listening.clone());
            }
            return Ok(());
        };
        // The old streams are read meanwhile, so nothing they bring waits.
        let handle = handle.clone();
        let changing = handle.set_filter(&filter);
        tokio::pin!(changing);
        let granted = loop {
            tokio::select! {
                granted = &mut changing => break granted?,
                Some(item) = next_item(&mut self.subscription) => self.heard(item),
            }
        };
        self.listening = watch::granted(&granted);
        Ok(())
    }

    /// `error` came of changing to `target`: refuse what it refuses.
    async fn failed(&mut self, target: &BTreeSet<Watch>, error: SubscribeError) {
        let new: Vec<Watch> = target.difference(&self.attached).cloned().collect();
        let refusal = matches!(error, SubscribeError::Refused(_));
        if refusal && new.len() > 1 {
            // Refused as a whole: try each new watch alone beside what
            // holds.
            let mut holding: BTreeSet<Watch> =
                self.listening.intersection(target).cloned().collect();
            for watch in new {
                let mut with = holding.clone();
                with.insert(watch.clone());
                match self.change_to(&with).await {
                    Ok(()) => holding = with,
                    Err(error) => {
                        self.refuse(&watch, upstream_error(&self.link.upstream.name, &error));
                    }
                }
            }
            if self.listening != holding {
                // What was let go meanwhile, with nothing new to carry it.
                let _ = self.change_to(&holding).await;
            }
            return;
        }
        let refused = upstream_error(&self.link.upstream.name, &error);
        for watch in &new {
            self.refuse(watch, refused.clone());
        }
        if !refusal && !self.attached.is_empty() {
            // The URIs held stay wanted: open again, with backoff.
            self.failures += 1;
            self.retry_at = Some(Instant::now() + REOPEN.delay(self.failures));
            self.resync_when_open = true;
        }
        tracing::warn!(target: "mcp_subscriptions", upstream = %self.link.upstream.name, %error, "an upstream listen change failed");
    }

    /// Refuses the wanted watches the upstream did not grant.
    fn refuse_ungranted(&mut self, target: &BTreeSet<Watch>) {
        if self.subscription.is_none() {
            return;
        }
        let ungranted: Vec<Watch> = target
            .iter()
            .filter(|watch| !self.listening.contains(*watch) && !self.attached.contains(*watch))
            .cloned()
            .collect();
        for watch in ungranted {
            let error = not_granted(&self.link.upstream.name, &watch);
            self.refuse(&watch, error);
        }
    }

    /// Takes `watch` out of the wanted set, with why for its attach.
    fn refuse(&mut self, watch: &Watch, error: ErrorData) {
        // The attach refused is never detached: it goes now.
        let mut wanted = self.link.wanted.lock();
        if wanted.watches.remove(watch).is_some() {
            wanted.refused.insert(watch.clone(), error);
            self.link.stats.lock().refused += 1;
        }
    }

    /// One item of the upstream listen.
    fn heard(&mut self, item: Item) {
        match item {
            Item::Event(event) => {
                let heard = match event.kind() {
                    EventKind::ResourceUpdated { uri } => {
                        self.publish(self.link.upstream.namespace.uri_down(uri));
                        true
                    }
                    EventKind::Extension { method, .. } if method == tasks::METHOD => {
                        self.publish_status(&event)
                    }
                    _ => false,
                };
                if heard {
                    self.link.stats.lock().events += 1;
                }
            }
            // Lost upstream: whatever it covers may have changed.
            Item::Lagged(_) => self.resync(&self.listening.clone()),
            Item::Relistening(_) => self.link.stats.lock().relistens += 1,
            Item::Resynced(granted) => {
                self.listening = watch::granted(&granted);
                self.resync(&self.listening.clone());
            }
            Item::End(end) => {
                tracing::warn!(target: "mcp_subscriptions", upstream = %self.link.upstream.name, ?end, "an upstream listen ended");
                self.subscription = None;
                self.listening.clear();
                self.failures += 1;
                self.retry_at = Some(Instant::now() + REOPEN.delay(self.failures));
                self.resync_when_open = true;
            }
            // An item of a later client: nothing the gateway acts on.
            _ => {}
        }
        self.record();
    }

    /// Tells downstream that each of `watches` may have changed: each URI
    /// as updated, and each task's status as `tasks/get` gives it now.
    fn resync(&self, watches: &BTreeSet<Watch>) {
        let mut tasks = Vec::new();
        for watch in watches {
            match watch {
                Watch::Uri(uri) => self.publish(self.link.upstream.namespace.uri_down(uri)),
                Watch::Task(id) => tasks.push(id.clone()),
            }
        }
        if !tasks.is_empty()
            && let Ok(catalog) = self.link.catalog()
        {
            tokio::spawn(self.statuses().fetch(catalog, tasks));
        }
        self.link.stats.lock().resyncs += 1;
    }

    /// Tells the scope's downstream streams that `uri` (downstream) was
    /// updated.
    fn publish(&self, uri: String) {
        self.hub
            .publish(Event::resource_updated(uri).with_audience(self.members.audience()));
    }

    /// Publishes a `notifications/tasks` heard upstream to the scope's
    /// downstream streams, its task named downstream; whether it was one.
    fn publish_status(&self, event: &Event) -> bool {
        let Ok(notification) = serde_json::from_str::<Value>(&event.to_plain_json()) else {
            return false;
        };
        let Ok(task) = serde_json::from_value::<DetailedTask>(notification["params"].clone())
        else {
            return false;
        };
        self.statuses().publish(task);
        true
    }

    /// Where the scope's task statuses go.
    fn statuses(&self) -> TaskStatuses {
        TaskStatuses {
            hub: self.hub.clone(),
            members: self.members.clone(),
            namespace: Arc::clone(&self.link.upstream.namespace),
        }
    }

    fn record(&self) {
        let max = self
            .link
            .upstream
            .options
            .subscribe
            .max_uris_per_stream
            .max(1);
        let mut stats = self.link.stats.lock();
        stats.uris.clear();
        stats.tasks.clear();
        for watch in &self.listening {
            match watch {
                Watch::Uri(uri) => stats.uris.push(uri.clone()),
                Watch::Task(id) => stats.tasks.push(id.clone()),
            }
        }
        stats.uri_streams = match &self.subscription {
            Some(_) => stats.uris.len().div_ceil(max).max(1),
            None => 0,
        };
        if let Some((subscription, _)) = &self.subscription {
            stats.duplicates = subscription.stats().duplicates;
        }
    }
}

fn not_granted(upstream: &str, watch: &Watch) -> ErrorData {
    ErrorData::invalid_params(format!("upstream {upstream} does not serve {watch}"), None)
}

/// Where a scope's task statuses go: its hub, for its members, their
/// task ids named downstream.
struct TaskStatuses {
    hub: Hub,
    members: Members,
    namespace: Arc<dyn Namespace>,
}

impl TaskStatuses {
    fn publish(&self, mut task: DetailedTask) {
        task.task.task_id = self.namespace.name_down(&task.task.task_id);
        self.hub
            .publish(tasks::event(&task).with_audience(self.members.audience()));
    }

    /// Fetches each of `ids`' status upstream (`tasks/get`) and publishes
    /// it; a task the upstream no longer knows is left as it was.
    async fn fetch(self, catalog: Arc<Catalog>, ids: Vec<String>) {
        for id in ids {
            let mut params = serde_json::Map::new();
            params.insert("taskId".into(), Value::String(id));
            let Ok(result) = catalog.request("tasks/get", params).await else {
                continue;
            };
            if let Ok(result) = serde_json::from_value::<GetTaskResult>(result) {
                self.publish(result.task);
            }
        }
    }
}

/// The error a downstream listen is refused with: the upstream's own, or
/// why it could not be reached.
pub(super) fn upstream_error(upstream: &str, error: &SubscribeError) -> ErrorData {
    match error {
        SubscribeError::Refused(error) => error.clone(),
        other => ErrorData::internal_error(format!("upstream {upstream}: {other}"), None),
    }
}

async fn next_item(subscription: &mut Option<(Subscription, FilterHandle)>) -> Option<Item> {
    match subscription {
        Some((subscription, _)) => subscription.next().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
