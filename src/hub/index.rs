//! The routing index: which listeners an event reaches, found without
//! looking at the others. What it holds are targets: a listener's own
//! queue, or a lane its members share (reached once for all of them).
//!
//! One bucket per list-changed kind, a map from URI to bucket for resource
//! updates, a map per extension field (from key to bucket, plus the
//! listeners that took the whole field), and a bucket of match-everything
//! listeners. Publishing walks only the buckets its event names, so a
//! resource update for a URI with one subscriber costs the same among ten
//! listeners as among a hundred thousand.

use std::collections::HashMap;

use super::lane::Lane;
use super::own_queue::OwnQueue;
use crate::event::EventKind;
use crate::filter::Filter;
use crate::sync::Arc;

/// What a publish pushes into.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A listener's own queue.
    Own(Arc<OwnQueue>),
    Lane(Arc<Lane>),
}

/// A target's identity while the index holds it: the address of what it
/// points to.
pub(crate) type TargetId = usize;

impl Target {
    pub(crate) fn id(&self) -> TargetId {
        match self {
            Self::Own(queue) => Arc::as_ptr(queue) as usize,
            Self::Lane(lane) => Arc::as_ptr(lane) as usize,
        }
    }
}

/// Targets in a dense vector (what publishing iterates) plus their
/// positions (so removal is O(1) by swap-remove).
#[derive(Debug, Default)]
struct Bucket {
    entries: Vec<Target>,
    positions: HashMap<TargetId, usize>,
}

impl Bucket {
    /// Adds `target` once, however many times its filter names the key
    /// (an extension field may list a key twice).
    fn insert(&mut self, target: &Target) {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.positions.entry(target.id()) {
            slot.insert(self.entries.len());
            self.entries.push(target.clone());
        }
    }

    fn remove(&mut self, id: TargetId) {
        let Some(position) = self.positions.remove(&id) else {
            return;
        };
        self.entries.swap_remove(position);
        if let Some(moved) = self.entries.get(position) {
            self.positions.insert(moved.id(), position);
        }
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A bucket's targets; none where there is no bucket.
fn entries(bucket: Option<&Bucket>) -> &[Target] {
    bucket.map_or(&[], |b| &b.entries)
}

/// Removes `id` from the bucket under `key`, dropping the bucket once empty
/// so that churn over many distinct URIs leaves nothing behind.
fn remove_keyed(buckets: &mut HashMap<String, Bucket>, key: &str, id: TargetId) {
    if let Some(bucket) = buckets.get_mut(key) {
        bucket.remove(id);
        if bucket.is_empty() {
            buckets.remove(key);
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Index {
    /// One per list, in the order of `ListKind::ALL`.
    lists: [Bucket; 3],
    uris: HashMap<String, Bucket>,
    /// Extension field → key → listeners.
    extension_keys: HashMap<String, HashMap<String, Bucket>>,
    /// Extension field → listeners that take every event of that field.
    extension_flags: HashMap<String, Bucket>,
    everything: Bucket,
}

impl Index {
    /// Routes the events `filter` matches to `target` (a listener's own
    /// filter, or that of a lane's members).
    pub(crate) fn insert(&mut self, target: &Target, filter: &Filter) {
        for list in filter.lists_changed() {
            self.lists[list.index()].insert(target);
        }
        if filter.is_everything() {
            // Everything reaches it through this bucket; indexing its URIs or
            // extension keys as well would deliver some events twice.
            self.everything.insert(target);
            return;
        }
        for uri in filter.resource_subscriptions() {
            self.uris.entry(uri.to_owned()).or_default().insert(target);
        }
        for (field, key) in filter.extension_keys() {
            self.extension_keys
                .entry(field.to_owned())
                .or_default()
                .entry(key.to_owned())
                .or_default()
                .insert(target);
        }
        for field in filter.extension_flags() {
            self.extension_flags
                .entry(field.to_owned())
                .or_default()
                .insert(target);
        }
    }

    /// Removes `target`, indexed by `filter`, from every bucket it is in; a
    /// no-op for one that is not indexed.
    pub(crate) fn remove(&mut self, target: &Target, filter: &Filter) {
        let id = target.id();
        for bucket in self.lists.iter_mut().chain([&mut self.everything]) {
            bucket.remove(id);
        }
        for uri in filter.resource_subscriptions() {
            remove_keyed(&mut self.uris, uri, id);
        }
        for (field, key) in filter.extension_keys() {
            if let Some(keys) = self.extension_keys.get_mut(field) {
                remove_keyed(keys, key, id);
                if keys.is_empty() {
                    self.extension_keys.remove(field);
                }
            }
        }
        for field in filter.extension_flags() {
            remove_keyed(&mut self.extension_flags, field, id);
        }
    }

    /// Every listener `kind` reaches, as up to three runs of them (empty
    /// runs where a bucket is missing): slices, so that publishing loops
    /// over them with its work inline, not through a callback per listener.
    ///
    /// A listener is in at most one of the buckets an event kind consults
    /// (a filter's extension field is either a key list or `true`, and
    /// match-everything listeners are indexed only by kind and in the
    /// everything bucket), so no listener appears twice.
    pub(crate) fn matches(&self, kind: &EventKind) -> [&[Target]; 3] {
        let everything = &self.everything.entries[..];
        match kind {
            EventKind::ListChanged(list) => [&self.lists[list.index()].entries, &[], &[]],
            EventKind::ResourceUpdated { uri } => [entries(self.uris.get(uri)), everything, &[]],
            EventKind::Extension { .. } if !kind.travels_on_listen_streams() => {
                [everything, &[], &[]]
            }
            EventKind::Extension {
                selector: Some(selector),
                ..
            } => {
                let field = selector.field();
                let keyed = selector.key().and_then(|key| {
                    self.extension_keys
                        .get(field)
                        .and_then(|keys| keys.get(key))
                });
                [
                    entries(keyed),
                    entries(self.extension_flags.get(field)),
                    everything,
                ]
            }
            EventKind::Extension { selector: None, .. } => [everything, &[], &[]],
        }
    }

    /// Whether no bucket holds anything (every listener was removed).
    pub(crate) fn is_empty(&self) -> bool {
        self.lists.iter().all(Bucket::is_empty)
            && self.everything.is_empty()
            && self.uris.is_empty()
            && self.extension_keys.is_empty()
            && self.extension_flags.is_empty()
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::{ListKind, Selector};
    use crate::filter::Filter;
    use crate::hub::id::ListenerId;
    use crate::queue::Settings;

    /// Listener `id`'s queue, and the filter it is routed by.
    fn entry(id: u64, filter: Filter) -> (Arc<OwnQueue>, Filter) {
        let settings = Settings::new(1);
        (
            Arc::new(OwnQueue::new(ListenerId(id), settings, None)),
            filter,
        )
    }

    fn insert(index: &mut Index, (queue, filter): &(Arc<OwnQueue>, Filter)) {
        index.insert(&Target::Own(queue.clone()), filter);
    }

    fn remove(index: &mut Index, (queue, filter): &(Arc<OwnQueue>, Filter)) {
        index.remove(&Target::Own(queue.clone()), filter);
    }

    fn matches(index: &Index, kind: &EventKind) -> Vec<u64> {
        let mut ids: Vec<u64> = index
            .matches(kind)
            .into_iter()
            .flatten()
            .map(|target| match target {
                Target::Own(queue) => queue.id().0,
                Target::Lane(_) => panic!("the test indexes queues only"),
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn routes_each_kind_to_exactly_its_listeners() {
        let mut index = Index::default();
        let entries = [
            entry(1, Filter::new().with_tools_list_changed()),
            entry(2, Filter::new().with_resource("a").with_resource("b")),
            entry(
                3,
                Filter::new().with_resource("b").with_prompts_list_changed(),
            ),
            entry(
                4,
                Filter::new().with_extension("taskIds", json!(["t1", "t2"])),
            ),
            entry(5, Filter::new().with_extension("taskIds", json!(true))),
            entry(
                6,
                Filter::everything()
                    .with_resource("a")
                    .with_extension("taskIds", json!(true)),
            ),
        ];
        for e in &entries {
            insert(&mut index, e);
        }
        let task = |key: Option<&str>| EventKind::Extension {
            method: "notifications/tasks".into(),
            selector: Some(Selector::new("taskIds", key.map(str::to_owned))),
        };
        assert_eq!(
            matches(&index, &EventKind::ListChanged(ListKind::Tools)),
            [1, 6]
        );
        assert_eq!(
            matches(&index, &EventKind::ListChanged(ListKind::Prompts)),
            [3, 6]
        );
        assert_eq!(
            matches(&index, &EventKind::ListChanged(ListKind::Resources)),
            [6]
        );
        let updated = |uri: &str| EventKind::ResourceUpdated { uri: uri.into() };
        assert_eq!(matches(&index, &updated("a")), [2, 6]);
        assert_eq!(matches(&index, &updated("b")), [2, 3, 6]);
        assert_eq!(matches(&index, &updated("c")), [6]);
        assert_eq!(matches(&index, &task(Some("t2"))), [4, 5, 6]);
        assert_eq!(matches(&index, &task(Some("t9"))), [5, 6]);
        assert_eq!(matches(&index, &task(None)), [5, 6]);

        remove(&mut index, &entries[1]);
        assert_eq!(matches(&index, &updated("a")), [6]);
        assert_eq!(matches(&index, &updated("b")), [3, 6]);
        for e in &entries {
            remove(&mut index, e);
            remove(&mut index, e);
        }
        assert!(index.is_empty());
    }

    #[test]
    fn swap_remove_keeps_positions_right() {
        let mut index = Index::default();
        let entries: Vec<_> = (0..5)
            .map(|i| entry(i, Filter::new().with_tools_list_changed()))
            .collect();
        entries.iter().for_each(|e| insert(&mut index, e));
        remove(&mut index, &entries[0]);
        remove(&mut index, &entries[2]);
        assert_eq!(
            matches(&index, &EventKind::ListChanged(ListKind::Tools)),
            [1, 3, 4]
        );
        remove(&mut index, &entries[4]);
        remove(&mut index, &entries[1]);
        assert_eq!(
            matches(&index, &EventKind::ListChanged(ListKind::Tools)),
            [3]
        );
    }
}
