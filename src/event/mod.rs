//! The facts an application publishes: "this list changed", "this resource
//! was updated", or an extension's notification.
//!
//! An [`Event`] is rendered to JSON once, when it is created, and shared by
//! every listener it reaches (cloning is a reference-count increment).
//! Writing it to a stream stamps the listen request's id into `_meta` by
//! splicing bytes ([`Event::stamped`]), never by serializing again.

mod kind;
mod succession;

use std::fmt;
use std::sync::Arc;

use rmcp::model::RequestId;
use serde_json::{Map, Value};

pub use kind::{EventKind, ListKind, Selector};
pub use succession::Succession;

use crate::audience::Audience;
use crate::wire::notification::Rendering;
use crate::wire::received::Received;
use crate::wire::{Message, SubscriptionId};

/// A published change, rendered once and shared by every listener it
/// reaches.
///
/// ```
/// use mcp_subscriptions::Event;
/// use rmcp::model::RequestId;
///
/// let event = Event::resource_updated("file:///a");
/// let id = RequestId::String("listen-1".into());
/// assert_eq!(
///     event.to_stamped_json(&id),
///     r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"uri":"file:///a"}}"#,
/// );
/// ```
#[cfg_attr(not(mcp_subscriptions_census), derive(Clone))]
pub struct Event(Arc<Published>);

/// The census (`sync::census`) counts an event's clones and drops: they
/// are the writes of its reference count.
#[cfg(mcp_subscriptions_census)]
impl Clone for Event {
    #[track_caller]
    fn clone(&self) -> Self {
        crate::sync::census::note(Arc::as_ptr(&self.0), std::panic::Location::caller());
        Self(self.0.clone())
    }
}

#[cfg(mcp_subscriptions_census)]
impl Drop for Event {
    fn drop(&mut self) {
        crate::sync::census::note(Arc::as_ptr(&self.0), std::panic::Location::caller());
    }
}

#[derive(Debug, Clone)]
struct Published {
    kind: EventKind,
    rendering: Rendering,
    /// A second copy would add nothing: an idempotent kind whose params say
    /// no more than the kind does (no `_meta`, no extra fields).
    idempotent: bool,
    succession: Option<Succession>,
    audience: Audience,
}

impl Event {
    fn new(kind: EventKind, params: &Map<String, Value>) -> Self {
        let rendering = Rendering::render(kind.method(), params);
        let idempotent = kind.is_idempotent() && params.keys().all(|key| key == "uri");
        Self::published(kind, rendering, idempotent)
    }

    fn published(kind: EventKind, rendering: Rendering, idempotent: bool) -> Self {
        Self(Arc::new(Published {
            kind,
            rendering,
            idempotent,
            succession: None,
            audience: Audience::everyone(),
        }))
    }

    /// The notification that `list` changed.
    pub fn list_changed(list: ListKind) -> Self {
        Self::new(EventKind::ListChanged(list), &Map::new())
    }

    /// `notifications/tools/list_changed`.
    pub fn tools_list_changed() -> Self {
        Self::list_changed(ListKind::Tools)
    }

    /// `notifications/prompts/list_changed`.
    pub fn prompts_list_changed() -> Self {
        Self::list_changed(ListKind::Prompts)
    }

    /// `notifications/resources/list_changed`.
    pub fn resources_list_changed() -> Self {
        Self::list_changed(ListKind::Resources)
    }

    /// `notifications/resources/updated` for `uri`.
    pub fn resource_updated(uri: impl Into<String>) -> Self {
        let uri = uri.into();
        let mut params = Map::new();
        params.insert("uri".to_owned(), Value::from(uri.as_str()));
        Self::new(EventKind::ResourceUpdated { uri }, &params)
    }

    /// Any other notification (an extension's, or one this crate does not
    /// know), routed by `selector`; with `None` only
    /// [match-everything](crate::Filter::everything) listeners receive it.
    ///
    /// `params` is the notification's params object; a `_meta` object in it
    /// is kept, and the subscription id is stamped next to its entries.
    ///
    /// A core method (`notifications/tools/list_changed`, …, or
    /// `notifications/resources/updated` with a `uri`) becomes its core kind
    /// and is routed as such, whatever the selector, so it never reaches a
    /// listener that did not ask for it. Progress and log notifications
    /// reach only match-everything listeners, never a listen stream.
    ///
    /// ```
    /// use mcp_subscriptions::{Event, Filter, Selector};
    /// use serde_json::json;
    ///
    /// let status = json!({"taskId": "t1", "status": "working"});
    /// let event = Event::extension(
    ///     "notifications/tasks",
    ///     status.as_object().unwrap().clone(),
    ///     Some(Selector::new("taskIds", Some("t1".into()))),
    /// );
    /// let filter = Filter::new().with_extension("taskIds", json!(["t1"]));
    /// assert!(filter.matches(event.kind()));
    /// ```
    pub fn extension(
        method: impl Into<String>,
        params: Map<String, Value>,
        selector: Option<Selector>,
    ) -> Self {
        let uri = || params.get("uri").and_then(Value::as_str).map(str::to_owned);
        let kind = EventKind::of(method.into(), uri, selector);
        Self::new(kind, &params)
    }

    /// The notification whose JSON text is `text`, as a listen stream or a
    /// notification channel carried it: a JSON-RPC notification, or the
    /// bare one (`method` and `params`). Its params are kept as the JSON
    /// they came as (numbers, escapes and order unchanged; only line breaks
    /// between tokens go), never parsed into values and rendered again. A
    /// subscription id in `_meta` is dropped, as stamping replaces it; a
    /// key given twice in one object keeps its last value, as `JSON.parse`
    /// reads it. Routed as [`extension`](Self::extension) routes: a core method
    /// becomes its core kind, any other by `selector`.
    ///
    /// ```
    /// use mcp_subscriptions::Event;
    /// use rmcp::model::RequestId;
    ///
    /// let received = r#"{"jsonrpc":"2.0","method":"x/y","params":{
    ///     "_meta":{"io.modelcontextprotocol/subscriptionId":1},"n":1.50}}"#;
    /// let event = Event::from_json(received, None)?;
    /// assert_eq!(event.method(), "x/y");
    /// assert_eq!(
    ///     event.to_stamped_json(&RequestId::Number(2)),
    ///     r#"{"jsonrpc":"2.0","method":"x/y","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"n":1.50}}"#,
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When `text` is no notification: not a JSON object, `jsonrpc` not
    /// `"2.0"`, an `id` (a request), no string `method`, or `params` or its
    /// `_meta` neither an object nor `null`.
    pub fn from_json(text: &str, selector: Option<Selector>) -> Result<Self, serde_json::Error> {
        let received = Received::read(text)?;
        let uri = || {
            let (_, uri) = received.body.iter().find(|(key, _)| key == "uri")?;
            serde_json::from_str(uri.get()).ok()
        };
        let kind = EventKind::of(received.method.clone().into_owned(), uri, selector);
        let idempotent = kind.is_idempotent()
            && received.meta.is_empty()
            && received.body.iter().all(|(key, _)| key == "uri");
        Ok(Self::published(kind, received.rendering(), idempotent))
    }

    /// What changed.
    pub fn kind(&self) -> &EventKind {
        &self.0.kind
    }

    /// Whether a second copy of this event, published while the first is
    /// still queued, would add nothing: a list-changed signal, or a
    /// resource update that carries only its URI. Coalescing queues absorb
    /// such duplicates; an event with any other params is always queued.
    pub fn is_idempotent(&self) -> bool {
        self.0.idempotent
    }

    /// Places this event among the events about one thing (see
    /// [`Succession`]); an event in a succession is never coalesced as
    /// idempotent, only superseded by a newer version.
    pub fn with_succession(mut self, succession: Succession) -> Self {
        let published = Arc::make_mut(&mut self.0);
        published.succession = Some(succession);
        published.idempotent = false;
        self
    }

    /// Addresses this event to `audience`: it reaches only the listeners
    /// whose filter matches and that the audience names (see [`Audience`]).
    pub fn with_audience(mut self, audience: Audience) -> Self {
        Arc::make_mut(&mut self.0).audience = audience;
        self
    }

    /// Who it is for: everyone, unless [`with_audience`](Self::with_audience)
    /// said otherwise.
    pub fn audience(&self) -> &Audience {
        &self.0.audience
    }

    /// What other replicas are sent of it: the event without the listener
    /// ids its audience names (another hub's ids name other listeners), or
    /// nothing when those were all it named.
    pub(crate) fn for_other_replicas(self) -> Option<Self> {
        let Some(members) = self.0.audience.members() else {
            return Some(self);
        };
        if members.listeners.is_empty() {
            return Some(self);
        }
        let audience = self.0.audience.without_listeners();
        let names_someone = audience.members().is_some_and(|m| m.len() > 0);
        names_someone.then(|| self.with_audience(audience))
    }

    /// Its place among the events about one thing, if it has one.
    pub fn succession(&self) -> Option<&Succession> {
        self.0.succession.as_ref()
    }

    /// Whether it is the last of its succession.
    pub(crate) fn is_terminal(&self) -> bool {
        self.0
            .succession
            .as_ref()
            .is_some_and(Succession::is_terminal)
    }

    /// The size of its rendering in bytes: what a queued copy holds, and
    /// what byte bounds on queues count.
    pub fn rendered_len(&self) -> usize {
        self.0.rendering.len()
    }

    /// The notification's JSON-RPC method.
    pub fn method(&self) -> &str {
        self.0.kind.method()
    }

    /// The notification stamped with
    /// `_meta["io.modelcontextprotocol/subscriptionId"] = id`, as a
    /// [`Message`] that shares this event's rendering: it costs the same
    /// whatever the size of the event.
    pub fn stamped(&self, id: &SubscriptionId) -> Message {
        self.0.rendering.stamped(id.json())
    }

    /// The notification stamped with `id`, as a string (a copy of
    /// [`stamped`](Self::stamped)'s message).
    pub fn to_stamped_json(&self, id: &RequestId) -> String {
        into_string(self.stamped(&SubscriptionId::new(id)).to_vec())
    }

    /// Appends the notification without a subscription id to `out`, as a
    /// JSON-RPC message.
    pub fn write_plain(&self, out: &mut Vec<u8>) {
        self.0.rendering.write_plain(true, out);
    }

    /// Appends the bare notification (`method` and `params`, no `jsonrpc`
    /// member, no subscription id) to `out`: what rmcp's
    /// `ServerNotification` serializes to, and what a channel frame carries.
    pub fn write_notification(&self, out: &mut Vec<u8>) {
        self.0.rendering.write_plain(false, out);
    }

    /// The notification without a subscription id, as a string.
    pub fn to_plain_json(&self) -> String {
        let mut out = Vec::new();
        self.write_plain(&mut out);
        into_string(out)
    }

    /// Whether two handles share the same rendering (one publish).
    pub fn ptr_eq(&self, other: &Event) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Event").field(&self.0.kind).finish()
    }
}

impl PartialEq for Event {
    /// Events are equal when they are the same kind with the same rendering,
    /// for the same audience.
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other)
            || (self.0.kind == other.0.kind
                && self.0.audience == other.0.audience
                && self.to_plain_json() == other.to_plain_json())
    }
}

fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("rendered JSON is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_kinds_render_their_wire_methods() {
        let id = RequestId::Number(7);
        let expect = |event: Event, method: &str| {
            assert_eq!(event.method(), method);
            let expected = format!(
                r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/subscriptionId":7}}}}}}"#
            );
            assert_eq!(event.to_stamped_json(&id), expected);
        };
        expect(
            Event::tools_list_changed(),
            "notifications/tools/list_changed",
        );
        expect(
            Event::prompts_list_changed(),
            "notifications/prompts/list_changed",
        );
        expect(
            Event::resources_list_changed(),
            "notifications/resources/list_changed",
        );
    }

    #[test]
    fn string_ids_are_escaped_verbatim() {
        let id = RequestId::String(r#"a"b"#.into());
        let text = Event::tools_list_changed().to_stamped_json(&id);
        assert!(
            text.contains(r#""io.modelcontextprotocol/subscriptionId":"a\"b""#),
            "{text}"
        );
    }

    #[test]
    fn core_methods_published_as_extensions_keep_their_core_kind() {
        let selector = Some(Selector::new("taskIds", Some("t".into())));
        let listed = Event::extension(
            "notifications/tools/list_changed",
            Map::new(),
            selector.clone(),
        );
        assert_eq!(listed.kind(), &EventKind::ListChanged(ListKind::Tools));
        let mut params = Map::new();
        params.insert("uri".into(), Value::from("file:///a"));
        let updated = Event::extension("notifications/resources/updated", params, selector.clone());
        assert_eq!(
            updated.kind(),
            &EventKind::ResourceUpdated {
                uri: "file:///a".into()
            }
        );
        let progress = Event::extension("notifications/progress", Map::new(), selector);
        assert!(!progress.kind().travels_on_listen_streams());
        let filter = crate::Filter::new().with_extension("taskIds", serde_json::json!(true));
        assert!(!filter.matches(progress.kind()));
        assert!(crate::Filter::everything().matches(progress.kind()));
    }

    #[test]
    fn only_bare_signals_are_idempotent() {
        assert!(Event::tools_list_changed().is_idempotent());
        assert!(Event::resource_updated("file:///a").is_idempotent());
        let mut params = Map::new();
        params.insert("uri".into(), Value::from("file:///a"));
        params.insert("_meta".into(), serde_json::json!({"trace": 1}));
        let with_meta = Event::extension("notifications/resources/updated", params, None);
        assert!(matches!(
            with_meta.kind(),
            EventKind::ResourceUpdated { .. }
        ));
        assert!(!with_meta.is_idempotent(), "its _meta would be lost");
        assert!(!Event::extension("x/y", Map::new(), None).is_idempotent());
    }

    #[test]
    fn an_event_read_back_from_its_stamped_json_is_itself() {
        let uri = || Value::from("file:///a");
        for (method, params) in [
            ("notifications/tools/list_changed", serde_json::json!({})),
            (
                "notifications/resources/updated",
                serde_json::json!({"uri": uri()}),
            ),
            (
                "notifications/resources/updated",
                serde_json::json!({"uri": uri(), "_meta": {"trace": [1, "t"]}}),
            ),
            (
                "notifications/resources/updated",
                serde_json::json!({"uri": 7}),
            ),
            ("x/y", serde_json::json!({"a": {"b": null}, "c": "\"q\""})),
        ] {
            let params = params.as_object().unwrap().clone();
            let event = Event::extension(method, params, None);
            let text = event.to_stamped_json(&RequestId::Number(3));
            let read = Event::from_json(&text, None).unwrap();
            assert_eq!(read, event, "{text}");
            assert_eq!(read.is_idempotent(), event.is_idempotent(), "{text}");
            assert_eq!(read.rendered_len(), event.rendered_len(), "{text}");
        }
    }

    #[test]
    fn json_read_keeps_its_values_as_they_came_but_for_line_breaks() {
        let text = "{\"method\":\"x/y\",\"params\":{\"n\":123456789012345678901234567890,\r\n\
                    \"f\":1.50,\"s\":\"\\u00e9\",\"l\":[1,\n 2]}}";
        let event = Event::from_json(text, None).unwrap();
        assert_eq!(
            event.to_plain_json(),
            r#"{"jsonrpc":"2.0","method":"x/y","params":{"n":123456789012345678901234567890,"f":1.50,"s":"\u00e9","l":[1, 2]}}"#
        );
        let selector = Selector::new("taskIds", Some("t".into()));
        let routed = Event::from_json(text, Some(selector.clone())).unwrap();
        assert_eq!(
            routed.kind(),
            &EventKind::Extension {
                method: "x/y".into(),
                selector: Some(selector)
            }
        );
        assert!(Event::from_json(r#"{"id":1,"method":"x/y"}"#, None).is_err());
    }

    #[test]
    fn equal_events_share_kind_audience_and_rendering() {
        let updated = || Event::resource_updated("file:///a");
        assert_eq!(updated(), updated());
        assert_ne!(updated(), Event::resource_updated("file:///b"), "kind");
        assert_ne!(
            updated(),
            updated().with_audience(Audience::nobody()),
            "audience"
        );
        let mut params = Map::new();
        params.insert("uri".into(), Value::from("file:///a"));
        params.insert("size".into(), Value::from(1));
        let with_more = Event::extension("notifications/resources/updated", params, None);
        assert_eq!(with_more.kind(), updated().kind());
        assert_ne!(updated(), with_more, "rendering");
    }

    #[test]
    fn other_replicas_are_sent_no_listener_ids() {
        let everyone = Event::tools_list_changed();
        assert!(
            everyone
                .clone()
                .for_other_replicas()
                .unwrap()
                .ptr_eq(&everyone)
        );
        let named = |audience: Audience| {
            let mut audience = audience;
            audience.members_mut().listeners.push(7);
            Event::tools_list_changed().with_audience(audience)
        };
        assert!(named(Audience::nobody()).for_other_replicas().is_none());
        let shared = named(Audience::principal("alice"))
            .for_other_replicas()
            .unwrap();
        assert_eq!(shared.audience(), &Audience::principal("alice"));
        let unnamed = Event::tools_list_changed().with_audience(Audience::principal("bob"));
        assert!(
            unnamed
                .clone()
                .for_other_replicas()
                .unwrap()
                .ptr_eq(&unnamed)
        );
    }

    #[test]
    fn clones_share_one_rendering() {
        let event = Event::resource_updated("file:///a");
        assert!(event.clone().ptr_eq(&event));
        assert_eq!(event, Event::resource_updated("file:///a"));
        assert!(!event.ptr_eq(&Event::resource_updated("file:///a")));
    }
}
