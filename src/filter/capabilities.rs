//! What the server advertises, and narrowing a request down to it.
//!
//! The granted filter keeps a kind only if its capability bit is advertised:
//! `tools.listChanged`, `prompts.listChanged`, `resources.listChanged`, and
//! `resources.subscribe` for `resourceSubscriptions`. Extension fields are
//! kept only for extensions the server declares it serves.

use std::collections::BTreeSet;

use super::notifications::Filter;

/// The notification capabilities a server advertises.
///
/// ```
/// use mcp_subscriptions::{Capabilities, Filter};
///
/// let advertised = Capabilities::none().with_tools_list_changed();
/// let requested = Filter::new().with_tools_list_changed().with_resource("file:///a");
/// assert_eq!(requested.narrow(&advertised), Filter::new().with_tools_list_changed());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// `tools.listChanged`.
    pub tools_list_changed: bool,
    /// `prompts.listChanged`.
    pub prompts_list_changed: bool,
    /// `resources.listChanged`.
    pub resources_list_changed: bool,
    /// `resources.subscribe`, which gates `resourceSubscriptions`.
    pub resources_subscribe: bool,
    /// The extension filter fields the server serves (for example
    /// `taskIds`); other extension fields are narrowed away.
    pub extension_fields: BTreeSet<String>,
}

impl Default for Capabilities {
    /// Every core capability, no extension.
    fn default() -> Self {
        Self::none()
            .with_tools_list_changed()
            .with_prompts_list_changed()
            .with_resources_list_changed()
            .with_resources_subscribe()
    }
}

impl Capabilities {
    /// Advertises nothing.
    pub fn none() -> Self {
        Self {
            tools_list_changed: false,
            prompts_list_changed: false,
            resources_list_changed: false,
            resources_subscribe: false,
            extension_fields: BTreeSet::new(),
        }
    }

    /// Adds `tools.listChanged`.
    pub fn with_tools_list_changed(mut self) -> Self {
        self.tools_list_changed = true;
        self
    }

    /// Adds `prompts.listChanged`.
    pub fn with_prompts_list_changed(mut self) -> Self {
        self.prompts_list_changed = true;
        self
    }

    /// Adds `resources.listChanged`.
    pub fn with_resources_list_changed(mut self) -> Self {
        self.resources_list_changed = true;
        self
    }

    /// Adds `resources.subscribe`.
    pub fn with_resources_subscribe(mut self) -> Self {
        self.resources_subscribe = true;
        self
    }

    /// Serves the extension filter field `field` (for example `taskIds`).
    pub fn with_extension_field(mut self, field: impl Into<String>) -> Self {
        self.extension_fields.insert(field.into());
        self
    }
}

impl From<&rmcp::model::ServerCapabilities> for Capabilities {
    fn from(caps: &rmcp::model::ServerCapabilities) -> Self {
        Self {
            tools_list_changed: caps
                .tools
                .as_ref()
                .is_some_and(|t| t.list_changed == Some(true)),
            prompts_list_changed: caps
                .prompts
                .as_ref()
                .is_some_and(|p| p.list_changed == Some(true)),
            resources_list_changed: caps
                .resources
                .as_ref()
                .is_some_and(|r| r.list_changed == Some(true)),
            resources_subscribe: caps
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true)),
            extension_fields: BTreeSet::new(),
        }
    }
}

impl Filter {
    /// The subset of this request that a server advertising `advertised`
    /// honors: what the acknowledgement carries and what gets routed.
    ///
    /// The [match-everything](Filter::everything) filter is not narrowed: a
    /// channel that carries every notification has no capability gate.
    pub fn narrow(&self, advertised: &Capabilities) -> Filter {
        if self.everything {
            return self.clone();
        }
        Filter {
            tools_list_changed: self.tools_list_changed && advertised.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed && advertised.prompts_list_changed,
            resources_list_changed: self.resources_list_changed
                && advertised.resources_list_changed,
            resource_subscriptions: if advertised.resources_subscribe {
                self.resource_subscriptions.clone()
            } else {
                Default::default()
            },
            extensions: self
                .extensions
                .iter()
                .filter(|(field, _)| advertised.extension_fields.contains(*field))
                .map(|(field, value)| (field.clone(), value.clone()))
                .collect(),
            everything: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn requested() -> Filter {
        Filter::new()
            .with_tools_list_changed()
            .with_prompts_list_changed()
            .with_resources_list_changed()
            .with_resource("file:///a")
            .with_extension("taskIds", json!(["t1"]))
            .with_extension("x-unknown", json!(true))
    }

    #[test]
    fn advertising_everything_keeps_core_and_served_extensions() {
        let caps = Capabilities::default().with_extension_field("taskIds");
        let granted = requested().narrow(&caps);
        assert_eq!(
            serde_json::to_value(&granted).unwrap(),
            json!({
                "toolsListChanged": true,
                "promptsListChanged": true,
                "resourcesListChanged": true,
                "resourceSubscriptions": ["file:///a"],
                "taskIds": ["t1"],
            })
        );
    }

    #[test]
    fn each_missing_bit_removes_its_kind() {
        let granted = requested().narrow(&Capabilities::none().with_prompts_list_changed());
        assert_eq!(granted, Filter::new().with_prompts_list_changed());
        let granted = requested().narrow(&Capabilities::none().with_resources_subscribe());
        assert_eq!(granted, Filter::new().with_resource("file:///a"));
        assert!(requested().narrow(&Capabilities::none()).is_empty());
    }

    #[test]
    fn reads_rmcp_server_capabilities() {
        let caps: rmcp::model::ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true},
        }))
        .unwrap();
        let ours = Capabilities::from(&caps);
        assert!(ours.tools_list_changed);
        assert!(!ours.prompts_list_changed);
        assert!(!ours.resources_list_changed);
        assert!(ours.resources_subscribe);
    }
}
