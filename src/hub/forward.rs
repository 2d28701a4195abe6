//! The one extension point of publishing: a hub hands every event
//! published through it to what is attached, after its own listeners have
//! it. The cross-replica relay attaches here, so that `Hub::publish` (and
//! every `notify_*`) reaches the other replicas whenever a relay is
//! running, and nothing beside the hub repeats its publishing methods.

use crate::event::Event;

/// What a hub forwards each published event to.
///
/// Called on the publisher's thread, so it must neither block nor await:
/// the relay pushes onto its bounded outbound queue under a short lock.
pub(crate) trait Forward: Send + Sync {
    fn forward(&self, event: Event);
}
