//! Demand hooks: the application told when a key (a resource URI, a task
//! id) gains its first listen stream, before that stream is acknowledged,
//! and again a grace period after its last one has gone.
//!
//! # Attaching
//!
//! A listen request whose keys include some that no stream of the service
//! holds waits, before its acknowledgement and before its source is even
//! opened, for the attach of each such key. An attach runs on a task of
//! its own, so a client that gives up waiting cannot cut it short; every
//! request that needs the key meanwhile waits for the same attach, so
//! concurrent first listeners cause one. The request is all or nothing:
//! if any of its keys is refused, it is answered with that error (a panic
//! in the hook is `-32603`) and nothing is opened, while the keys that did
//! attach are released as if a stream had left them.
//!
//! # Detaching
//!
//! When the last stream holding a key ends, the key stays attached for the
//! grace period; a stream that arrives in that time finds it attached and
//! waits for nothing. Once the grace has passed with no stream back, the
//! detach hook runs, once. A key whose attach was refused was never
//! attached, so it is never detached.
//!
//! A key's hooks never overlap: a stream that arrives while the key's
//! detach runs waits for it to return, and then for a new attach, so an
//! application sees attach, detach, attach for one key, in that order,
//! and may keep a flag per key.
//!
//! # State
//!
//! One short lock over the keys' holds (`holds.rs`: holders, generation,
//! idle spells), each with its phase; never held across an `.await` or a
//! hook call. Each time a key goes from no entry to an entry it gets a new
//! generation, so that a late attach outcome, grace timer or release of an
//! older generation changes nothing.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use rmcp::model::{ErrorCode, ErrorData};
use tokio::sync::watch;

use crate::audience::Principal;
use crate::filter::InterestKey;
use crate::util::holds::{Holds, Leaving};

/// What an attach settles to: `Ok`, or the error that refuses the listens
/// waiting for it.
type Outcome = Result<(), ErrorData>;

type Attach =
    dyn Fn(Option<Principal>, Option<InterestKey>) -> BoxFuture<'static, Outcome> + Send + Sync;
type Detach = dyn Fn(Option<Principal>, Option<InterestKey>) + Send + Sync;

/// A key as the hooks hold it: with the principal of its streams when the
/// hooks are [per principal](Demand::per_principal) (`None` as the key: the
/// principal's own presence), else with none.
type DemandKey = (Option<Principal>, Option<InterestKey>);

/// Hooks run as keys gain their first listen stream and lose their last:
/// an attach, on a task of its own, that every listen needing the key
/// waits for before its source is opened and its acknowledgement sent
/// (concurrent first listeners share one; a refusal or a panic refuses
/// them all, all or nothing over each request's keys); and a detach, once,
/// after the last stream has been gone for the grace. Install them with
/// [`ListenService::with_demand`](crate::ListenService::with_demand).
///
/// ```
/// use mcp_subscriptions::{Demand, Hub, ListenService};
/// use mcp_subscriptions::hub::InterestKey;
///
/// let demand = Demand::new(|key: InterestKey| async move {
///     // Start watching the file, the feed, the upstream...
///     println!("attach {key:?}");
///     Ok(())
/// })
/// .on_detach(|key| println!("detach {key:?}"));
/// let service = ListenService::new(Hub::new()).with_demand(demand);
/// # let _ = service;
/// ```
///
/// # Per principal
///
/// An application that watches on each caller's behalf (with the caller's
/// own credentials, say) takes [`Demand::per_principal`]: keys are then
/// held per principal, so that two principals' streams of one URI cause
/// two attaches, each told its principal; and each principal's first
/// stream attaches its *presence* (`None` as the key), held by every
/// stream of that principal whatever it asks for, detached after the grace
/// once its last stream has gone.
///
/// # One bookkeeping
///
/// A `Demand` and its clones keep one count of who holds each key: the
/// streams of every service it is installed on, and the
/// [presences](Self::hold_presence) held for work that is no stream. So a
/// key is attached once however many services serve it, and detached a
/// grace after its last holder of any kind. A builder method makes
/// another demand, with a bookkeeping of its own.
#[derive(Clone)]
pub struct Demand {
    hooks: Hooks,
    /// Who holds each key, made on first use.
    keys: Arc<OnceLock<Arc<Keys>>>,
}

/// What a [`Demand`] runs, and when.
#[derive(Clone)]
struct Hooks {
    attach: Arc<Attach>,
    detach: Arc<Detach>,
    grace: Duration,
    per_principal: bool,
}

impl Demand {
    /// The grace a key stays attached after its last stream left, unless
    /// [`Demand::with_grace`] says otherwise: long enough that a client
    /// re-listening after a dropped connection (the workspace's client
    /// waits about a second at first) finds its keys still attached.
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

    /// Runs `attach` for each key that gains its first stream; the streams
    /// that need it are acknowledged once it returns `Ok`, and refused with
    /// its error otherwise.
    pub fn new<A, F>(attach: A) -> Self
    where
        A: Fn(InterestKey) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), ErrorData>> + Send + 'static,
    {
        Self::with_hooks(Hooks {
            attach: Arc::new(move |_, key| match key {
                Some(key) => attach(key).boxed(),
                // Presences are held per principal only.
                None => std::future::ready(Ok(())).boxed(),
            }),
            detach: Arc::new(|_, _| {}),
            grace: Self::DEFAULT_GRACE,
            per_principal: false,
        })
    }

    /// Runs `attach` for each key that gains its first stream *of a
    /// principal* (`None`: streams that carry no principal), and for each
    /// principal's presence (`None` as the key) as its first stream
    /// arrives. See [per principal](#per-principal).
    pub fn per_principal<A, F>(attach: A) -> Self
    where
        A: Fn(Option<Principal>, Option<InterestKey>) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), ErrorData>> + Send + 'static,
    {
        Self::with_hooks(Hooks {
            attach: Arc::new(move |principal, key| attach(principal, key).boxed()),
            detach: Arc::new(|_, _| {}),
            grace: Self::DEFAULT_GRACE,
            per_principal: true,
        })
    }

    fn with_hooks(hooks: Hooks) -> Self {
        Self {
            hooks,
            keys: Arc::default(),
        }
    }

    /// Runs `detach` once a key's last stream has been gone for the grace
    /// period (per principal hooks: for each principal's key, and not for
    /// presences; see [`on_principal_detach`](Self::on_principal_detach)).
    pub fn on_detach(mut self, detach: impl Fn(InterestKey) + Send + Sync + 'static) -> Self {
        self.hooks.detach = Arc::new(move |_, key| {
            if let Some(key) = key {
                detach(key);
            }
        });
        Self::with_hooks(self.hooks)
    }

    /// Runs `detach` once a principal's key, or its presence (`None` as
    /// the key), has been without a stream for the grace period.
    pub fn on_principal_detach(
        mut self,
        detach: impl Fn(Option<Principal>, Option<InterestKey>) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.detach = Arc::new(detach);
        Self::with_hooks(self.hooks)
    }

    /// How long a key stays attached after its last stream left (default
    /// [`Demand::DEFAULT_GRACE`]).
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.hooks.grace = grace;
        Self::with_hooks(self.hooks)
    }

    /// Holds `principal`'s presence as a stream of it does, for work on
    /// its behalf that is no stream (a request served with its
    /// credentials, say): the presence's attach runs if nothing held it,
    /// and this waits for it; dropping the [`Presence`] gives it back, and
    /// the presence is detached a grace after its last holder, stream or
    /// not. Only [per principal](Self::per_principal) hooks have
    /// presences; with others this holds nothing and waits for nothing.
    ///
    /// # Errors
    ///
    /// The attach's error when it refuses (`-32603` when it panics).
    pub async fn hold_presence(
        &self,
        principal: Option<&Principal>,
    ) -> Result<Presence, ErrorData> {
        let (hold, attach) = self.keys().hold(principal, []);
        if let Some(attach) = attach {
            attach.await?;
        }
        Ok(Presence(hold))
    }

    /// Who holds each key, for every service it is installed on.
    pub(crate) fn keys(&self) -> Arc<Keys> {
        Arc::clone(self.keys.get_or_init(|| Keys::new(self.hooks.clone())))
    }
}

/// A principal's presence held by [`Demand::hold_presence`], given back
/// when dropped.
#[derive(Debug)]
#[must_use = "the presence is given back when this is dropped"]
pub struct Presence(#[allow(dead_code, reason = "held for its drop")] Hold);

impl std::fmt::Debug for Demand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demand")
            .field("grace", &self.hooks.grace)
            .field("per_principal", &self.hooks.per_principal)
            .finish_non_exhaustive()
    }
}

/// Where a key stands.
enum Phase {
    /// Its attach runs; its outcome is sent here.
    Attaching(watch::Receiver<Option<Outcome>>),
    Attached,
    /// Its detach runs; the streams that arrived meanwhile wait for the
    /// attach that follows it, whose outcome goes to this channel.
    Detaching(Option<watch::Sender<Option<Outcome>>>),
}

/// The keys of a demand's streams (held by the streams admitted or
/// waiting) and presences, each in its phase, and the hooks.
pub(crate) struct Keys {
    hooks: Hooks,
    keys: Mutex<Holds<DemandKey, Phase>>,
}

/// A new idle spell of `key`, when it is attached and has just lost its
/// last holder: the spell's number, for its grace (which detaches only
/// after the spell it was started for, never after a later one).
fn idle_spell(keys: &mut Holds<DemandKey, Phase>, key: &DemandKey, grace: Duration) -> Option<u64> {
    let held = keys.get_mut(key, None)?;
    if held.holders() > 0 || !matches!(held.state, Phase::Attached) {
        return None;
    }
    keys.idle(key, std::time::Instant::now() + grace)
}

/// One stream's hold on its keys, released when dropped.
pub(crate) struct Hold {
    keys: Arc<Keys>,
    held: Vec<(DemandKey, u64)>,
}

impl Keys {
    fn new(hooks: Hooks) -> Arc<Self> {
        Arc::new(Self {
            hooks,
            keys: Mutex::new(Holds::default()),
        })
    }

    /// Holds `wanted` for a stream of `principal`, starting the attach of
    /// each key no stream held (per principal hooks: of that principal,
    /// and its presence). Returns the hold, and what to wait for before
    /// the stream may be acknowledged: nothing, when every key was
    /// attached.
    pub(crate) fn hold(
        self: &Arc<Self>,
        principal: Option<&Principal>,
        wanted: impl IntoIterator<Item = InterestKey>,
    ) -> (Hold, Option<BoxFuture<'static, Outcome>>) {
        let principal = principal.filter(|_| self.hooks.per_principal).cloned();
        let presence = self.hooks.per_principal.then(|| (principal.clone(), None));
        let wanted = presence
            .into_iter()
            .chain(wanted.into_iter().map(|key| (principal.clone(), Some(key))));
        let mut held = Vec::new();
        let mut waits = Vec::new();
        let mut starts = Vec::new();
        {
            let mut keys = self.keys.lock();
            for key in wanted {
                let mut sender = None;
                let (_, entry) = keys.hold(key.clone(), || {
                    let (attach, receiver) = watch::channel(None);
                    sender = Some(attach);
                    Phase::Attaching(receiver)
                });
                if let Some(sender) = sender {
                    starts.push((key.clone(), entry.generation(), sender));
                }
                held.push((key, entry.generation()));
                match &mut entry.state {
                    Phase::Attaching(receiver) => waits.push(receiver.clone()),
                    Phase::Attached => {}
                    // Attached again once the detach has returned.
                    Phase::Detaching(next) => {
                        let sender = next.get_or_insert_with(|| watch::channel(None).0);
                        waits.push(sender.subscribe());
                    }
                }
            }
        }
        // Started with no lock held: spawning runs no hook inline, but
        // keeps the lock's reach to the map alone.
        for (key, generation, sender) in starts {
            self.start(key, generation, sender);
        }
        let hold = Hold {
            keys: self.clone(),
            held,
        };
        if waits.is_empty() {
            return (hold, None);
        }
        let all = async move {
            for mut receiver in waits {
                let outcome = receiver
                    .wait_for(Option::is_some)
                    .await
                    .map_err(|_| hook_failed("demand hook ended without an outcome"))?
                    .clone();
                outcome.expect("waited for an outcome")?;
            }
            Ok(())
        };
        (hold, Some(all.boxed()))
    }

    /// Runs the attach of `key` on a task of its own, then settles it.
    fn start(
        self: &Arc<Self>,
        key: DemandKey,
        generation: u64,
        sender: watch::Sender<Option<Outcome>>,
    ) {
        let keys = self.clone();
        tokio::spawn(async move {
            let (principal, held) = key.clone();
            let attach = AssertUnwindSafe(async { (keys.hooks.attach)(principal, held).await });
            let outcome = attach
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err(hook_failed("demand hook panicked")));
            keys.settle(&key, generation, outcome.is_ok());
            tracing::debug!(target: "mcp_subscriptions", ?key, ok = outcome.is_ok(), "demand attach settled");
            let _ = sender.send(Some(outcome));
        });
    }

    /// Records `key`'s attach outcome: attached, or (refused) gone, so
    /// that the next stream tries again. An attach whose streams all left
    /// while it ran starts the grace at once.
    fn settle(self: &Arc<Self>, key: &DemandKey, generation: u64, attached: bool) {
        let spell = {
            let mut keys = self.keys.lock();
            let Some(entry) = keys.get_mut(key, Some(generation)) else {
                return;
            };
            if !attached {
                keys.remove(key);
                return;
            }
            entry.state = Phase::Attached;
            idle_spell(&mut keys, key, self.hooks.grace)
        };
        if let Some(spell) = spell {
            self.linger(key.clone(), generation, spell);
        }
    }

    /// One holder of `key` (of `generation`) fewer; the last one starts the
    /// grace of an attached key.
    fn release(self: &Arc<Self>, key: DemandKey, generation: u64) {
        let spell = {
            let mut keys = self.keys.lock();
            if keys.release(&key, Some(generation)) != Leaving::Last {
                return;
            }
            idle_spell(&mut keys, &key, self.hooks.grace)
        };
        if let Some(spell) = spell {
            self.linger(key, generation, spell);
        }
    }

    /// Detaches `key` after the grace, unless a stream has held it since
    /// idle spell `spell` began.
    fn linger(self: &Arc<Self>, key: DemandKey, generation: u64, spell: u64) {
        let keys = self.clone();
        let detach = move || {
            let idle = match keys.keys.lock().lapse(&key, generation, spell) {
                Some(entry) => {
                    entry.state = Phase::Detaching(None);
                    true
                }
                None => false,
            };
            if idle {
                tracing::debug!(target: "mcp_subscriptions", ?key, "demand detach");
                (keys.hooks.detach)(key.0.clone(), key.1.clone());
                keys.detached(key, generation);
            }
        };
        let grace = self.hooks.grace;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(grace).await;
                    detach();
                });
            }
            // A stream dropped outside any runtime (its last owner gone at
            // shutdown): detach now rather than never.
            Err(_) => detach(),
        }
    }

    /// `key`'s detach returned: it is gone, or, when streams arrived
    /// meanwhile, attached anew for them.
    fn detached(self: &Arc<Self>, key: DemandKey, generation: u64) {
        let attach = {
            let mut map = self.keys.lock();
            let Some(entry) = map.get_mut(&key, Some(generation)) else {
                return;
            };
            let next = match &mut entry.state {
                Phase::Detaching(next) => next.take(),
                _ => unreachable!("only the detach leaves its phase"),
            };
            match next {
                Some(sender) if entry.holders() > 0 => {
                    entry.state = Phase::Attaching(sender.subscribe());
                    Some(sender)
                }
                // No one waits (those who came left again): the key goes,
                // and a waiter that gave up hears the sender dropped.
                _ => {
                    map.remove(&key);
                    None
                }
            }
        };
        if let Some(sender) = attach {
            self.start(key, generation, sender);
        }
    }

    /// The keys held, for tests.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.keys.lock().len()
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        for (key, generation) in std::mem::take(&mut self.held) {
            self.keys.release(key, generation);
        }
    }
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hold")
            .field("keys", &self.held.len())
            .finish()
    }
}

fn hook_failed(message: &'static str) -> ErrorData {
    ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None)
}

#[cfg(test)]
mod tests;
