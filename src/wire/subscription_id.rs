//! A listen request's id, rendered once for every event stamped with it.

use bytes::Bytes;
use rmcp::model::RequestId;
use serde_json::Value;

/// The id of a `subscriptions/listen` request as its events carry it in
/// `_meta["io.modelcontextprotocol/subscriptionId"]`: rendered to JSON once
/// per stream, so that stamping an event costs no rendering at all.
///
/// ```
/// use mcp_subscriptions::{Event, SubscriptionId};
/// use rmcp::model::RequestId;
///
/// let id = SubscriptionId::new(&RequestId::String("listen-1".into()));
/// assert_eq!(id.as_json(), r#""listen-1""#);
/// let message = Event::tools_list_changed().stamped(&id);
/// assert!(String::from_utf8(message.to_vec()).unwrap().contains(r#"subscriptionId":"listen-1""#));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionId {
    json: Bytes,
}

impl SubscriptionId {
    /// The `_meta` key a stream's notifications carry its id under:
    /// `io.modelcontextprotocol/subscriptionId`.
    pub const META_KEY: &'static str = super::meta::SUBSCRIPTION_ID;

    /// `id`, written verbatim: a string stays a string, a number a number.
    pub fn new(id: &RequestId) -> Self {
        Self {
            json: Bytes::from(request_id_json(id)),
        }
    }

    /// The id's JSON text.
    pub fn as_json(&self) -> &str {
        std::str::from_utf8(&self.json).expect("rendered JSON is UTF-8")
    }

    /// The JSON text, shared.
    pub(crate) fn json(&self) -> Bytes {
        self.json.clone()
    }
}

impl From<&RequestId> for SubscriptionId {
    fn from(id: &RequestId) -> Self {
        Self::new(id)
    }
}

/// The JSON text of a request id: a string stays a string, a number a number.
pub(crate) fn request_id_json(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => Value::from(&**s).to_string(),
    }
}
