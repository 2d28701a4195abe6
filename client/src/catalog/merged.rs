//! The merged view of a catalog set at one moment.

use std::sync::Arc;

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};

use super::namespace::Namespace;
use super::snapshot::Snapshot;

/// The open catalogs of a [`CatalogSet`](super::CatalogSet) at one
/// moment, each server's snapshot under its name, its entries named as its
/// namespace says, and whether each server is [up](Self::is_up).
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// The set's version it was taken at.
    version: u64,
    servers: Vec<Server>,
}

#[derive(Clone)]
struct Server {
    name: String,
    snapshot: Arc<Snapshot>,
    namespace: Arc<dyn Namespace>,
    /// Whether its listen says it is there.
    up: bool,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("up", &self.up)
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl Merged {
    pub(super) fn new(
        version: u64,
        servers: impl Iterator<Item = (String, Arc<Snapshot>, Arc<dyn Namespace>, bool)>,
    ) -> Self {
        Self {
            version,
            servers: servers
                .map(|(name, snapshot, namespace, up)| Server {
                    name,
                    snapshot,
                    namespace,
                    up,
                })
                .collect(),
        }
    }

    pub(super) fn version(&self) -> u64 {
        self.version
    }

    /// The sum of the servers' generations: it rises whenever any of them
    /// changes (while the set keeps the same servers).
    pub fn generation(&self) -> u64 {
        self.servers.iter().map(|s| s.snapshot.generation).sum()
    }

    /// One server's snapshot.
    pub fn server(&self, name: &str) -> Option<&Arc<Snapshot>> {
        self.servers
            .iter()
            .find(|s| s.name == name)
            .map(|s| &s.snapshot)
    }

    /// Whether the server called `name` is up: its catalog's listen is
    /// open (or it has nothing to listen to). A server that went down, is
    /// restarting or refuses its listen is in the view with its last
    /// snapshot, but not up; `false` for a server not in the view.
    pub fn is_up(&self, name: &str) -> bool {
        self.servers.iter().any(|s| s.name == name && s.up)
    }

    /// The view of the servers that are up alone: what a host offers when
    /// what a server that is down offered must not be called.
    pub fn up(&self) -> Self {
        Self {
            version: self.version,
            servers: self.servers.iter().filter(|s| s.up).cloned().collect(),
        }
    }

    /// The servers' snapshots, in the set's order.
    pub fn servers(&self) -> impl Iterator<Item = (&str, &Arc<Snapshot>)> {
        self.servers.iter().map(|s| (s.name.as_str(), &s.snapshot))
    }

    /// Every server's tools, each with its merged name (`server/tool`), by
    /// server.
    pub fn tools(&self) -> impl Iterator<Item = (String, &Tool)> {
        self.merged(|s| s.tools(), |ns, tool| ns.name_down(&tool.name))
    }

    /// Every server's prompts, each with its merged name.
    pub fn prompts(&self) -> impl Iterator<Item = (String, &Prompt)> {
        self.merged(|s| s.prompts(), |ns, prompt| ns.name_down(&prompt.name))
    }

    /// Every server's resources, each with its merged URI
    /// (`server+file:///a.md`).
    pub fn resources(&self) -> impl Iterator<Item = (String, &Resource)> {
        self.merged(|s| s.resources(), |ns, resource| ns.uri_down(&resource.uri))
    }

    /// Every server's resource templates, each with its merged URI
    /// template.
    pub fn templates(&self) -> impl Iterator<Item = (String, &ResourceTemplate)> {
        self.merged(
            |s| s.templates(),
            |ns, template| ns.uri_down(&template.uri_template),
        )
    }

    /// The tool of that merged name, and its server's name.
    pub fn tool(&self, name: &str) -> Option<(&str, &Tool)> {
        self.servers.iter().find_map(|s| {
            let tool = s.snapshot.tool(&s.namespace.name_up(name)?)?;
            Some((s.name.as_str(), tool))
        })
    }

    /// The prompt of that merged name, and its server's name.
    pub fn prompt(&self, name: &str) -> Option<(&str, &Prompt)> {
        self.servers.iter().find_map(|s| {
            let prompt = s.snapshot.prompt(&s.namespace.name_up(name)?)?;
            Some((s.name.as_str(), prompt))
        })
    }

    fn merged<'a, T: 'a>(
        &'a self,
        list: fn(&'a Snapshot) -> &'a [T],
        rename: fn(&dyn Namespace, &T) -> String,
    ) -> impl Iterator<Item = (String, &'a T)> {
        self.servers.iter().flat_map(move |s| {
            list(&s.snapshot)
                .iter()
                .map(move |entry| (rename(&*s.namespace, entry), entry))
        })
    }
}
