//! What every handle and listener of one hub share.

use super::budget::Budget;
use super::config::Config;
use super::forward::Door;
use super::id::ListenerId;
use super::registry::Registry;
use super::stats::Retirement;
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
