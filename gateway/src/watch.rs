//! What one upstream listen watches for downstream listeners: a
//! resource's updates, or a task's status (the tasks extension's
//! `taskIds`); as a filter, and back from a grant.

use std::collections::BTreeSet;
use std::fmt;

use mcp_subscriptions::hub::InterestKey;
use mcp_subscriptions::{Filter, tasks};
use mcp_subscriptions_client::catalog::CatalogSet;
use serde_json::Value;

/// One thing an upstream listen watches, named upstream.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Watch {
    /// A resource URI's `notifications/resources/updated`.
    Uri(String),
    /// A task id's `notifications/tasks`.
    Task(String),
}

impl Watch {
    /// The upstream a downstream listener's `key` is for, in `catalogs`,
    /// and what to watch there: a URI claimed by an upstream's namespace,
    /// or a task id named as its tools are (`a/task-1`).
    pub(super) fn of(catalogs: &CatalogSet, key: &InterestKey) -> Option<(String, Self)> {
        match key {
            InterestKey::Resource(uri) => {
                let (upstream, uri) = catalogs.claim_uri(uri)?;
                Some((upstream, Self::Uri(uri)))
            }
            InterestKey::Extension { field, key } if field == tasks::TASK_IDS => {
                let (upstream, id) = catalogs.claim_name(key)?;
                Some((upstream, Self::Task(id)))
            }
            _ => None,
        }
    }
}

impl fmt::Display for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uri(uri) => write!(f, "updates of {uri}"),
            Self::Task(id) => write!(f, "the status of task {id}"),
        }
    }
}

/// The filter that asks for `watches`.
pub(super) fn filter(watches: &BTreeSet<Watch>) -> Filter {
    let mut filter = Filter::new();
    let mut tasks = Vec::new();
    for watch in watches {
        match watch {
            Watch::Uri(uri) => filter = filter.with_resource(uri.as_str()),
            Watch::Task(id) => tasks.push(Value::String(id.clone())),
        }
    }
    if tasks.is_empty() {
        filter
    } else {
        filter.with_extension(tasks::TASK_IDS, Value::Array(tasks))
    }
}

/// What a `granted` filter watches.
pub(super) fn granted(granted: &Filter) -> BTreeSet<Watch> {
    let uris = granted
        .resource_subscriptions()
        .map(|uri| Watch::Uri(uri.to_owned()));
    let tasks = match granted.extensions().get(tasks::TASK_IDS) {
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(|id| Some(Watch::Task(id.as_str()?.to_owned())))
            .collect(),
        _ => Vec::new(),
    };
    uris.chain(tasks).collect()
}
