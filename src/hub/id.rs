//! A listener's identity.

use std::fmt;

/// A listener's identity within its hub, unique for the hub's lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ListenerId(pub(crate) u64);

impl ListenerId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ListenerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl crate::audience::Audience {
    /// The one listener `id`, of the hub it belongs to: an event for it
    /// reaches that listener alone (if its filter matches), on that hub
    /// alone; a relay carries no listener id to another replica.
    pub fn listener(id: ListenerId) -> Self {
        Self::nobody().with_listener(id)
    }

    /// This audience and the listener `id`; from everyone, just that one.
    pub fn with_listener(mut self, id: ListenerId) -> Self {
        self.members_mut().listeners.push(id.0);
        self
    }

    /// The listeners it names by id.
    pub fn listeners(&self) -> impl Iterator<Item = ListenerId> + '_ {
        let ids = self.members().map_or(&[][..], |m| &m.listeners);
        ids.iter().map(|id| ListenerId(*id))
    }
}
