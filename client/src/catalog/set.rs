//! Several servers' catalogs under one roof, each named, with a merged view
//! that namespaces what each lists (`server/tool`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::{join_all, select_all};
use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};

use super::live::Catalog;
use super::snapshot::Snapshot;
use crate::error::SubscribeError;

/// Between a server's name and an entry's in the merged view.
const SEPARATOR: char = '/';

/// Named catalogs of several servers. Each is kept by its own task, so one
/// server failing (unreachable, restarting, refusing) leaves the others
/// untouched: its last snapshot stays in the merged view, and its
/// [`health`](Catalog::health) says what is wrong.
#[derive(Debug, Default)]
pub struct CatalogSet {
    catalogs: BTreeMap<String, Catalog>,
}

impl CatalogSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens every catalog at once; those that open make the set, and
    /// those that fail are returned with their errors, by name.
    ///
    /// # Panics
    ///
    /// When a name is empty or holds a `/`, which separates it from an
    /// entry's name in the merged view.
    pub async fn open<I, F>(servers: I) -> (Self, Vec<(String, SubscribeError)>)
    where
        I: IntoIterator<Item = (String, F)>,
        F: Future<Output = Result<Catalog, SubscribeError>>,
    {
        let (names, opening): (Vec<String>, Vec<F>) = servers.into_iter().unzip();
        names.iter().for_each(|name| check(name));
        let mut set = Self::new();
        let mut failed = Vec::new();
        for (name, opened) in names.into_iter().zip(join_all(opening).await) {
            match opened {
                Ok(catalog) => {
                    set.catalogs.insert(name, catalog);
                }
                Err(error) => failed.push((name, error)),
            }
        }
        (set, failed)
    }

    /// Adds `catalog` as `name`; the catalog it replaces, if any.
    ///
    /// # Panics
    ///
    /// As [`open`](Self::open), for the name.
    pub fn insert(&mut self, name: impl Into<String>, catalog: Catalog) -> Option<Catalog> {
        let name = name.into();
        check(&name);
        self.catalogs.insert(name, catalog)
    }

    /// Removes the catalog called `name`, and stops keeping it when it is
    /// dropped.
    pub fn remove(&mut self, name: &str) -> Option<Catalog> {
        self.catalogs.remove(name)
    }

    /// The catalog called `name`.
    pub fn get(&self, name: &str) -> Option<&Catalog> {
        self.catalogs.get(name)
    }

    /// The names and catalogs, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Catalog)> {
        self.catalogs
            .iter()
            .map(|(name, catalog)| (name.as_str(), catalog))
    }

    /// Every catalog's snapshot now.
    pub fn snapshot(&self) -> Merged {
        Merged {
            servers: self
                .catalogs
                .iter()
                .map(|(name, catalog)| (name.clone(), catalog.snapshot()))
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
            .catalogs
            .iter()
            .map(|(name, catalog)| {
                let after = seen.servers.get(name).map_or(0, |s| s.generation);
                Box::pin(catalog.changed(after))
            })
            .collect();
        if waits.is_empty() {
            std::future::pending::<()>().await;
        }
        select_all(waits).await;
        self.snapshot()
    }
}

fn check(name: &str) {
    assert!(
        !name.is_empty() && !name.contains(SEPARATOR),
        "a server's name must be non-empty and hold no {SEPARATOR:?}: {name:?}"
    );
}

/// The catalogs of a [`CatalogSet`] at one moment, each server's snapshot
/// under its name. Entries are named `server/name` in the merged lists.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    servers: BTreeMap<String, Arc<Snapshot>>,
}

impl Merged {
    /// The sum of the servers' generations: it rises whenever any of them
    /// changes (while the set keeps the same servers).
    pub fn generation(&self) -> u64 {
        self.servers.values().map(|s| s.generation).sum()
    }

    /// One server's snapshot.
    pub fn server(&self, name: &str) -> Option<&Arc<Snapshot>> {
        self.servers.get(name)
    }

    /// The servers' snapshots, by name.
    pub fn servers(&self) -> impl Iterator<Item = (&str, &Arc<Snapshot>)> {
        self.servers.iter().map(|(name, s)| (name.as_str(), s))
    }

    /// Every server's tools, each named `server/tool`, by server.
    pub fn tools(&self) -> impl Iterator<Item = (String, &Tool)> {
        self.merged(|s| s.tools(), |tool| &tool.name)
    }

    /// Every server's prompts, each named `server/prompt`, by server.
    pub fn prompts(&self) -> impl Iterator<Item = (String, &Prompt)> {
        self.merged(|s| s.prompts(), |prompt| &prompt.name)
    }

    /// Every server's resources, each with its server's name, by server
    /// (a URI is already a name of its own).
    pub fn resources(&self) -> impl Iterator<Item = (&str, &Resource)> {
        self.servers()
            .flat_map(|(name, s)| s.resources().iter().map(move |r| (name, r)))
    }

    /// Every server's resource templates, each with its server's name.
    pub fn templates(&self) -> impl Iterator<Item = (&str, &ResourceTemplate)> {
        self.servers()
            .flat_map(|(name, s)| s.templates().iter().map(move |t| (name, t)))
    }

    /// The tool named `server/tool`, and its server's name.
    pub fn tool(&self, namespaced: &str) -> Option<(&str, &Tool)> {
        let (server, name) = self.split(namespaced)?;
        Some((server, self.servers.get(server)?.tool(name)?))
    }

    /// The prompt named `server/prompt`, and its server's name.
    pub fn prompt(&self, namespaced: &str) -> Option<(&str, &Prompt)> {
        let (server, name) = self.split(namespaced)?;
        Some((server, self.servers.get(server)?.prompt(name)?))
    }

    /// `server/name` as the server's name (as the set knows it) and the
    /// entry's.
    fn split<'a, 'b>(&'a self, namespaced: &'b str) -> Option<(&'a str, &'b str)> {
        let (server, name) = namespaced.split_once(SEPARATOR)?;
        let (server, _) = self.servers.get_key_value(server)?;
        Some((server.as_str(), name))
    }

    fn merged<'a, T: 'a>(
        &'a self,
        list: fn(&'a Snapshot) -> &'a [T],
        name: fn(&T) -> &str,
    ) -> impl Iterator<Item = (String, &'a T)> {
        self.servers.iter().flat_map(move |(server, s)| {
            list(s)
                .iter()
                .map(move |entry| (format!("{server}{SEPARATOR}{}", name(entry)), entry))
        })
    }
}
