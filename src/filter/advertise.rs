//! The capability bits a server advertises, derived from what it serves:
//! never more than it has, never a capability it lacks.

use rmcp::model::{ProtocolVersion, ServerCapabilities};

use super::capabilities::Capabilities;
use crate::event::ListKind;

impl Capabilities {
    /// `base` as a server whose subscriptions are served from these
    /// capabilities advertises it to a 2026-07-28 client: see
    /// [`advertise_to`](Self::advertise_to).
    pub fn advertise(&self, base: ServerCapabilities) -> ServerCapabilities {
        self.advertise_to(base, &ProtocolVersion::V_2026_07_28)
    }

    /// `base` as advertised to a client that negotiated `version`, with the
    /// subscription bits telling the truth:
    ///
    /// - `tools.listChanged`, `prompts.listChanged`, `resources.listChanged`
    ///   and `resources.subscribe` are set exactly when these capabilities
    ///   serve them, and only under a capability `base` declares: a server
    ///   without tools never claims `tools`, and a claim in `base` that is
    ///   not served is withdrawn; a bit `base` sets to `false` (a tool list
    ///   that never changes, say: `ToolsCapability { list_changed:
    ///   Some(false), .. }`) stays withdrawn, and no listen stream is
    ///   granted it;
    /// - the extensions served are listed under `extensions`, beside any
    ///   other the base lists;
    /// - a client of a revision before 2026-07-28 never opens a listen
    ///   stream, so nothing served here reaches it: every subscription bit
    ///   is withdrawn for it, unless its session is served
    ///   (`WithSubscriptions`, with the `stdio` or `http` feature, advertises
    ///   to it itself).
    ///
    /// ```
    /// use mcp_subscriptions::Capabilities;
    /// use rmcp::model::{ProtocolVersion, ServerCapabilities};
    ///
    /// let served = Capabilities::default(); // every core kind
    /// let base = ServerCapabilities::builder().enable_tools().build();
    ///
    /// let caps = served.advertise(base.clone());
    /// assert_eq!(caps.tools.unwrap().list_changed, Some(true));
    /// assert!(caps.prompts.is_none() && caps.resources.is_none(), "not created");
    ///
    /// let older = served.advertise_to(base, &ProtocolVersion::V_2025_11_25);
    /// assert_eq!(older.tools.unwrap().list_changed, None, "no listen streams there");
    /// ```
    pub fn advertise_to(
        &self,
        base: ServerCapabilities,
        version: &ProtocolVersion,
    ) -> ServerCapabilities {
        // ISO dates compare as strings in calendar order.
        let listens = version.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
        self.set_bits(base, listens, listens)
    }

    /// `base` as advertised to a client of an older revision whose session
    /// is sent these capabilities' notifications (as `WithSubscriptions`
    /// sends them, or a server itself): the bits of what is served, under
    /// what `base` declares, and no extension, since none reaches a
    /// session.
    ///
    /// ```
    /// use mcp_subscriptions::Capabilities;
    /// use rmcp::model::ServerCapabilities;
    ///
    /// let base = ServerCapabilities::builder().enable_resources().build();
    /// let caps = Capabilities::default().advertise_to_session(base);
    /// assert_eq!(caps.resources.unwrap().subscribe, Some(true));
    /// ```
    pub fn advertise_to_session(&self, base: ServerCapabilities) -> ServerCapabilities {
        self.set_bits(base, true, false)
    }

    /// Sets each subscription bit of `base` to whether it is served when
    /// what is served `reaches` the client (else withdraws every one), and
    /// lists the served extensions where `extensions`.
    fn set_bits(
        &self,
        mut base: ServerCapabilities,
        reaches: bool,
        extensions: bool,
    ) -> ServerCapabilities {
        // A bit the base sets to `false` says the list never changes.
        let bit = |served: bool, declared: Option<bool>| {
            (reaches && served && declared != Some(false)).then_some(true)
        };
        if let Some(tools) = &mut base.tools {
            tools.list_changed = bit(self.list_changed(ListKind::Tools), tools.list_changed);
        }
        if let Some(prompts) = &mut base.prompts {
            prompts.list_changed = bit(self.list_changed(ListKind::Prompts), prompts.list_changed);
        }
        if let Some(resources) = &mut base.resources {
            resources.list_changed = bit(
                self.list_changed(ListKind::Resources),
                resources.list_changed,
            );
            resources.subscribe = bit(self.resources_subscribe, resources.subscribe);
        }
        if extensions {
            // Additive only: the base may list extensions that have nothing
            // to do with subscriptions (skills, say).
            for extension in &self.extensions {
                base.extensions
                    .get_or_insert_with(Default::default)
                    .entry(extension.id().to_owned())
                    .or_default();
            }
        }
        base
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{PromptsCapability, ResourcesCapability, ToolsCapability};

    use super::*;
    use crate::filter::Extension;

    /// Every combination of served bits and declared capabilities, for
    /// each revision and for an older revision's served session: a bit is
    /// advertised exactly when it is served, its capability is declared and
    /// what is served reaches the client; no capability is ever created.
    #[test]
    fn each_bit_is_advertised_exactly_when_served_declared_and_reachable() {
        // `None`: an older revision's session that is served.
        let versions = [
            (Some(ProtocolVersion::V_2025_06_18), false),
            (Some(ProtocolVersion::V_2025_11_25), false),
            (Some(ProtocolVersion::V_2026_07_28), true),
            (None, true),
        ];
        for (version, listens) in versions {
            for served_bits in 0..16u8 {
                let served = Capabilities {
                    tools_list_changed: served_bits & 1 != 0,
                    prompts_list_changed: served_bits & 2 != 0,
                    resources_list_changed: served_bits & 4 != 0,
                    resources_subscribe: served_bits & 8 != 0,
                    extensions: Vec::new(),
                };
                for declared in 0..8u8 {
                    let mut base = ServerCapabilities::default();
                    if declared & 1 != 0 {
                        base.tools = Some(ToolsCapability::default());
                    }
                    if declared & 2 != 0 {
                        base.prompts = Some(PromptsCapability::default());
                    }
                    if declared & 4 != 0 {
                        // A claim the server may not honour is withdrawn.
                        let mut claims = ResourcesCapability::default();
                        claims.subscribe = Some(true);
                        claims.list_changed = Some(true);
                        base.resources = Some(claims);
                    }
                    let caps = match &version {
                        Some(version) => served.advertise_to(base, version),
                        None => served.advertise_to_session(base),
                    };
                    let case =
                        format!("{version:?}, served {served_bits:04b}, declared {declared:03b}");
                    let expect = |declared: bool, served: bool| {
                        declared.then_some((listens && served).then_some(true))
                    };
                    assert_eq!(
                        caps.tools.map(|t| t.list_changed),
                        expect(declared & 1 != 0, served.tools_list_changed),
                        "{case}"
                    );
                    assert_eq!(
                        caps.prompts.map(|p| p.list_changed),
                        expect(declared & 2 != 0, served.prompts_list_changed),
                        "{case}"
                    );
                    let resources = caps.resources.map(|r| (r.list_changed, r.subscribe));
                    let expected = (declared & 4 != 0).then(|| {
                        (
                            (listens && served.resources_list_changed).then_some(true),
                            (listens && served.resources_subscribe).then_some(true),
                        )
                    });
                    assert_eq!(resources, expected, "{case}");
                    assert!(caps.extensions.is_none(), "{case}");
                }
            }
        }
    }

    #[test]
    fn a_bit_the_server_sets_to_false_is_neither_advertised_nor_granted() {
        let mut base = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        base.tools.as_mut().unwrap().list_changed = Some(false);
        base.resources.as_mut().unwrap().subscribe = Some(false);
        let caps = Capabilities::default().advertise(base.clone());
        let resources = caps.resources.unwrap();
        assert_eq!(caps.tools.unwrap().list_changed, None);
        assert_eq!(
            (resources.list_changed, resources.subscribe),
            (Some(true), None)
        );
        let granted = Capabilities::default().within(&base);
        assert!(!granted.tools_list_changed && !granted.resources_subscribe);
        assert!(granted.resources_list_changed);
    }

    #[test]
    fn served_extensions_are_listed_beside_the_others() {
        let served =
            Capabilities::default().with_extension(Extension::new("io.modelcontextprotocol/tasks"));
        let mut base = ServerCapabilities::default();
        base.extensions = Some([("vendor/skills".to_owned(), Default::default())].into());
        let listed: Vec<_> = served
            .advertise(base.clone())
            .extensions
            .unwrap()
            .into_keys()
            .collect();
        assert_eq!(listed, ["io.modelcontextprotocol/tasks", "vendor/skills"]);
        let older = served.advertise_to(base.clone(), &ProtocolVersion::V_2025_11_25);
        let listed: Vec<_> = older.extensions.unwrap().into_keys().collect();
        assert_eq!(listed, ["vendor/skills"], "not reachable before 2026-07-28");
        let session = served.advertise_to_session(base);
        let listed: Vec<_> = session.extensions.unwrap().into_keys().collect();
        assert_eq!(listed, ["vendor/skills"], "no extension reaches a session");
    }
}
