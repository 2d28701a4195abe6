//! The kinds of change an application can publish, and how extension events
//! are routed.

/// One of the lists a server can say changed. Each knows its notification
/// method, its filter field and its capability.
///
/// ```
/// use mcp_subscriptions::ListKind;
///
/// assert_eq!(ListKind::Prompts.method(), "notifications/prompts/list_changed");
/// assert_eq!(ListKind::Prompts.filter_field(), "promptsListChanged");
/// assert_eq!(ListKind::Prompts.capability(), "prompts.listChanged");
/// assert_eq!(ListKind::of_method("notifications/prompts/list_changed"), Some(ListKind::Prompts));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
}

impl ListKind {
    /// Every list, in the order the protocol names them.
    pub const ALL: [Self; 3] = [Self::Tools, Self::Prompts, Self::Resources];

    /// The notification that says the list changed, such as
    /// `notifications/tools/list_changed`.
    pub fn method(self) -> &'static str {
        match self {
            Self::Tools => "notifications/tools/list_changed",
            Self::Prompts => "notifications/prompts/list_changed",
            Self::Resources => "notifications/resources/list_changed",
        }
    }

    /// The listen filter's field that asks for it, such as
    /// `toolsListChanged`.
    pub fn filter_field(self) -> &'static str {
        match self {
            Self::Tools => "toolsListChanged",
            Self::Prompts => "promptsListChanged",
            Self::Resources => "resourcesListChanged",
        }
    }

    /// The server capability bit that advertises it, such as
    /// `tools.listChanged`.
    pub fn capability(self) -> &'static str {
        match self {
            Self::Tools => "tools.listChanged",
            Self::Prompts => "prompts.listChanged",
            Self::Resources => "resources.listChanged",
        }
    }

    /// The list whose change `method` notifies, if it is such a method.
    pub fn of_method(method: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|list| list.method() == method)
    }

    /// Its place in [`ALL`](Self::ALL), to index per-list arrays by.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// What changed. Each kind knows the notification method it travels as.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// `notifications/tools/list_changed`, `notifications/prompts/list_changed`
    /// or `notifications/resources/list_changed`.
    ListChanged(ListKind),
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
    /// The kind a notification with `method` is: a core kind when the method
    /// is one (a resource update needs the string `uri` of its params),
    /// otherwise an extension event routed by `selector`.
    pub(crate) fn of(
        method: String,
        uri: impl FnOnce() -> Option<String>,
        selector: Option<Selector>,
    ) -> Self {
        if let Some(list) = ListKind::of_method(&method) {
            return Self::ListChanged(list);
        }
        match (method.as_str(), uri) {
            ("notifications/resources/updated", uri) => match uri() {
                Some(uri) => Self::ResourceUpdated { uri },
                None => Self::Extension { method, selector },
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
            Self::ListChanged(list) => list.method(),
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
