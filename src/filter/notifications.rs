//! The filter itself: the `notifications` object of a listen request, its
//! builders, its matching of events, and its wire form.

use indexmap::IndexSet;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::field;
use crate::event::{EventKind, ListKind};

/// The notification types a listen stream asked for, or was granted.
///
/// # Extension fields
///
/// An extension field routes events when its value is an array of strings
/// (each string is a key, like a task id) or `true` (the whole kind).
/// Any other value is kept and echoed but matches nothing.
///
/// # Matching everything
///
/// [`Filter::everything`] matches every event: all list-changed kinds, every
/// resource URI and every extension event. It is meant for channels that
/// carry every notification (the Diverge notification channel) and has no
/// faithful wire form: it serializes as the three list-changed flags.
///
/// # Example
///
/// Built from the wire with [`Filter::from_notifications`] or
/// [`Filter::from_listen_params`], or in code:
///
/// ```
/// use mcp_subscriptions::Filter;
///
/// let filter = Filter::new()
///     .with_tools_list_changed()
///     .with_resource("file:///project/config.json");
/// assert_eq!(
///     serde_json::to_string(&filter).unwrap(),
///     r#"{"toolsListChanged":true,"resourceSubscriptions":["file:///project/config.json"]}"#,
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    // Visible to the parser and the narrowing beside this file.
    /// Whether each list's changes are asked for, by [`ListKind::index`].
    pub(super) lists: [bool; 3],
    /// Distinct URIs in the order they were first asked for, so that the
    /// acknowledgement echoes the request faithfully, each once; looked up
    /// on every resource update.
    pub(super) resource_subscriptions: IndexSet<String>,
    pub(super) extensions: Map<String, Value>,
    pub(super) everything: bool,
}

impl Filter {
    /// A filter that asks for nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// A filter that matches every event: all list-changed kinds, every
    /// resource URI and every extension event.
    pub fn everything() -> Self {
        Self {
            lists: [true; 3],
            everything: true,
            ..Self::default()
        }
    }

    /// Adds the notification that `list` changed.
    pub fn with_list_changed(mut self, list: ListKind) -> Self {
        self.lists[list.index()] = true;
        self
    }

    /// Adds `notifications/tools/list_changed`.
    pub fn with_tools_list_changed(self) -> Self {
        self.with_list_changed(ListKind::Tools)
    }

    /// Adds `notifications/prompts/list_changed`.
    pub fn with_prompts_list_changed(self) -> Self {
        self.with_list_changed(ListKind::Prompts)
    }

    /// Adds `notifications/resources/list_changed`.
    pub fn with_resources_list_changed(self) -> Self {
        self.with_list_changed(ListKind::Resources)
    }

    /// Adds `notifications/resources/updated` for `uri` (exact match). A URI
    /// already present is not added twice.
    pub fn with_resource(mut self, uri: impl Into<String>) -> Self {
        self.resource_subscriptions.insert(uri.into());
        self
    }

    /// Removes `notifications/resources/updated` for `uri`, if present; the
    /// other URIs keep their order.
    pub fn without_resource(mut self, uri: &str) -> Self {
        self.resource_subscriptions.shift_remove(uri);
        self
    }

    /// Sets an extension field (for example `taskIds`), kept verbatim.
    pub fn with_extension(mut self, field: impl Into<String>, value: Value) -> Self {
        self.extensions.insert(field.into(), value);
        self
    }

    /// Whether the notification that `list` changed is included.
    pub fn list_changed(&self, list: ListKind) -> bool {
        self.lists[list.index()]
    }

    /// The lists whose changes are included.
    pub fn lists_changed(&self) -> impl Iterator<Item = ListKind> + '_ {
        ListKind::ALL
            .into_iter()
            .filter(|&list| self.list_changed(list))
    }

    /// Whether `notifications/tools/list_changed` is included.
    pub fn tools_list_changed(&self) -> bool {
        self.list_changed(ListKind::Tools)
    }

    /// Whether `notifications/prompts/list_changed` is included.
    pub fn prompts_list_changed(&self) -> bool {
        self.list_changed(ListKind::Prompts)
    }

    /// Whether `notifications/resources/list_changed` is included.
    pub fn resources_list_changed(&self) -> bool {
        self.list_changed(ListKind::Resources)
    }

    /// The distinct resource URIs, in the order first asked for.
    pub fn resource_subscriptions(&self) -> impl ExactSizeIterator<Item = &str> {
        self.resource_subscriptions.iter().map(String::as_str)
    }

    /// The extension fields, verbatim.
    pub fn extensions(&self) -> &Map<String, Value> {
        &self.extensions
    }

    /// Whether this is the [match-everything](Self::everything) filter.
    pub fn is_everything(&self) -> bool {
        self.everything
    }

    /// Whether the filter asks for nothing at all.
    pub fn is_empty(&self) -> bool {
        !(self.lists.contains(&true) || self.everything)
            && self.resource_subscriptions.is_empty()
            && self.extensions.is_empty()
    }

    /// Whether an event of this kind may be delivered under this filter.
    pub fn matches(&self, kind: &EventKind) -> bool {
        match kind {
            EventKind::ListChanged(list) => self.list_changed(*list),
            EventKind::ResourceUpdated { uri } => {
                self.everything || self.resource_subscriptions.contains(uri.as_str())
            }
            EventKind::Extension { .. } if !kind.travels_on_listen_streams() => self.everything,
            EventKind::Extension { selector, .. } => {
                self.everything
                    || selector.as_ref().is_some_and(|selector| {
                        match (self.extensions.get(selector.field()), selector.key()) {
                            (Some(Value::Bool(true)), _) => true,
                            (Some(Value::Array(keys)), Some(key)) => {
                                keys.iter().any(|k| k.as_str() == Some(key))
                            }
                            _ => false,
                        }
                    })
            }
        }
    }

    /// What both filters ask for: the subset of `self` that `other` also
    /// names. An authorization hook's answer is intersected with the request
    /// this way, so a stream is never granted more than it asked for.
    ///
    /// An extension field kept by both is kept when both hold the same
    /// value; when both list ids, the ids in both; when one is `true`
    /// (every id), the other's value.
    ///
    /// ```
    /// use mcp_subscriptions::Filter;
    /// use serde_json::json;
    ///
    /// let asked = Filter::new()
    ///     .with_tools_list_changed()
    ///     .with_resource("file:///a")
    ///     .with_resource("file:///b")
    ///     .with_extension("taskIds", json!(["t1", "t2"]));
    /// let allowed = Filter::new()
    ///     .with_resource("file:///b")
    ///     .with_extension("taskIds", json!(["t2", "t3"]));
    /// assert_eq!(
    ///     asked.intersect(&allowed),
    ///     Filter::new().with_resource("file:///b").with_extension("taskIds", json!(["t2"])),
    /// );
    /// ```
    pub fn intersect(&self, other: &Filter) -> Filter {
        if other.everything {
            return self.clone();
        }
        if self.everything {
            return other.clone();
        }
        let extensions = self
            .extensions
            .iter()
            .filter_map(|(field, mine)| {
                let theirs = other.extensions.get(field)?;
                let both = match (mine, theirs) {
                    (Value::Bool(true), value) | (value, Value::Bool(true)) => value.clone(),
                    (Value::Array(mine), Value::Array(theirs)) => Value::Array(
                        mine.iter()
                            .filter(|id| theirs.contains(id))
                            .cloned()
                            .collect(),
                    ),
                    (mine, theirs) if mine == theirs => mine.clone(),
                    _ => return None,
                };
                Some((field.clone(), both))
            })
            .collect();
        Filter {
            lists: ListKind::ALL.map(|list| self.list_changed(list) && other.list_changed(list)),
            resource_subscriptions: self
                .resource_subscriptions
                .iter()
                .filter(|uri| other.resource_subscriptions.contains(*uri))
                .cloned()
                .collect(),
            extensions,
            everything: false,
        }
    }

    /// This filter as requests of at most `max_uris` URIs each (servers
    /// refuse more in one): the first keeps the list kinds and the
    /// extension fields, the others carry only URIs.
    #[doc(hidden)]
    pub fn chunks(&self, max_uris: usize) -> Vec<Filter> {
        if self.resource_subscriptions.len() <= max_uris {
            return vec![self.clone()];
        }
        let uris: Vec<&String> = self.resource_subscriptions.iter().collect();
        uris.chunks(max_uris.max(1))
            .enumerate()
            .map(|(n, chunk)| {
                let base = if n == 0 {
                    Filter {
                        resource_subscriptions: IndexSet::new(),
                        ..self.clone()
                    }
                } else {
                    Filter::new()
                };
                Filter {
                    resource_subscriptions: chunk.iter().map(|uri| (*uri).clone()).collect(),
                    ..base
                }
            })
            .collect()
    }

    /// What either filter asks for: the grant of several [chunks](Self::chunks)
    /// as one. An extension field both set keeps this filter's value.
    #[doc(hidden)]
    pub fn union(mut self, other: &Filter) -> Filter {
        for (index, asked) in other.lists.iter().enumerate() {
            self.lists[index] |= asked;
        }
        self.resource_subscriptions
            .extend(other.resource_subscriptions.iter().cloned());
        for (field, value) in &other.extensions {
            self.extensions
                .entry(field.clone())
                .or_insert_with(|| value.clone());
        }
        self.everything |= other.everything;
        self
    }

    /// The keys an extension field routes by: its strings when it is an
    /// array of strings (other elements are ignored).
    pub(crate) fn extension_keys(&self) -> impl Iterator<Item = (&str, &str)> {
        self.extensions.iter().flat_map(|(field, value)| {
            value
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(move |key| (field.as_str(), key))
        })
    }

    /// The extension fields set to `true`: the listener takes every event of
    /// that extension kind.
    pub(crate) fn extension_flags(&self) -> impl Iterator<Item = &str> {
        self.extensions
            .iter()
            .filter(|(_, value)| **value == Value::Bool(true))
            .map(|(field, _)| field.as_str())
    }
}

impl Serialize for Filter {
    /// The acknowledgement's `notifications` object: only what is included,
    /// core fields first, then extension fields verbatim.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for list in self.lists_changed() {
            map.serialize_entry(list.filter_field(), &true)?;
        }
        if !self.resource_subscriptions.is_empty() {
            map.serialize_entry(field::RESOURCE_SUBSCRIPTIONS, &self.resource_subscriptions)?;
        }
        for (name, value) in &self.extensions {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl From<&rmcp::model::SubscriptionFilter> for Filter {
    fn from(filter: &rmcp::model::SubscriptionFilter) -> Self {
        Self {
            lists: [
                filter.tools_list_changed,
                filter.prompts_list_changed,
                filter.resources_list_changed,
            ]
            .map(|flag| flag == Some(true)),
            resource_subscriptions: filter
                .resource_subscriptions
                .iter()
                .flatten()
                .cloned()
                .collect(),
            ..Self::default()
        }
    }
}

impl From<&Filter> for rmcp::model::SubscriptionFilter {
    /// rmcp's filter has no extension fields: they are left out, and the
    /// match-everything filter becomes its three list-changed flags.
    fn from(filter: &Filter) -> Self {
        let mut out = Self::default();
        let flag = |list| filter.list_changed(list).then_some(true);
        out.tools_list_changed = flag(ListKind::Tools);
        out.prompts_list_changed = flag(ListKind::Prompts);
        out.resources_list_changed = flag(ListKind::Resources);
        out.resource_subscriptions = (!filter.resource_subscriptions.is_empty())
            .then(|| filter.resource_subscriptions.iter().cloned().collect());
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::Selector;

    #[test]
    fn serializes_only_what_is_included_in_wire_order() {
        let filter = Filter::new()
            .with_resource("file:///b")
            .with_prompts_list_changed()
            .with_resource("file:///a")
            .with_resource("file:///b")
            .with_extension("taskIds", json!(["t1"]));
        assert_eq!(
            serde_json::to_string(&filter).unwrap(),
            r#"{"promptsListChanged":true,"resourceSubscriptions":["file:///b","file:///a"],"taskIds":["t1"]}"#
        );
        assert_eq!(serde_json::to_string(&Filter::new()).unwrap(), "{}");
    }

    #[test]
    fn round_trips_through_json() {
        let filter = Filter::new()
            .with_tools_list_changed()
            .with_resource("file:///a")
            .with_extension("x-custom", json!({"deep": [1, 2]}));
        let text = serde_json::to_string(&filter).unwrap();
        assert_eq!(serde_json::from_str::<Filter>(&text).unwrap(), filter);
    }

    #[test]
    fn matches_only_granted_kinds_and_uris() {
        let filter = Filter::new()
            .with_tools_list_changed()
            .with_resource("file:///a");
        assert!(filter.matches(&EventKind::ListChanged(ListKind::Tools)));
        assert!(!filter.matches(&EventKind::ListChanged(ListKind::Prompts)));
        assert!(!filter.matches(&EventKind::ListChanged(ListKind::Resources)));
        assert!(filter.matches(&EventKind::ResourceUpdated {
            uri: "file:///a".into()
        }));
        assert!(!filter.matches(&EventKind::ResourceUpdated {
            uri: "file:///A".into()
        }));
    }

    #[test]
    fn extension_fields_route_by_key_or_flag() {
        let keyed = Filter::new().with_extension("taskIds", json!(["t1", 7]));
        let flagged = Filter::new().with_extension("taskIds", json!(true));
        let event = |key: Option<&str>| EventKind::Extension {
            method: "notifications/tasks".into(),
            selector: Some(Selector::new("taskIds", key.map(str::to_owned))),
        };
        assert!(keyed.matches(&event(Some("t1"))));
        assert!(!keyed.matches(&event(Some("t2"))));
        assert!(!keyed.matches(&event(None)));
        assert!(flagged.matches(&event(Some("t2"))));
        assert!(flagged.matches(&event(None)));
        assert_eq!(
            keyed.extension_keys().collect::<Vec<_>>(),
            [("taskIds", "t1")]
        );
        assert_eq!(flagged.extension_flags().collect::<Vec<_>>(), ["taskIds"]);
    }

    #[test]
    fn everything_matches_every_kind() {
        let all = Filter::everything();
        assert!(all.matches(&EventKind::ResourceUpdated { uri: "any".into() }));
        assert!(all.matches(&EventKind::Extension {
            method: "x".into(),
            selector: Some(Selector::new("anything", None)),
        }));
        assert!(!all.is_empty());
        assert!(Filter::new().is_empty());
    }

    #[test]
    fn converts_to_and_from_rmcp() {
        let ours = Filter::new()
            .with_resources_list_changed()
            .with_resource("file:///a")
            .with_extension("taskIds", json!(["t"]));
        let theirs = rmcp::model::SubscriptionFilter::from(&ours);
        assert_eq!(theirs.resources_list_changed, Some(true));
        assert_eq!(theirs.tools_list_changed, None);
        assert_eq!(
            theirs.resource_subscriptions.as_deref(),
            Some(&["file:///a".to_owned()][..])
        );
        let back = Filter::from(&theirs);
        assert_eq!(
            back,
            Filter::new()
                .with_resources_list_changed()
                .with_resource("file:///a")
        );
    }

    #[test]
    fn chunks_of_many_uris_cover_the_filter_and_unite_back_into_it() {
        let mut filter = Filter::new()
            .with_tools_list_changed()
            .with_extension("taskIds", serde_json::json!(["t"]));
        for n in 0..2_500 {
            filter = filter.with_resource(format!("file:///{n}"));
        }
        let chunks = filter.chunks(1_000);
        assert_eq!(
            chunks
                .iter()
                .map(|c| c.resource_subscriptions.len())
                .collect::<Vec<_>>(),
            [1_000, 1_000, 500]
        );
        assert!(chunks[0].tools_list_changed() && !chunks[1].tools_list_changed());
        assert!(chunks[1].extensions().is_empty());
        let united = chunks
            .iter()
            .fold(Filter::new(), |all, chunk| all.union(chunk));
        assert_eq!(united, filter);
        assert_eq!(Filter::new().chunks(1_000), [Filter::new()]);
    }
}
