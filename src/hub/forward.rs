//! The one extension point of publishing: a hub hands every event
//! published through it to what is attached, after its own listeners have
//! it. The cross-replica relay attaches here, so that `Hub::publish` (and
//! every `notify_*`) reaches the other replicas whenever a relay is
//! running, and nothing beside the hub repeats its publishing methods.

use crate::audience::Audience;
use crate::event::Event;
use crate::sync::{AtomicBool, Ordering, RwLock};

/// What a hub forwards each published event to (only the relay, features
/// `redis` and `nats`, is one).
///
/// Called on the publisher's thread, so it must neither block nor await:
/// the relay pushes onto its bounded outbound queue under a short lock.
pub(crate) trait Forward: Send + Sync {
    fn forward(&self, event: Event);

    /// Ends every stream `audience` names on the other replicas (never
    /// listener ids: those are this hub's).
    fn revoke(&self, audience: Audience);
}

/// The slot a [`Forward`] attaches to, one per hub.
pub(crate) struct Door {
    /// Read once a publish, and only when `attached` says there is
    /// something: a hub without a relay pays one relaxed load.
    forward: RwLock<Option<std::sync::Arc<dyn Forward>>>,
    /// Relaxed: attaching is not ordered with publishes on other threads
    /// anyway; the lock hands over the attachment itself.
    attached: AtomicBool,
}

impl Door {
    pub(crate) fn new() -> Self {
        Self {
            forward: RwLock::new(None),
            attached: AtomicBool::new(false),
        }
    }

    /// What is attached, if anything.
    pub(crate) fn forward(&self) -> Option<std::sync::Arc<dyn Forward>> {
        if !self.attached.load(Ordering::Relaxed) {
            return None;
        }
        self.forward.read().clone()
    }

    /// Attaches `forward`, unless something is attached already.
    #[cfg(any_relay)]
    pub(crate) fn attach(&self, forward: std::sync::Arc<dyn Forward>) -> bool {
        let mut slot = self.forward.write();
        if slot.is_some() {
            return false;
        }
        *slot = Some(forward);
        self.attached.store(true, Ordering::Relaxed);
        true
    }

    /// Detaches what [`attach`](Self::attach) attached.
    #[cfg(any_relay)]
    pub(crate) fn detach(&self) {
        self.attached.store(false, Ordering::Relaxed);
        self.forward.write().take();
    }
}
