//! What a catalog set tells of itself: where each server stands, and the
//! stream of its changes.

use std::fmt;

use parking_lot::Mutex;
use tokio::sync::broadcast;

use super::diff::Change;
use super::health::Health;
use crate::error::SubscribeError;

/// How many changes a [`SetChanges`] reader may fall behind before it is
/// told it missed some.
const CHANGES: usize = 1024;

/// Where one server of a set stands ([`CatalogSet::health`](super::CatalogSet::health)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerHealth {
    /// Not up yet: being tried again with backoff.
    Joining {
        /// Attempts that failed so far.
        attempts: u32,
        /// Why the last one failed.
        last_error: Option<String>,
    },
    /// Open: its catalog's own health.
    Live(Box<Health>),
    /// Refused in a way trying again cannot cure ([`SubscribeError::is_transient`]);
    /// not tried again.
    Failed(SubscribeError),
}

/// One line, as in `live: listening` or `joining (2 attempts failed:
/// cannot reach ...)`.
impl fmt::Display for ServerHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Joining {
                attempts,
                last_error,
            } => {
                write!(f, "joining ({attempts} attempts failed")?;
                match last_error {
                    Some(error) => write!(f, ": {error})"),
                    None => f.write_str(")"),
                }
            }
            Self::Live(health) => write!(f, "live: {health}"),
            Self::Failed(error) => write!(f, "failed: {error}"),
        }
    }
}

/// One change of a [`CatalogSet`](super::CatalogSet), by server name
/// ([`CatalogSet::changes`](super::CatalogSet::changes)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SetChange {
    /// A server's catalog is open and in the merged view.
    Joined(String),
    /// A joining server's attempt failed; it is tried again.
    Retrying {
        /// The server.
        server: String,
        /// Attempts that failed so far.
        attempts: u32,
        /// Why this one failed.
        reason: String,
    },
    /// A server failed in a way trying again cannot cure.
    Failed(String, SubscribeError),
    /// A server was removed (or replaced).
    Left(String),
    /// One of a server's lists, or a watched resource, changed.
    Changed(String, Change),
    /// A server's health changed: its listen's state (listening,
    /// re-listening, ended; not each attempt of a re-listen) or whether a
    /// part is stale.
    Health(String, Box<Health>),
    /// The reader fell this many changes behind and missed them: read the
    /// [snapshot](super::CatalogSet::snapshot) again.
    Missed(u64),
}

/// One line, the server's name first, as in `docs: re-listening (attempt
/// 1: the stream ended abruptly)`.
impl fmt::Display for SetChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Joined(server) => write!(f, "{server}: joined"),
            Self::Retrying {
                server,
                attempts,
                reason,
            } => write!(
                f,
                "{server}: joining ({attempts} attempts failed: {reason})"
            ),
            Self::Failed(server, error) => write!(f, "{server}: failed: {error}"),
            Self::Left(server) => write!(f, "{server}: left"),
            Self::Changed(server, change) => match change.kind() {
                Some(kind) => write!(f, "{server}: {kind:?} changed"),
                None => write!(f, "{server}: watched contents changed"),
            },
            Self::Health(server, health) => write!(f, "{server}: {health}"),
            Self::Missed(missed) => write!(f, "{missed} changes missed"),
        }
    }
}

/// Where the set's changes go: created with the first reader.
#[derive(Default)]
pub(super) struct Changes(Mutex<Option<broadcast::Sender<SetChange>>>);

impl Changes {
    /// A reader of the changes from now on.
    pub(super) fn subscribe(&self) -> SetChanges {
        let receiver = self
            .0
            .lock()
            .get_or_insert_with(|| broadcast::channel(CHANGES).0)
            .subscribe();
        SetChanges { receiver }
    }

    /// Tells the readers, if there are any.
    pub(super) fn tell(&self, change: SetChange) {
        if let Some(sender) = &*self.0.lock() {
            let _ = sender.send(change);
        }
    }
}

/// A [`CatalogSet`](super::CatalogSet)'s changes
/// ([`CatalogSet::changes`](super::CatalogSet::changes)).
#[derive(Debug)]
pub struct SetChanges {
    receiver: broadcast::Receiver<SetChange>,
}

impl SetChanges {
    /// The next change; `None` once the set is dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    #[allow(
        clippy::should_implement_trait,
        reason = "an async pull, named like `Subscription::next`"
    )]
    pub async fn next(&mut self) -> Option<SetChange> {
        match self.receiver.recv().await {
            Ok(change) => Some(change),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(SetChange::Missed(missed)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}
