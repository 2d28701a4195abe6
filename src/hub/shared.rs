//! What every handle and listener of one hub share.

use super::config::Config;
use super::forward::Door;
use super::id::ListenerId;
use super::registry::Registry;
use super::stats::{Retired, Retirement};
use crate::audience::Audience;
use crate::queue::budget::Budget;
use crate::queue::reader::Waiter;
use crate::sync::{Arc, AtomicU64, AtomicUsize, RwLock};

pub(crate) struct Shared {
    /// A read-write lock: publishers share it (many at once), and only
    /// opening, closing and completing (all brief) take it for writing.
    pub(crate) registry: RwLock<Registry>,
    pub(crate) config: Config,
    /// The hub-wide bound on queued bytes, when configured.
    pub(crate) budget: Option<Arc<Budget>>,
    pub(crate) next_id: AtomicU64,
    pub(crate) published: AtomicU64,
    /// Live `Hub` handles; the last one dropped completes the hub.
    pub(crate) handles: AtomicUsize,
    /// What each published event is forwarded to (a relay), if anything.
    pub(crate) door: Door,
}

/// Listeners a revocation ends under one hold of the write lock: about
/// a tenth of a millisecond's work.
const REVOKED_PER_LOCK: usize = 256;

impl Shared {
    pub(crate) fn new(config: Config) -> Self {
        Self {
            registry: RwLock::new(Registry::default()),
            budget: config
                .max_hub_queued_bytes
                .map(|max| Arc::new(Budget::new(max))),
            config,
            next_id: AtomicU64::new(1),
            published: AtomicU64::new(0),
            handles: AtomicUsize::new(1),
            door: Door::new(),
        }
    }

    /// Ends every listener of this hub that `audience` names, as revoked;
    /// how many it ended. The listeners are found under the read lock and
    /// ended under the write lock `REVOKED_PER_LOCK` at a time, so that a
    /// revocation of many streams never holds publishing up for long; a
    /// listener's inbox is revoked and the listener retired under the same
    /// lock, so a reader that reads its end finds it retired.
    pub(crate) fn revoke_here(&self, audience: &Audience) -> usize {
        // First, so that a listen racing the end of its streams is already
        // refused by an authorizer the hook told.
        if let Some(hook) = &self.config.on_revoke {
            (hook.0)(audience);
        }
        let ids = self.registry.read().members_of(audience);
        let mut ended = 0;
        for chunk in ids.chunks(REVOKED_PER_LOCK) {
            let (retired, waiters, watchers) = {
                let mut registry = self.registry.write();
                let mut waiters = Vec::new();
                let mut retired = Vec::new();
                for &id in chunk {
                    if let Some(entry) = registry.entries.get(&id) {
                        waiters.extend(entry.inbox.revoke());
                    }
                    retired.extend(registry.retire(id, Retirement::Revoked));
                }
                (retired, waiters, registry.interest.take_wakers())
            };
            // Woken with no lock held, as after a publish.
            waiters.into_iter().for_each(Waiter::wake);
            watchers.into_iter().for_each(std::task::Waker::wake);
            retired.iter().for_each(Retired::trace);
            ended += retired.len();
        }
        tracing::info!(
            target: "mcp_subscriptions",
            audience = ?audience,
            ended,
            "audience revoked"
        );
        ended
    }

    pub(crate) fn retire(&self, id: ListenerId, why: Retirement) {
        let (retired, watchers) = {
            let mut registry = self.registry.write();
            let retired = registry.retire(id, why);
            (retired, registry.interest.take_wakers())
        };
        // Woken and logged with no lock held, as a listener's reader is.
        watchers.into_iter().for_each(std::task::Waker::wake);
        if let Some(retired) = retired {
            retired.trace();
        }
    }
}
