//! One credential scope: what the gateway holds of its upstreams as one
//! identity sees them (each upstream's catalog, and the link keeping its
//! URI listen), and where its events go downstream.
//!
//! A gateway without [per caller](crate::GatewayBuilder::per_caller)
//! identities has one scope, its own, whose events reach everyone; with
//! them, one per credential scope (by default each principal its own),
//! whose events reach only its members' streams (the hub's audiences
//! enforce it).

use std::sync::Arc;

use mcp_subscriptions::Hub;
use mcp_subscriptions::audience::Principal;
use mcp_subscriptions_client::catalog::{CatalogSet, ServerHealth};
use parking_lot::Mutex;
use rmcp::model::ErrorData;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::forward;
use crate::identity::UpstreamIdentity;
use crate::link::Link;
use crate::lists;
use crate::members::Members;
use crate::upstream::Upstream;
use crate::watch::Watch;
use mcp_subscriptions::hub::InterestKey;

/// One identity's view of the upstreams, and the tasks that keep it.
pub(super) struct Scope {
    /// The principal whose credentials it carries (the first of its
    /// members); `None`: the gateway's own.
    pub(super) principal: Option<Principal>,
    /// Whom its events are for.
    pub(super) members: Members,
    /// Each upstream's catalog as this identity sees it.
    pub(super) catalogs: CatalogSet,
    pub(super) links: Vec<Arc<Link>>,
    /// Set once every upstream's credential was settled and its catalog
    /// joined, failed, or failed a first attempt.
    ready: watch::Sender<bool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Scope {
    /// Opens a scope over `upstreams` for `principal` (with its
    /// credentials from `identity`) or for the gateway itself: each
    /// upstream's catalog joins in the background.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub(super) fn open(
        principal: Option<Principal>,
        upstreams: &[Upstream],
        identity: Option<UpstreamIdentity>,
    ) -> Arc<Self> {
        let catalogs = CatalogSet::new();
        let links = upstreams
            .iter()
            .map(|upstream| Arc::new(Link::new(upstream.clone(), catalogs.clone())))
            .collect();
        let ready = watch::Sender::new(false);
        let joining = tokio::spawn(join(
            principal.clone(),
            upstreams.to_vec(),
            identity,
            catalogs.clone(),
            ready.clone(),
        ));
        Arc::new(Self {
            members: Members::of(principal.as_ref()),
            principal,
            catalogs,
            links,
            ready,
            tasks: Mutex::new(vec![joining]),
        })
    }

    /// Starts publishing what the scope hears into `hub`: for the streams
    /// of its members, or everyone's.
    pub(super) fn serve(&self, hub: &Hub) {
        let mut tasks = self.tasks.lock();
        for link in &self.links {
            tasks.push(tokio::spawn(
                Arc::clone(link).run(hub.clone(), self.members.clone()),
            ));
        }
        tasks.push(tokio::spawn(lists::forward_changes(
            self.catalogs.changes(),
            hub.clone(),
            self.members.clone(),
        )));
    }

    /// Waits until each upstream has joined this scope, failed for good,
    /// or failed a first attempt (see
    /// [`CatalogSet::settled`](mcp_subscriptions_client::catalog::CatalogSet::settled)).
    pub(super) async fn ready(&self) {
        let mut ready = self.ready.subscribe();
        // The sender lives as long as the scope.
        let _ = ready.wait_for(|ready| *ready).await;
    }

    /// The link a downstream listener's `key` (a URI, a task id) is for,
    /// and what it watches there.
    pub(super) fn watch(&self, key: &InterestKey) -> Option<(&Link, Watch)> {
        let (upstream, watch) = Watch::of(&self.catalogs, key)?;
        let link = self
            .links
            .iter()
            .find(|link| link.upstream.name == upstream)?;
        Some((&**link, watch))
    }

    /// The first upstream refused for good, by the order given: what
    /// fails a gateway's own scope at open.
    pub(super) fn refused(&self) -> Option<(String, ServerHealth)> {
        self.catalogs
            .health()
            .into_iter()
            .find(|(_, health)| matches!(health, ServerHealth::Failed(_)))
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        for task in self.tasks.get_mut() {
            task.abort();
        }
    }
}

/// Settles each upstream's credential for `principal` (all at once) and
/// adds its catalog to `catalogs`; then waits for the set to settle.
async fn join(
    principal: Option<Principal>,
    upstreams: Vec<Upstream>,
    identity: Option<UpstreamIdentity>,
    catalogs: CatalogSet,
    ready: watch::Sender<bool>,
) {
    let options = upstreams.iter().map(|upstream| async {
        match (&identity, &principal) {
            (Some(identity), Some(principal)) => {
                identity
                    .options(principal, &upstream.name, &upstream.options)
                    .await
            }
            _ => Ok::<_, ErrorData>(upstream.options.clone()),
        }
    });
    let options = futures_util::future::join_all(options).await;
    for (upstream, options) in upstreams.iter().zip(options) {
        match options {
            Ok(mut options) => {
                // Its links' listens may follow tasks; the requests it
                // forwards declare what their callers do.
                forward::declare_tasks(&mut options.subscribe.client_capabilities);
                catalogs.add_with(
                    upstream.name.clone(),
                    upstream.endpoint.clone(),
                    options,
                    Arc::clone(&upstream.namespace),
                );
            }
            Err(error) => {
                tracing::info!(target: "mcp_subscriptions", upstream = %upstream.name, ?principal, %error.message, "no credential upstream: left out of the caller's view");
            }
        }
    }
    catalogs.settled().await;
    ready.send_replace(true);
}
