//! Several servers' catalogs under one roof, each named, with a merged view
//! in which each server's [`Namespace`] tells its names and URIs apart
//! (`server/tool`, `server+file:///a.md` under the default [`Prefix`]), and
//! servers that join when they come up.

use std::mem::Discriminant;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::endpoint::Endpoint;
use super::health::{FetchHealth, Health, ListenState};
use super::live::Catalog;
use super::merged::Merged;
use super::namespace::{Namespace, Prefix};
use super::options::CatalogOptions;
use super::set_changes::{Changes, ServerHealth, SetChange, SetChanges};
use crate::error::SubscribeError;

/// The longest a set waits between two tries of a server (its re-listen
/// backoff is capped here), so that one that comes up joins within about
/// that.
pub const JOIN_EVERY: std::time::Duration = std::time::Duration::from_secs(4);

/// Named catalogs of several servers, in the order they were added.
///
/// Each is kept by its own task, so one server failing (unreachable,
/// restarting, refusing) leaves the others untouched: its last snapshot
/// stays in the merged view, marked as not up ([`Merged::is_up`]; its
/// catalog's [`health`](Catalog::health) says what is wrong), and
/// [`Merged::up`] is the view without it, until it is back. A server added by its [`Endpoint`] that is not up yet
/// *joins*: the set tries it in the background with the catalog's
/// re-listen backoff (capped at [`JOIN_EVERY`], for its whole life in the
/// set), serves the others meanwhile, and brings it into the merged view
/// when it comes up ([`ServerHealth::Joining`] until then).
///
/// Cloning it is cheap: the clones are one set. Servers are added and
/// removed at any time, from any clone; the catalogs stop when the last
/// clone is dropped.
#[derive(Clone, Default)]
pub struct CatalogSet {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    members: Mutex<Vec<Member>>,
    /// Rises with every change of the merged view (a catalog, or who is
    /// in it), so that [`CatalogSet::changed`] has one thing to wait for.
    version: watch::Sender<u64>,
    /// Rises with every change of a server's state: added, retrying,
    /// joined, failed ([`CatalogSet::settled`] waits on it).
    states: watch::Sender<u64>,
    changes: Changes,
    /// Tells one joining apart from a later one under the same name.
    joins: AtomicU64,
}

struct Member {
    name: String,
    namespace: Arc<dyn Namespace>,
    state: State,
}

enum State {
    /// Being opened in the background.
    Joining {
        join: u64,
        attempts: u32,
        last_error: Option<String>,
        task: Aborting,
    },
    /// Open, and its changes forwarded to the set's.
    Live {
        catalog: Arc<Catalog>,
        /// Whether its listen says the server is there
        /// ([`ListenState::is_up`]), kept by the forwarding task.
        up: Arc<AtomicBool>,
        _forward: Aborting,
    },
    /// Opening failed in a way trying again cannot cure.
    Failed(SubscribeError),
}

/// A task stopped with its owner.
struct Aborting(Option<JoinHandle<()>>);

impl Aborting {
    fn new(task: JoinHandle<()>) -> Self {
        Self(Some(task))
    }

    /// Lets the task run to its end.
    fn detach(mut self) {
        self.0.take();
    }
}

impl Drop for Aborting {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

impl CatalogSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of `servers`, each under the [`Prefix`] of its name and kept
    /// with `options`, HTTP and stdio alike. Returns once each server has
    /// joined, has failed, or has failed a first attempt (it goes on
    /// joining): one server down delays the others by at most its first
    /// attempt. [`health`](Self::health) tells which is where; a name the
    /// prefix cannot carry is [`ServerHealth::Failed`].
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn open(
        servers: impl IntoIterator<Item = (String, Endpoint)>,
        options: CatalogOptions,
    ) -> Self {
        let set = Self::new();
        for (name, endpoint) in servers {
            if let Err(error) = set.add(name.clone(), endpoint, options.clone()) {
                set.fail(name, error);
            }
        }
        set.settled().await;
        set
    }

    /// Waits until no server is on its first attempt: each has joined, has
    /// failed, or has failed once and goes on joining.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    pub async fn settled(&self) {
        let mut states = self.shared.states.subscribe();
        let first_attempt = |members: &[Member]| {
            members
                .iter()
                .any(|m| matches!(m.state, State::Joining { attempts: 0, .. }))
        };
        // The set holds the sender: waiting cannot fail.
        let _ = states
            .wait_for(|_| !first_attempt(&self.shared.members.lock()))
            .await;
    }

    /// Adds the server at `endpoint` as `name`, under the [`Prefix`] of its
    /// name, kept with `options`; it joins the merged view once its catalog
    /// is open ([`ServerHealth::Joining`] until then). A server of that
    /// name is replaced.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::Invalid`] for a name the prefix cannot carry
    /// ([`Prefix::is_valid_name`]).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn add(
        &self,
        name: impl Into<String>,
        endpoint: Endpoint,
        options: CatalogOptions,
    ) -> Result<(), SubscribeError> {
        let name = valid(name.into())?;
        self.add_with(name.clone(), endpoint, options, Prefix::new(name));
        Ok(())
    }

    /// [`add`](Self::add), its names and URIs mapped by `namespace`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn add_with(
        &self,
        name: impl Into<String>,
        endpoint: Endpoint,
        mut options: CatalogOptions,
        namespace: impl Namespace,
    ) {
        let name = name.into();
        let join = self.shared.joins.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::downgrade(&self.shared);
        cap_backoff(&mut options);
        let told = options.subscribe.on_retry.take();
        let (retried_name, retried) = (name.clone(), shared.clone());
        options.subscribe = options.subscribe.with_on_retry(move |relistening| {
            if let Some(hook) = &told {
                (hook.0)(relistening);
            }
            if let Some(shared) = retried.upgrade() {
                shared.retried(&retried_name, join, &relistening.reason);
            }
        });
        let opened_name = name.clone();
        let task = tokio::spawn(async move {
            let opened = endpoint.catalog(options).await;
            if let Some(shared) = shared.upgrade() {
                shared.opened(&opened_name, join, opened);
            }
        });
        self.shared.put(Member {
            name,
            namespace: Arc::new(namespace),
            state: State::Joining {
                join,
                attempts: 0,
                last_error: None,
                task: Aborting::new(task),
            },
        });
    }

    /// Adds an open `catalog` as `name`, under the [`Prefix`] of its name;
    /// a server of that name is replaced.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::Invalid`] for a name the prefix cannot carry
    /// ([`Prefix::is_valid_name`]).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn insert(&self, name: impl Into<String>, catalog: Catalog) -> Result<(), SubscribeError> {
        let name = valid(name.into())?;
        self.insert_with(name.clone(), catalog, Prefix::new(name));
        Ok(())
    }

    /// [`insert`](Self::insert), its names and URIs mapped by `namespace`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn insert_with(
        &self,
        name: impl Into<String>,
        catalog: Catalog,
        namespace: impl Namespace,
    ) {
        let name = name.into();
        let state = self.shared.live(&name, catalog);
        self.shared.put(Member {
            name: name.clone(),
            namespace: Arc::new(namespace),
            state,
        });
        self.shared.tell(SetChange::Joined(name));
    }

    /// Removes the server called `name`; its catalog stops once no one
    /// holds it. Whether there was one.
    pub fn remove(&self, name: &str) -> bool {
        let removed = {
            let mut members = self.shared.members.lock();
            let at = members.iter().position(|m| m.name == name);
            at.map(|at| members.remove(at))
        };
        if removed.is_some() {
            self.shared.tell(SetChange::Left(name.to_owned()));
        }
        removed.is_some()
    }

    /// The open catalog of the server called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Catalog>> {
        let members = self.shared.members.lock();
        match &members.iter().find(|m| m.name == name)?.state {
            State::Live { catalog, .. } => Some(Arc::clone(catalog)),
            _ => None,
        }
    }

    /// The namespace of the server called `name`.
    pub fn namespace(&self, name: &str) -> Option<Arc<dyn Namespace>> {
        let members = self.shared.members.lock();
        members
            .iter()
            .find(|m| m.name == name)
            .map(|m| Arc::clone(&m.namespace))
    }

    /// Every server's name and where it stands, in the order added.
    pub fn health(&self) -> Vec<(String, ServerHealth)> {
        let members = self.shared.members.lock();
        members
            .iter()
            .map(|m| {
                let health = match &m.state {
                    State::Joining {
                        attempts,
                        last_error,
                        ..
                    } => ServerHealth::Joining {
                        attempts: *attempts,
                        last_error: last_error.clone(),
                    },
                    State::Live { catalog, .. } => ServerHealth::Live(Box::new(catalog.health())),
                    State::Failed(error) => ServerHealth::Failed(error.clone()),
                };
                (m.name.clone(), health)
            })
            .collect()
    }

    /// The server a merged tool or prompt name belongs to (the first whose
    /// namespace claims it), and the name there.
    pub fn claim_name(&self, name: &str) -> Option<(String, String)> {
        let members = self.shared.members.lock();
        members
            .iter()
            .filter(|m| !matches!(m.state, State::Failed(_)))
            .find_map(|m| Some((m.name.clone(), m.namespace.name_up(name)?)))
    }

    /// The server a merged resource URI belongs to, and the URI there.
    pub fn claim_uri(&self, uri: &str) -> Option<(String, String)> {
        let members = self.shared.members.lock();
        members
            .iter()
            .filter(|m| !matches!(m.state, State::Failed(_)))
            .find_map(|m| Some((m.name.clone(), m.namespace.uri_up(uri)?)))
    }

    /// The open catalogs' snapshots now, merged.
    pub fn snapshot(&self) -> Merged {
        let version = *self.shared.version.borrow();
        let members = self.shared.members.lock();
        Merged::new(
            version,
            members.iter().filter_map(|m| match &m.state {
                State::Live { catalog, up, .. } => Some((
                    m.name.clone(),
                    catalog.snapshot(),
                    Arc::clone(&m.namespace),
                    up.load(Ordering::Relaxed),
                )),
                _ => None,
            }),
        )
    }

    /// Waits until the merged view changed since `seen` (a catalog, who
    /// is in it, or whether a server is up), and returns it then.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    pub async fn changed(&self, seen: &Merged) -> Merged {
        let mut version = self.shared.version.subscribe();
        // The set holds the sender: waiting cannot fail.
        let _ = version.wait_for(|v| *v > seen.version()).await;
        self.snapshot()
    }

    /// The set's changes from now on: servers joining, retrying, failing
    /// and leaving, and each open catalog's typed diffs, by server.
    pub fn changes(&self) -> SetChanges {
        self.shared.changes.subscribe()
    }

    fn fail(&self, name: String, error: SubscribeError) {
        self.shared.put(Member {
            namespace: Arc::new(Prefix::new(name.clone())),
            state: State::Failed(error.clone()),
            name: name.clone(),
        });
        self.shared.tell(SetChange::Failed(name, error));
    }
}

impl Shared {
    /// Puts `member` in, in place of one of the same name.
    fn put(&self, member: Member) {
        let replaced = {
            let mut members = self.members.lock();
            match members.iter_mut().find(|m| m.name == member.name) {
                Some(old) => Some(std::mem::replace(old, member)),
                None => {
                    members.push(member);
                    None
                }
            }
        };
        if let Some(old) = replaced {
            self.tell(SetChange::Left(old.name));
        }
        self.bump();
        self.states.send_modify(|v| *v += 1);
    }

    /// A live state for `catalog`, its changes and the changes of its
    /// health's [gist](gist) forwarded to the set's, and whether it is up
    /// kept.
    fn live(self: &Arc<Self>, name: &str, catalog: Catalog) -> State {
        let catalog = Arc::new(catalog);
        let mut changes = catalog.changes();
        let mut health = catalog.health_changes();
        let first = catalog.health();
        let up = Arc::new(AtomicBool::new(first.listen.is_up()));
        let (shared, name, kept, kept_up) = (
            Arc::downgrade(self),
            name.to_owned(),
            Arc::clone(&catalog),
            Arc::clone(&up),
        );
        let forward = tokio::spawn(async move {
            let mut told = gist(&first);
            loop {
                let (change, changed_the_view) = tokio::select! {
                    change = changes.next() => match change {
                        Some(change) => (SetChange::Changed(name.clone(), change), true),
                        None => return,
                    },
                    Ok(()) = health.changed() => {
                        let now = kept.health();
                        if gist(&now) == told {
                            continue;
                        }
                        told = gist(&now);
                        let is_up = now.listen.is_up();
                        let flipped = kept_up.swap(is_up, Ordering::Relaxed) != is_up;
                        (SetChange::Health(name.clone(), Box::new(now)), flipped)
                    }
                };
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                shared.tell(change);
                if changed_the_view {
                    shared.bump();
                }
            }
        });
        State::Live {
            catalog,
            up,
            _forward: Aborting::new(forward),
        }
    }

    /// A joining server's attempt failed.
    fn retried(&self, name: &str, join: u64, reason: &str) {
        let attempts = {
            let mut members = self.members.lock();
            let Some(State::Joining {
                attempts,
                last_error,
                ..
            }) = members
                .iter_mut()
                .find(|m| m.name == name)
                .map(|m| &mut m.state)
                .filter(|state| matches!(state, State::Joining { join: j, .. } if *j == join))
            else {
                return;
            };
            *attempts += 1;
            *last_error = Some(reason.to_owned());
            *attempts
        };
        self.tell(SetChange::Retrying {
            server: name.to_owned(),
            attempts,
            reason: reason.to_owned(),
        });
        // Not a change of the merged view.
        self.states.send_modify(|v| *v += 1);
    }

    /// A joining server's catalog opened, or failed for good.
    fn opened(self: &Arc<Self>, name: &str, join: u64, opened: Result<Catalog, SubscribeError>) {
        let state = match opened {
            Ok(catalog) => self.live(name, catalog),
            Err(error) => State::Failed(error),
        };
        let change = match &state {
            State::Failed(error) => SetChange::Failed(name.to_owned(), error.clone()),
            _ => SetChange::Joined(name.to_owned()),
        };
        {
            let mut members = self.members.lock();
            let Some(member) = members.iter_mut().find(|m| {
                m.name == name && matches!(m.state, State::Joining { join: j, .. } if j == join)
            }) else {
                return;
            };
            // Its own task is the one running this: not aborted, it ends
            // once this returns.
            if let State::Joining { task, .. } = std::mem::replace(&mut member.state, state) {
                task.detach();
            }
        }
        self.tell(change);
        self.bump();
        self.states.send_modify(|v| *v += 1);
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    fn tell(&self, change: SetChange) {
        self.changes.tell(change);
    }
}

/// What of a catalog's health a set tells of: its listen's state, and
/// which parts are stale. A fetch count rising is no news, and neither is
/// each attempt of a re-listen.
fn gist(health: &Health) -> (Discriminant<ListenState>, Vec<bool>) {
    let stale = health
        .lists
        .values()
        .chain(health.contents.values())
        .map(FetchHealth::is_stale)
        .collect();
    (std::mem::discriminant(&health.listen), stale)
}

/// Caps the re-listen backoff at [`JOIN_EVERY`].
fn cap_backoff(options: &mut CatalogOptions) {
    if let Some(relisten) = &mut options.subscribe.relisten {
        relisten.max = relisten.max.min(JOIN_EVERY);
    }
}

fn valid(name: String) -> Result<String, SubscribeError> {
    if Prefix::is_valid_name(&name) {
        return Ok(name);
    }
    Err(SubscribeError::Invalid(format!(
        "{name:?} cannot name a server: it must start with an ASCII letter and hold only letters, digits, '-' and '.'"
    )))
}

impl std::fmt::Debug for CatalogSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogSet")
            .field("servers", &self.health())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::options::{Relisten, SubscribeOptions};

    #[test]
    fn a_server_in_a_set_is_tried_at_least_every_join_every() {
        let relisten = |max| {
            CatalogOptions::default().with_subscribe(
                SubscribeOptions::default()
                    .with_relisten(Relisten::new(Duration::from_millis(100), max)),
            )
        };
        for (max, capped) in [
            (Duration::from_secs(60), JOIN_EVERY),
            (Duration::from_secs(1), Duration::from_secs(1)),
        ] {
            let mut options = relisten(max);
            cap_backoff(&mut options);
            let relisten = options.subscribe.relisten.unwrap();
            assert_eq!(relisten.max, capped);
            assert!((1..20).all(|attempt| relisten.delay(attempt) <= JOIN_EVERY));
        }
        // The default re-listen (10 s at most) is capped too.
        let mut options = CatalogOptions::default();
        cap_backoff(&mut options);
        assert_eq!(options.subscribe.relisten.unwrap().max, JOIN_EVERY);
    }

    #[test]
    fn a_name_no_prefix_can_carry_is_invalid() {
        assert!(valid("docs".into()).is_ok());
        assert!(matches!(
            valid("a/b".into()),
            Err(SubscribeError::Invalid(_))
        ));
    }
}
