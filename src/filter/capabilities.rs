//! What the server advertises, and narrowing a request down to it.
//!
//! The granted filter keeps a kind only if its capability bit is advertised:
//! `tools.listChanged`, `prompts.listChanged`, `resources.listChanged`, and
//! `resources.subscribe` for `resourceSubscriptions`. Extension fields are
//! kept only when a declared [`Extension`] owns them.

use super::extension::Extension;
use super::notifications::Filter;
use crate::error::OpenError;
use crate::event::ListKind;

/// The notification capabilities a server advertises.
///
/// ```
/// use mcp_subscriptions::{Capabilities, Filter};
///
/// let advertised = Capabilities::none().with_tools_list_changed();
/// let requested = Filter::new().with_tools_list_changed().with_resource("file:///a");
/// assert_eq!(requested.narrow(&advertised), Filter::new().with_tools_list_changed());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
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
    /// The extensions the server serves; filter fields none of them owns
    /// are narrowed away.
    pub extensions: Vec<Extension>,
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
    /// These capabilities less the core bits whose capability `base` does
    /// not declare, or declares with the bit `false`: what a server that
    /// declares `base` may grant (a server without prompts grants no prompt
    /// changes, one whose tool list never changes no tool changes).
    /// Extensions are kept.
    pub(crate) fn within(&self, base: &rmcp::model::ServerCapabilities) -> Self {
        // Declared, and not said to be `false`.
        let may = |declared: Option<Option<bool>>| declared.is_some_and(|bit| bit != Some(false));
        let resources = base.resources.as_ref();
        Self {
            tools_list_changed: self.tools_list_changed
                && may(base.tools.as_ref().map(|tools| tools.list_changed)),
            prompts_list_changed: self.prompts_list_changed
                && may(base.prompts.as_ref().map(|prompts| prompts.list_changed)),
            resources_list_changed: self.resources_list_changed
                && may(resources.map(|resources| resources.list_changed)),
            resources_subscribe: self.resources_subscribe
                && may(resources.map(|resources| resources.subscribe)),
            extensions: self.extensions.clone(),
        }
    }

    /// Advertises nothing.
    pub fn none() -> Self {
        Self {
            tools_list_changed: false,
            prompts_list_changed: false,
            resources_list_changed: false,
            resources_subscribe: false,
            extensions: Vec::new(),
        }
    }

    /// Whether `list`'s `listChanged` bit is advertised.
    pub fn list_changed(&self, list: ListKind) -> bool {
        match list {
            ListKind::Tools => self.tools_list_changed,
            ListKind::Prompts => self.prompts_list_changed,
            ListKind::Resources => self.resources_list_changed,
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

    /// Serves `extension`, replacing any earlier declaration of the same id.
    pub fn with_extension(mut self, extension: Extension) -> Self {
        self.extensions.retain(|e| e.id() != extension.id());
        self.extensions.push(extension);
        self
    }

    /// The declared extension that owns the filter field `field`.
    pub fn extension_owning(&self, field: &str) -> Option<&Extension> {
        self.extensions.iter().find(|e| e.owns(field))
    }

    /// Checks a request's extension fields before anything is granted:
    /// each field a declared extension owns must pass its validator, and
    /// must come from a client that declared the extension when the
    /// extension requires it (`client_declares` says whether the client
    /// declared an extension id). Fields no extension owns are not checked;
    /// [`Filter::narrow`] leaves them out.
    ///
    /// # Errors
    ///
    /// [`OpenError::CapabilityRequired`] (`-32021`) for an undeclared
    /// extension that requires declaring, then
    /// [`OpenError::InvalidParams`] (`-32602`) for a field its validator
    /// refuses.
    pub fn check_extensions(
        &self,
        requested: &Filter,
        client_declares: impl Fn(&str) -> bool,
    ) -> Result<(), OpenError> {
        for (field, value) in requested.extensions() {
            let Some(extension) = self.extension_owning(field) else {
                continue;
            };
            if extension.requires_client_declaration() && !client_declares(extension.id()) {
                return Err(OpenError::CapabilityRequired {
                    extension: extension.id().to_owned(),
                });
            }
            extension.validate(field, value)?;
        }
        Ok(())
    }

    /// Whether a notification of `method`, routed by the filter field
    /// `field`, may travel on listen streams: the extension owning the field
    /// lists the method (or lists none, which leaves it unrestricted).
    pub fn routes(&self, method: &str, field: &str) -> bool {
        self.extension_owning(field)
            .is_none_or(|extension| extension.methods().next().is_none() || extension.sends(method))
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
            extensions: caps
                .extensions
                .iter()
                .flatten()
                .map(|(id, _)| Extension::new(id.as_str()))
                .collect(),
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
            lists: ListKind::ALL
                .map(|list| self.list_changed(list) && advertised.list_changed(list)),
            resource_subscriptions: if advertised.resources_subscribe {
                self.resource_subscriptions.clone()
            } else {
                Default::default()
            },
            extensions: self
                .extensions
                .iter()
                .filter(|(field, _)| advertised.extension_owning(field).is_some())
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
        let caps = Capabilities::default().with_extension(
            Extension::new("io.modelcontextprotocol/tasks").with_id_list("taskIds", 10),
        );
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

    #[test]
    fn extension_fields_are_checked_against_their_declaration() {
        let tasks = Extension::new("io.modelcontextprotocol/tasks")
            .with_id_list("taskIds", 2)
            .requiring_client_declaration();
        let caps = Capabilities::default().with_extension(tasks);
        let asks = |value| Filter::new().with_extension("taskIds", value);
        let declared = |id: &str| id == "io.modelcontextprotocol/tasks";
        assert!(caps.check_extensions(&asks(json!(["t"])), declared).is_ok());
        let err = caps
            .check_extensions(&asks(json!(["t"])), |_| false)
            .unwrap_err();
        assert_eq!(err.to_error_data().code.0, -32021);
        let err = caps
            .check_extensions(&asks(json!(["a", "b", "c"])), declared)
            .unwrap_err();
        assert_eq!(err.to_error_data().code.0, -32602);
        let unknown = Filter::new().with_extension("x-unknown", json!(3));
        assert!(caps.check_extensions(&unknown, |_| false).is_ok());
    }

    #[test]
    fn only_listed_methods_route_under_an_extension_field() {
        let caps = Capabilities::default().with_extension(
            Extension::new("io.modelcontextprotocol/tasks")
                .with_id_list("taskIds", 10)
                .with_method("notifications/tasks"),
        );
        assert!(caps.routes("notifications/tasks", "taskIds"));
        assert!(!caps.routes("notifications/other", "taskIds"));
        assert!(caps.routes("vendor/x", "unowned"));
    }
}
