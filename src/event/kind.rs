//! The kinds of change an application can publish, and how extension events
//! are routed.

/// What changed. Each kind knows the notification method it travels as.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated` for one resource.
    ResourceUpdated {
        /// The resource, matched exactly against `resourceSubscriptions`.
        uri: String,
    },
    /// Any other notification: an extension's (such as `notifications/tasks`)
    /// or one this crate does not know.
    Extension {
        /// The notification method.
        method: String,
        /// The filter field and key it is routed by; `None` means only
        /// [match-everything](crate::Filter::everything) listeners get it.
        selector: Option<Selector>,
    },
}

impl EventKind {
    /// The kind a notification with `method` and `params` is: a core kind
    /// when the method is one (a resource update needs a string `uri`),
    /// otherwise an extension event routed by `selector`.
    pub(crate) fn of(
        method: String,
        params: &serde_json::Map<String, serde_json::Value>,
        selector: Option<Selector>,
    ) -> Self {
        match method.as_str() {
            "notifications/tools/list_changed" => Self::ToolsListChanged,
            "notifications/prompts/list_changed" => Self::PromptsListChanged,
            "notifications/resources/list_changed" => Self::ResourcesListChanged,
            "notifications/resources/updated" => match params.get("uri") {
                Some(serde_json::Value::String(uri)) => Self::ResourceUpdated { uri: uri.clone() },
                _ => Self::Extension { method, selector },
            },
            _ => Self::Extension { method, selector },
        }
    }

    /// Whether a second copy of this event adds nothing while the first is
    /// still pending (a list changed; one URI updated), so a coalescing
    /// queue may absorb it. Extension events carry data and never are.
    pub fn is_idempotent(&self) -> bool {
        !matches!(self, Self::Extension { .. })
    }

    /// Whether the kind may travel on a `subscriptions/listen` stream at
    /// all: progress and log notifications never do, whoever asks.
    pub fn travels_on_listen_streams(&self) -> bool {
        !matches!(
            self,
            Self::Extension { method, .. }
                if method == "notifications/progress" || method == "notifications/message"
        )
    }

    /// The JSON-RPC method of the notification.
    pub fn method(&self) -> &str {
        match self {
            Self::ToolsListChanged => "notifications/tools/list_changed",
            Self::PromptsListChanged => "notifications/prompts/list_changed",
            Self::ResourcesListChanged => "notifications/resources/list_changed",
            Self::ResourceUpdated { .. } => "notifications/resources/updated",
            Self::Extension { method, .. } => method,
        }
    }
}

/// How an extension event finds its listeners: by a filter field and,
/// optionally, one key in it.
///
/// `Selector::new("taskIds", Some("t1"))` reaches listeners whose filter has
/// `"taskIds": [..., "t1", ...]` or `"taskIds": true`;
/// `Selector::new("x", None)` reaches only listeners with `"x": true`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Selector {
    field: String,
    key: Option<String>,
}

impl Selector {
    /// A selector on extension filter field `field`, optionally for one key.
    pub fn new(field: impl Into<String>, key: Option<String>) -> Self {
        Self {
            field: field.into(),
            key,
        }
    }

    /// The extension filter field, for example `taskIds`.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The key within the field, for example a task id.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
}
