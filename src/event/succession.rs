//! An event's place among the events about one thing.

use std::sync::Arc;

/// Where an event stands among the events about one thing (a task, say):
/// a newer version supersedes an older one, and a terminal one is the last.
///
/// A listener's queue uses it to keep two promises for each key:
///
/// - a reader never receives a version older than one it already
///   received, and a pending event is replaced (not followed) by a newer
///   one, so a slow reader gets the latest state, once;
/// - a terminal event is not evicted by the drop-oldest policy while the
///   queue holds any non-terminal one: the final state of a thing reaches
///   the reader even under overload.
///
/// Superseded events are counted as coalesced.
///
/// ```
/// use mcp_subscriptions::{Event, Succession};
///
/// let done = Event::extension("notifications/jobs", Default::default(), None)
///     .with_succession(Succession::new("job-7", 42).terminal());
/// assert!(done.succession().unwrap().is_terminal());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Succession {
    key: Arc<str>,
    version: i128,
    terminal: bool,
}

impl Succession {
    /// Version `version` of the thing named `key`; larger is newer.
    pub fn new(key: impl Into<String>, version: i128) -> Self {
        Self {
            key: Arc::from(key.into()),
            version,
            terminal: false,
        }
    }

    /// Marks the last version: nothing about the key follows it.
    pub fn terminal(mut self) -> Self {
        self.terminal = true;
        self
    }

    /// The thing's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The shared key, for maps that outlive the event.
    pub(crate) fn shared_key(&self) -> &Arc<str> {
        &self.key
    }

    /// The version; larger is newer.
    pub fn version(&self) -> i128 {
        self.version
    }

    /// Whether this is the last version.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }
}
