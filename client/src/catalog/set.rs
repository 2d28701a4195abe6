//! Several servers' catalogs under one roof, each named, with a merged view
//! in which each server's [`Namespace`] tells its names and URIs apart
//! (`server/tool`, `server+file:///a.md` under the default [`Prefix`]).

use std::future::Future;
use std::sync::Arc;

use futures_util::future::{join_all, select_all};
use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};

use super::live::Catalog;
use super::namespace::{Namespace, Prefix};
use super::snapshot::Snapshot;
use crate::error::SubscribeError;

/// Named catalogs of several servers, in the order they were added. Each
/// is kept by its own task, so one server failing (unreachable,
/// restarting, refusing) leaves the others untouched: its last snapshot
/// stays in the merged view, and its [`health`](Catalog::health) says
/// what is wrong.
#[derive(Debug, Default)]
pub struct CatalogSet {
    members: Vec<Member>,
}

struct Member {
    name: String,
    catalog: Catalog,
    namespace: Arc<dyn Namespace>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("catalog", &self.catalog)
            .finish_non_exhaustive()
    }
}

impl CatalogSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens every catalog at once, each under the [`Prefix`] of its name;
    /// those that open make the set, and those that fail are returned with
    /// their errors, by name: a name the prefix cannot carry
    /// ([`Prefix::is_valid_name`]) with [`SubscribeError::Invalid`].
    pub async fn open<I, F>(servers: I) -> (Self, Vec<(String, SubscribeError)>)
    where
        I: IntoIterator<Item = (String, F)>,
        F: Future<Output = Result<Catalog, SubscribeError>>,
    {
        let mut failed = Vec::new();
        let (names, opening): (Vec<String>, Vec<F>) = servers
            .into_iter()
            .filter(|(name, _)| {
                let valid = Prefix::is_valid_name(name);
                if !valid {
                    failed.push((name.clone(), invalid_name(name)));
                }
                valid
            })
            .unzip();
        let mut set = Self::new();
        for (name, opened) in names.into_iter().zip(join_all(opening).await) {
            match opened {
                Ok(catalog) => {
                    set.insert_with(name.clone(), catalog, Prefix::new(name));
                }
                Err(error) => failed.push((name, error)),
            }
        }
        (set, failed)
    }

    /// Adds `catalog` as `name`, under the [`Prefix`] of its name; the
    /// catalog it replaces, if any.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::Invalid`] for a name the prefix cannot carry
    /// ([`Prefix::is_valid_name`]).
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        catalog: Catalog,
    ) -> Result<Option<Catalog>, SubscribeError> {
        let name = name.into();
        if !Prefix::is_valid_name(&name) {
            return Err(invalid_name(&name));
        }
        Ok(self.insert_with(name.clone(), catalog, Prefix::new(name)))
    }

    /// Adds `catalog` as `name`, its names and URIs mapped by `namespace`;
    /// the catalog it replaces, if any.
    pub fn insert_with(
        &mut self,
        name: impl Into<String>,
        catalog: Catalog,
        namespace: impl Namespace,
    ) -> Option<Catalog> {
        let member = Member {
            name: name.into(),
            catalog,
            namespace: Arc::new(namespace),
        };
        match self.members.iter_mut().find(|m| m.name == member.name) {
            Some(old) => Some(std::mem::replace(old, member).catalog),
            None => {
                self.members.push(member);
                None
            }
        }
    }

    /// Removes the catalog called `name`, and stops keeping it when it is
    /// dropped.
    pub fn remove(&mut self, name: &str) -> Option<Catalog> {
        let at = self.members.iter().position(|m| m.name == name)?;
        Some(self.members.remove(at).catalog)
    }

    /// The catalog called `name`.
    pub fn get(&self, name: &str) -> Option<&Catalog> {
        self.member(name).map(|m| &m.catalog)
    }

    /// The namespace of the catalog called `name`.
    pub fn namespace(&self, name: &str) -> Option<&dyn Namespace> {
        self.member(name).map(|m| &*m.namespace)
    }

    /// The names and catalogs, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Catalog)> {
        self.members.iter().map(|m| (m.name.as_str(), &m.catalog))
    }

    /// The server a merged tool or prompt name belongs to (the first whose
    /// namespace claims it), and the name there.
    pub fn claim_name(&self, name: &str) -> Option<(&str, String)> {
        self.members
            .iter()
            .find_map(|m| Some((m.name.as_str(), m.namespace.name_up(name)?)))
    }

    /// The server a merged resource URI belongs to, and the URI there.
    pub fn claim_uri(&self, uri: &str) -> Option<(&str, String)> {
        self.members
            .iter()
            .find_map(|m| Some((m.name.as_str(), m.namespace.uri_up(uri)?)))
    }

    /// Every catalog's snapshot now.
    pub fn snapshot(&self) -> Merged {
        Merged {
            servers: self
                .members
                .iter()
                .map(|m| Server {
                    name: m.name.clone(),
                    snapshot: m.catalog.snapshot(),
                    namespace: Arc::clone(&m.namespace),
                })
                .collect(),
        }
    }

    /// Waits until any catalog has a later generation than in `seen` (or
    /// one that `seen` lacks), and returns the merged view then. With no
    /// catalogs, it waits forever.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    pub async fn changed(&self, seen: &Merged) -> Merged {
        let waits: Vec<_> = self
            .members
            .iter()
            .map(|m| {
                let after = seen.server(&m.name).map_or(0, |s| s.generation);
                Box::pin(m.catalog.changed(after))
            })
            .collect();
        if waits.is_empty() {
            std::future::pending::<()>().await;
        }
        select_all(waits).await;
        self.snapshot()
    }

    fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }
}

fn invalid_name(name: &str) -> SubscribeError {
    SubscribeError::Invalid(format!(
        "{name:?} cannot name a server: it must start with an ASCII letter and hold only letters, digits, '-' and '.'"
    ))
}

/// The catalogs of a [`CatalogSet`] at one moment, each server's snapshot
/// under its name, its entries named as its namespace says.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    servers: Vec<Server>,
}

#[derive(Clone)]
struct Server {
    name: String,
    snapshot: Arc<Snapshot>,
    namespace: Arc<dyn Namespace>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl Merged {
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
