//! What changed between two snapshots, by key, and the stream of it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};
use tokio::sync::watch;

use super::entry::{CatalogKind, Contents, Keyed};
use super::snapshot::Snapshot;

/// One list's change from one generation to a later one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Diff<T> {
    /// The generation the change leads to.
    pub generation: u64,
    /// Entries whose key is new, in the new list's order.
    pub added: Vec<T>,
    /// Entries whose key is gone, in the old list's order.
    pub removed: Vec<T>,
    /// Entries kept under their key whose definition changed, in the new
    /// list's order.
    pub changed: Vec<Edit<T>>,
}

/// One entry's old and new definition.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Edit<T> {
    /// As it was.
    pub old: T,
    /// As it is.
    pub new: T,
}

impl<T: Keyed + Clone + PartialEq> Diff<T> {
    /// What turns `old` into `new`; `None` when nothing did. Entries are
    /// matched by key; of two entries under one key (a server's mistake)
    /// the later counts.
    pub(super) fn between(generation: u64, old: &[T], new: &[T]) -> Option<Self> {
        let before: HashMap<&str, &T> = old.iter().map(|entry| (entry.key(), entry)).collect();
        let after: HashMap<&str, &T> = new.iter().map(|entry| (entry.key(), entry)).collect();
        let mut diff = Self {
            generation,
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
        };
        for entry in new {
            // Each key once, at its entry that counts.
            if !std::ptr::eq(after[entry.key()], entry) {
                continue;
            }
            match before.get(entry.key()) {
                None => diff.added.push(entry.clone()),
                Some(&was) if was != entry => diff.changed.push(Edit {
                    old: was.clone(),
                    new: entry.clone(),
                }),
                Some(_) => {}
            }
        }
        for entry in old {
            if std::ptr::eq(before[entry.key()], entry) && !after.contains_key(entry.key()) {
                diff.removed.push(entry.clone());
            }
        }
        let empty = diff.added.is_empty() && diff.removed.is_empty() && diff.changed.is_empty();
        (!empty).then_some(diff)
    }
}

/// One list's change, typed by its list.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Change {
    /// Tools, by name.
    Tools(Diff<Tool>),
    /// Prompts, by name.
    Prompts(Diff<Prompt>),
    /// Resources, by URI.
    Resources(Diff<Resource>),
    /// Resource templates, by URI template.
    Templates(Diff<ResourceTemplate>),
    /// Watched resources' contents, by URI.
    Contents(Diff<Contents>),
}

impl Change {
    /// The list it changed; `None` for watched contents.
    pub fn kind(&self) -> Option<CatalogKind> {
        match self {
            Self::Tools(_) => Some(CatalogKind::Tools),
            Self::Prompts(_) => Some(CatalogKind::Prompts),
            Self::Resources(_) => Some(CatalogKind::Resources),
            Self::Templates(_) => Some(CatalogKind::Templates),
            Self::Contents(_) => None,
        }
    }

    /// The generation the change leads to.
    pub fn generation(&self) -> u64 {
        match self {
            Self::Tools(diff) => diff.generation,
            Self::Prompts(diff) => diff.generation,
            Self::Resources(diff) => diff.generation,
            Self::Templates(diff) => diff.generation,
            Self::Contents(diff) => diff.generation,
        }
    }

    /// Every change from `old` to `new`, list by list; a list shared by
    /// both is not compared.
    pub(super) fn between(old: &Snapshot, new: &Snapshot) -> Vec<Self> {
        fn list<T: Keyed + Clone + PartialEq>(
            generation: u64,
            old: &Arc<Vec<T>>,
            new: &Arc<Vec<T>>,
            wrap: fn(Diff<T>) -> Change,
        ) -> Option<Change> {
            if Arc::ptr_eq(old, new) {
                return None;
            }
            Diff::between(generation, old, new).map(wrap)
        }
        let generation = new.generation;
        [
            list(generation, &old.tools, &new.tools, Self::Tools),
            list(generation, &old.prompts, &new.prompts, Self::Prompts),
            list(generation, &old.resources, &new.resources, Self::Resources),
            list(generation, &old.templates, &new.templates, Self::Templates),
            list(generation, &old.contents, &new.contents, Self::Contents),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The changes of a catalog as they happen, from the generation it was
/// made at ([`Catalog::changes`](super::Catalog::changes)).
///
/// It holds no queue: each [`next`](Self::next) compares the last snapshot
/// it saw with the current one, so a reader that falls behind gets the net
/// change since it last looked (an entry added and removed in between is
/// no change at all), and memory stays one snapshot, however slow it is.
#[derive(Debug)]
pub struct Changes {
    seen: Arc<Snapshot>,
    current: watch::Receiver<Arc<Snapshot>>,
    ready: VecDeque<Change>,
}

impl Changes {
    pub(super) fn new(current: watch::Receiver<Arc<Snapshot>>) -> Self {
        let seen = Arc::clone(&current.borrow());
        Self {
            seen,
            current,
            ready: VecDeque::new(),
        }
    }

    /// The next change; `None` once the catalog is closed.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a change leaves only in the poll that returns it.
    #[allow(
        clippy::should_implement_trait,
        reason = "an async pull, named like `Subscription::next`"
    )]
    pub async fn next(&mut self) -> Option<Change> {
        loop {
            if let Some(change) = self.ready.pop_front() {
                return Some(change);
            }
            let seen = self.seen.generation;
            let current = Arc::clone(
                &*self
                    .current
                    .wait_for(|snapshot| snapshot.generation > seen)
                    .await
                    .ok()?,
            );
            self.ready.extend(Change::between(&self.seen, &current));
            self.seen = current;
        }
    }

    /// The generation the changes read so far lead to.
    pub fn generation(&self) -> u64 {
        self.seen.generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Entry(&'static str, u32);

    impl Keyed for Entry {
        fn key(&self) -> &str {
            self.0
        }
    }

    #[test]
    fn entries_are_matched_by_key() {
        let old = [Entry("a", 1), Entry("b", 1), Entry("c", 1)];
        let new = [Entry("d", 1), Entry("b", 2), Entry("a", 1)];
        let diff = Diff::between(7, &old, &new).unwrap();
        assert_eq!(diff.generation, 7);
        assert_eq!(diff.added, [Entry("d", 1)]);
        assert_eq!(diff.removed, [Entry("c", 1)]);
        assert_eq!(
            diff.changed,
            [Edit {
                old: Entry("b", 1),
                new: Entry("b", 2)
            }]
        );
        // Reordering alone changes nothing.
        assert_eq!(
            Diff::between(8, &new, &[Entry("a", 1), Entry("b", 2), Entry("d", 1)]),
            None
        );
    }

    #[test]
    fn of_two_entries_under_one_key_the_later_counts() {
        let old = [Entry("a", 1), Entry("a", 2)];
        let new = [Entry("a", 2)];
        assert_eq!(Diff::between(1, &old, &new), None);
        let diff = Diff::between(2, &new, &[Entry("a", 2), Entry("a", 3)]).unwrap();
        assert_eq!(diff.changed.len(), 1);
        assert!(diff.added.is_empty() && diff.removed.is_empty());
    }
}
