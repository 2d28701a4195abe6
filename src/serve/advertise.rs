//! The capability bits a server advertises, derived from what is installed.

use rmcp::model::{PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability};

use crate::error::AdvertiseError;
use crate::event::ListKind;
use crate::filter::Capabilities;
use crate::source::Source;

/// Builds the `ServerCapabilities` a server advertises, with the
/// `listChanged` and `subscribe` bits set from the installed [`Source`], and
/// its declared [`Extension`](crate::Extension)s listed under `extensions`.
///
/// The protocol forbids advertising those bits without a subscription
/// source, so [`build`](Self::build) refuses a base that sets one when no
/// source was given, or one the source does not serve.
///
/// ```
/// use mcp_subscriptions::{Advertise, Hub};
/// use rmcp::model::ServerCapabilities;
///
/// let hub = Hub::new();
/// let caps = Advertise::new(ServerCapabilities::default()).source(&hub).build().unwrap();
/// assert_eq!(caps.tools.unwrap().list_changed, Some(true));
/// assert_eq!(caps.resources.unwrap().subscribe, Some(true));
///
/// let mut claims = ServerCapabilities::default();
/// claims.prompts = Some(Default::default());
/// claims.prompts.as_mut().unwrap().list_changed = Some(true);
/// assert!(Advertise::new(claims).build().is_err());
/// ```
#[derive(Debug, Clone)]
#[must_use = "call `build` to get the capabilities"]
pub struct Advertise {
    base: ServerCapabilities,
    served: Option<Capabilities>,
}

impl Advertise {
    /// Starts from the server's other capabilities.
    pub fn new(base: ServerCapabilities) -> Self {
        Self { base, served: None }
    }

    /// Installs `source`: its capabilities become the advertised bits.
    pub fn source<S: Source>(mut self, source: &S) -> Self {
        self.served = Some(source.capabilities());
        self
    }

    /// The capabilities to advertise.
    ///
    /// # Errors
    ///
    /// [`AdvertiseError::NoSource`] when the base already advertises a
    /// subscription bit and no source is installed;
    /// [`AdvertiseError::NotServed`] when it advertises one the source does
    /// not serve.
    pub fn build(self) -> Result<ServerCapabilities, AdvertiseError> {
        let claimed = Capabilities::from(&self.base);
        let installed = self.served.is_some();
        let served = self.served.unwrap_or_else(Capabilities::none);
        let lists = ListKind::ALL.map(|list| {
            (
                list.capability(),
                claimed.list_changed(list),
                served.list_changed(list),
            )
        });
        let subscribe = (
            "resources.subscribe",
            claimed.resources_subscribe,
            served.resources_subscribe,
        );
        for (name, claims, serves) in lists.into_iter().chain([subscribe]) {
            if claims && !serves {
                return Err(if !installed {
                    AdvertiseError::NoSource { capability: name }
                } else {
                    AdvertiseError::NotServed { capability: name }
                });
            }
        }
        let mut caps = self.base;
        // Additive only: the base may list extensions that have nothing to
        // do with subscriptions (skills, say), which are not ours to refuse.
        for extension in &served.extensions {
            caps.extensions
                .get_or_insert_with(Default::default)
                .entry(extension.id().to_owned())
                .or_default();
        }
        if served.tools_list_changed {
            caps.tools
                .get_or_insert_with(ToolsCapability::default)
                .list_changed = Some(true);
        }
        if served.prompts_list_changed {
            caps.prompts
                .get_or_insert_with(PromptsCapability::default)
                .list_changed = Some(true);
        }
        if served.resources_list_changed || served.resources_subscribe {
            let resources = caps
                .resources
                .get_or_insert_with(ResourcesCapability::default);
            if served.resources_list_changed {
                resources.list_changed = Some(true);
            }
            if served.resources_subscribe {
                resources.subscribe = Some(true);
            }
        }
        Ok(caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hub;

    #[test]
    fn a_source_sets_exactly_its_bits() {
        let hub = Hub::builder()
            .capabilities(Capabilities::none().with_prompts_list_changed())
            .build();
        let caps = Advertise::new(ServerCapabilities::default())
            .source(&hub)
            .build()
            .unwrap();
        assert_eq!(caps.prompts.unwrap().list_changed, Some(true));
        assert!(caps.tools.is_none());
        assert!(caps.resources.is_none());
        assert!(
            caps.extensions.is_none(),
            "no extension installed, none listed"
        );
    }

    #[test]
    fn installed_extensions_are_listed_beside_the_others() {
        let tasks = crate::Extension::new("io.modelcontextprotocol/tasks");
        let hub = Hub::builder()
            .capabilities(Capabilities::default().with_extension(tasks))
            .build();
        let mut base = ServerCapabilities::default();
        base.extensions = Some([("vendor/skills".to_owned(), Default::default())].into());
        let caps = Advertise::new(base).source(&hub).build().unwrap();
        let listed: Vec<_> = caps.extensions.unwrap().into_keys().collect();
        assert_eq!(listed, ["io.modelcontextprotocol/tasks", "vendor/skills"]);
    }

    #[test]
    fn claims_without_a_source_are_refused() {
        let mut base = ServerCapabilities::default();
        base.resources = Some(ResourcesCapability::default());
        base.resources.as_mut().unwrap().subscribe = Some(true);
        assert_eq!(
            Advertise::new(base.clone()).build().unwrap_err(),
            AdvertiseError::NoSource {
                capability: "resources.subscribe"
            }
        );
        let tools_only = Hub::builder()
            .capabilities(Capabilities::none().with_tools_list_changed())
            .build();
        assert_eq!(
            Advertise::new(base)
                .source(&tools_only)
                .build()
                .unwrap_err(),
            AdvertiseError::NotServed {
                capability: "resources.subscribe"
            }
        );
        // Capabilities without subscription bits need no source.
        let mut plain = ServerCapabilities::default();
        plain.tools = Some(ToolsCapability::default());
        assert!(Advertise::new(plain).build().is_ok());
    }
}
