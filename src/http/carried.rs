//! What every request of a connection carries in its extensions for the
//! endpoint: whether its client vanished, and who the client is for the
//! admission limits.

use axum::http::Extensions;

use super::admission::Peer;
use super::vanished::Vanished;

/// A connection's share with each of its requests.
#[derive(Debug, Clone)]
pub(super) struct Carried {
    pub(super) vanished: Vanished,
    /// Where admission limits are set.
    pub(super) peer: Option<Peer>,
}

impl Carried {
    /// Puts it in a request's `extensions`.
    pub(super) fn carry(&self, extensions: &mut Extensions) {
        extensions.insert(self.vanished.clone());
        if let Some(peer) = &self.peer {
            extensions.insert(peer.clone());
        }
    }
}
