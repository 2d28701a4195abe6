//! The keys a filter names besides its lists: what an event is routed by
//! besides its kind, what a hub's interest and a relay's key channels
//! count, and what demand hooks attach.

use std::collections::HashSet;

use super::notifications::Filter;

/// A key some listener watches: what an event is routed by besides its kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum InterestKey {
    /// A resource URI in some listener's `resourceSubscriptions`.
    Resource(String),
    /// One key of an extension field's id list (a task id in `taskIds`).
    Extension {
        /// The filter field, for example `taskIds`.
        field: String,
        /// The key within it.
        key: String,
    },
}

impl Filter {
    /// The keys it names, each once: its resource URIs and the keys of its
    /// extensions' id lists. None for a match-everything filter, or a
    /// field taken whole (`"taskIds": true`): they name no key.
    pub(crate) fn interest_keys(&self) -> HashSet<InterestKey> {
        if self.is_everything() {
            return HashSet::new();
        }
        let uris = self
            .resource_subscriptions()
            .map(|uri| InterestKey::Resource(uri.to_owned()));
        let extension = self
            .extension_keys()
            .map(|(field, key)| InterestKey::Extension {
                field: field.to_owned(),
                key: key.to_owned(),
            });
        uris.chain(extension).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_filter_names_each_key_once() {
        let filter = Filter::new()
            .with_resource("file:///a")
            .with_extension("taskIds", json!(["t1", "t1"]));
        let mut found: Vec<_> = filter.interest_keys().into_iter().collect();
        found.sort_unstable();
        assert_eq!(
            found,
            [
                InterestKey::Resource("file:///a".into()),
                InterestKey::Extension {
                    field: "taskIds".into(),
                    key: "t1".into()
                }
            ]
        );
        assert!(Filter::everything().interest_keys().is_empty());
    }
}
