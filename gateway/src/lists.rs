//! The merged lists downstream clients see, their cache hints, and the
//! list changes they hear.

use rmcp::model::{CacheScope, Prompt, Resource, ResourceTemplate, Tool};

use mcp_subscriptions::Event;
use mcp_subscriptions::Hub;
use mcp_subscriptions_client::catalog::{
    CatalogKind, CatalogSet, ServerHealth, SetChange, SetChanges,
};

use crate::members::Members;
use crate::stats::CacheHint;

/// Publishes a list change downstream each time an upstream's list
/// really changed (its catalog's diff decides, so a refetch that found the
/// same list, after a restart say, is no change), and each list's when an
/// upstream joins or leaves: for the scope's `members`.
pub(super) async fn forward_changes(mut changes: SetChanges, hub: Hub, members: Members) {
    let publish = |kind: CatalogKind| {
        hub.publish(Event::list_changed(kind.list_kind()).with_audience(members.audience()));
    };
    while let Some(change) = changes.next().await {
        match change {
            // Watched contents come by the links' URI listens, not here.
            SetChange::Changed(_, change) => {
                if let Some(kind) = change.kind() {
                    publish(kind);
                }
            }
            SetChange::Joined(_) | SetChange::Left(_) | SetChange::Missed(_) => {
                CatalogKind::ALL.into_iter().for_each(publish);
            }
            _ => {}
        }
    }
}

/// Each entry of one merged list, named as the merged view names it.
fn renamed<'a, T: Clone + 'a>(
    merged: impl Iterator<Item = (String, &'a T)>,
    rename: impl Fn(&mut T, String),
) -> Vec<T> {
    merged
        .map(|(name, entry)| {
            let mut entry = entry.clone();
            rename(&mut entry, name);
            entry
        })
        .collect()
}

pub(super) fn tools(catalogs: &CatalogSet) -> Vec<Tool> {
    renamed(catalogs.snapshot().tools(), |tool, name| {
        tool.name = name.into();
    })
}

pub(super) fn prompts(catalogs: &CatalogSet) -> Vec<Prompt> {
    renamed(catalogs.snapshot().prompts(), |prompt, name| {
        prompt.name = name;
    })
}

pub(super) fn resources(catalogs: &CatalogSet) -> Vec<Resource> {
    renamed(catalogs.snapshot().resources(), |resource, uri| {
        resource.uri = uri;
    })
}

pub(super) fn templates(catalogs: &CatalogSet) -> Vec<ResourceTemplate> {
    renamed(catalogs.snapshot().templates(), |template, uri| {
        template.uri_template = uri;
    })
}

/// What a downstream client may cache of one merged list, merged
/// pessimistically from its upstreams' hints (SEP-2549): the shortest
/// `ttlMs` of any upstream that gave one, and private when any upstream's
/// list is private. `None` where no upstream said.
pub(super) fn cache_hint(catalogs: &CatalogSet, kind: CatalogKind) -> CacheHint {
    let mut hint = CacheHint::default();
    for (_, health) in catalogs.health() {
        let ServerHealth::Live(health) = health else {
            continue;
        };
        let Some(list) = health.list(kind) else {
            continue;
        };
        if let Some(ttl) = list.ttl {
            hint.ttl = Some(hint.ttl.map_or(ttl, |shortest| shortest.min(ttl)));
        }
        if let Some(scope) = list.cache_scope {
            hint.scope = match (hint.scope, scope) {
                (Some(CacheScope::Private), _) | (_, CacheScope::Private) => {
                    Some(CacheScope::Private)
                }
                _ => Some(scope),
            };
        }
    }
    hint
}
