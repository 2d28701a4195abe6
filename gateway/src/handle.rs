//! The gateway a server holds: opened over its upstreams, serving each
//! caller its view, and feeding its hub from shared upstream listens as
//! demand says.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmcp::model::ErrorData;

use crate::error::GatewayError;
use crate::identity::UpstreamIdentity;
use crate::scope::Scope;
use crate::scopes::Scopes;
use crate::stats::UpstreamStats;
use crate::upstream::Upstream;
use crate::view::View;
use mcp_subscriptions::Hub;
use mcp_subscriptions::audience::Principal;
use mcp_subscriptions::{Capabilities, hub::InterestKey, tasks};
use mcp_subscriptions::{Demand, ListenService};
use mcp_subscriptions_client::catalog::{Prefix, ServerHealth};

/// Options of a [`Gateway`], then [`open`](Self::open).
#[derive(Debug, Default)]
#[must_use]
pub struct GatewayBuilder {
    hub: Option<Hub>,
    grace: Option<Duration>,
    upstreams: Vec<Upstream>,
    identity: Option<UpstreamIdentity>,
}

impl GatewayBuilder {
    /// Adds an upstream server.
    pub fn upstream(mut self, upstream: Upstream) -> Self {
        self.upstreams.push(upstream);
        self
    }

    /// Publishes into `hub` (its capacity, overflow policy, limits and
    /// capabilities) instead of a hub of its own advertising every list's
    /// changes and resource subscriptions.
    pub fn hub(mut self, hub: Hub) -> Self {
        self.hub = Some(hub);
        self
    }

    /// How long an upstream URI stays listened to after its last
    /// downstream listener left, and a caller's scope open after its last
    /// stream or request (default [`Demand::DEFAULT_GRACE`]), so that a
    /// client re-listening finds them still there.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Speaks to the upstreams as each downstream caller, with the
    /// credential `identity` gives for the caller's principal, instead of
    /// as the gateway itself. Each credential scope (by default each
    /// principal; see [`UpstreamIdentity`]) gets a *scope* of its own: its
    /// own catalog of each upstream (its lists are what its credential
    /// sees) and its own URI and task listens, shared by all of its
    /// principals' streams, opened by their first stream or request and
    /// released a [grace](Self::grace) after their last; every event
    /// heard in a scope reaches only its principals' streams. A caller
    /// without a principal is refused (`-32600`).
    pub fn per_caller(mut self, identity: UpstreamIdentity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Checks the upstreams and opens the gateway.
    ///
    /// Without [`per_caller`](Self::per_caller), it opens every upstream's
    /// catalog (discovery, a listen for its list changes, each list
    /// fetched once), all at once, and returns once each upstream has
    /// answered or failed a first attempt: one that is down *joins* when
    /// it comes up (see
    /// [`CatalogSet`](mcp_subscriptions_client::catalog::CatalogSet)), and the others are served
    /// meanwhile. Per caller, nothing is opened before a caller comes.
    ///
    /// # Errors
    ///
    /// [`GatewayError`]: no upstream, a name twice or one a namespace
    /// cannot carry, or (the gateway's own scope) an upstream refused in a
    /// way trying again cannot cure (a URL that is not one, a certificate
    /// refused, a 401; the first, by the order given).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn open(self) -> Result<Gateway, GatewayError> {
        if self.upstreams.is_empty() {
            return Err(GatewayError::NoUpstreams);
        }
        let mut names = HashSet::new();
        for upstream in &self.upstreams {
            if !Prefix::is_valid_name(&upstream.name) {
                return Err(GatewayError::InvalidName(upstream.name.clone()));
            }
            if !names.insert(upstream.name.as_str()) {
                return Err(GatewayError::DuplicateName(upstream.name.clone()));
            }
        }
        let grace = self.grace.unwrap_or(Demand::DEFAULT_GRACE);
        let hub = self
            .hub
            .unwrap_or_else(|| Hub::builder().capabilities(everything()).build());
        let scopes = match self.identity {
            Some(identity) => Scopes::per_caller(self.upstreams, identity, hub.clone()),
            None => {
                let own = Scope::open(None, &self.upstreams, None);
                // Those that are down go on joining; those refused for
                // good fail the gateway, as a mistake in its configuration.
                own.ready().await;
                if let Some((name, ServerHealth::Failed(error))) = own.refused() {
                    return Err(GatewayError::Upstream { name, error });
                }
                own.serve(&hub);
                Scopes::shared(own, self.upstreams, hub.clone())
            }
        };
        let inner = Arc::new(Inner {
            hub,
            scopes,
            attached: Mutex::default(),
        });
        let demand = inner.demand().with_grace(grace);
        Ok(Gateway { inner, demand })
    }
}
/// What a gateway's hub advertises downstream: every list's changes,
/// resource subscriptions and the tasks extension, since an upstream may gain any of them later
/// (a server restarted with more, one joining late, a caller whose
/// credential sees more), and the hub's capabilities are fixed when it is
/// built. Each is served from what the upstreams have at the time.
fn everything() -> Capabilities {
    Capabilities::none()
        .with_tools_list_changed()
        .with_prompts_list_changed()
        .with_resources_list_changed()
        .with_resources_subscribe()
        .with_extension(tasks::extension())
}

/// A gateway over several upstream MCP servers: per credential scope (the
/// gateway's own, or each caller's), one catalog and at most one URI
/// listen per upstream, shared by every downstream listen stream of that
/// scope served from its [`hub`](Self::hub). See the
/// [crate docs](crate).
///
/// Cloning it is cheap; the tasks stop when the last clone, and the last
/// service its [demand](Self::demand) hooks were installed on, are dropped.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
    /// The one demand of every service and view: its hooks hold `inner`,
    /// which does not hold it.
    demand: Demand,
}

/// What a key's attach holds until its detach: its scope, kept open.
type Attached = HashMap<(Option<Principal>, Option<InterestKey>), Arc<Scope>>;

struct Inner {
    hub: Hub,
    scopes: Scopes,
    attached: Mutex<Attached>,
}

impl Inner {
    /// Attaches `key` (a URI, a task id, or the presence when `None`) for
    /// the streams of `principal`: opens its scope, and for a URI or a
    /// task waits until its upstream's listen in that scope covers it.
    async fn attach(
        &self,
        principal: Option<Principal>,
        key: Option<InterestKey>,
    ) -> Result<(), ErrorData> {
        let scope = self.scopes.hold(principal.as_ref())?;
        let attached = self.attach_in(&scope, key.as_ref()).await;
        match attached {
            Ok(()) => drop(self.attached.lock().insert((principal, key), scope)),
            // A refused attach is never detached.
            Err(_) => self.scopes.release(principal.as_ref()),
        }
        attached
    }

    /// Waits until `scope` is ready and, for a URI or a task, until its
    /// upstream's listen covers it.
    async fn attach_in(&self, scope: &Scope, key: Option<&InterestKey>) -> Result<(), ErrorData> {
        scope.ready().await;
        if let Some(key) = key {
            let Some((link, watch)) = scope.watch(key) else {
                let what = match key {
                    InterestKey::Resource(uri) => format!("{uri:?}"),
                    InterestKey::Extension { field, key } => format!("{field} {key:?}"),
                    other => format!("{other:?}"),
                };
                return Err(ErrorData::invalid_params(
                    format!("no upstream serves {what}"),
                    None,
                ));
            };
            link.attach(watch).await?;
        }
        Ok(())
    }

    /// Detaches what [`attach`](Self::attach) attached.
    fn detach(&self, principal: Option<Principal>, key: Option<InterestKey>) {
        let Some(scope) = self
            .attached
            .lock()
            .remove(&(principal.clone(), key.clone()))
        else {
            return;
        };
        if let Some((link, watch)) = key.as_ref().and_then(|key| scope.watch(key)) {
            link.detach(&watch);
        }
        drop(scope);
        self.scopes.release(principal.as_ref());
    }

    /// Demand hooks that open, widen, narrow and close the upstream
    /// listens (and, per caller, the callers' scopes), holding `self`.
    fn demand(self: &Arc<Self>) -> Demand {
        let (attaching, detaching) = (Arc::clone(self), Arc::clone(self));
        if self.scopes.own().is_some() {
            Demand::new(move |key: InterestKey| {
                let inner = Arc::clone(&attaching);
                async move { inner.attach(None, Some(key)).await }
            })
            .on_detach(move |key| detaching.detach(None, Some(key)))
        } else {
            Demand::per_principal(move |principal, key| {
                let inner = Arc::clone(&attaching);
                async move { inner.attach(principal, key).await }
            })
            .on_principal_detach(move |principal, key| detaching.detach(principal, key))
        }
    }
}

impl Gateway {
    /// Options, then [`GatewayBuilder::open`].
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }

    /// The hub downstream listen streams are served from: the upstreams'
    /// events, namespaced, are published into it (per caller, each to
    /// its principal's streams alone).
    pub fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    /// The demand hooks that open, widen, narrow and close the upstream
    /// URI listens (and, per caller, the callers' scopes) as downstream
    /// listeners come and go: install them on the service that serves the
    /// hub (or take [`listen_service`](Self::listen_service)). Every call
    /// gives a clone of the gateway's one demand, so the services it is
    /// installed on and the [views](Self::view) keep one count of each
    /// caller's presence, and a caller's scope lives one grace past the
    /// last of them.
    ///
    /// The hooks hold the gateway: its tasks go on while a service serves
    /// them, even if every [`Gateway`] handle was dropped.
    pub fn demand(&self) -> Demand {
        self.demand.clone()
    }

    /// A [`ListenService`] over the hub with the [demand](Self::demand)
    /// hooks installed: what a transport serves.
    pub fn listen_service(&self) -> ListenService<Hub> {
        ListenService::new(self.inner.hub.clone()).with_demand(self.demand())
    }

    /// What `principal` (the caller, as the serving layer's
    /// authentication gave it; see
    /// [`OpenContext::of_request`](mcp_subscriptions::OpenContext::of_request))
    /// sees: its merged lists, and its requests forwarded. Per caller, its
    /// scope is opened if it was not, and this waits until each upstream
    /// has joined it or failed a first attempt; without, every caller
    /// gets the gateway's own view.
    ///
    /// # Errors
    ///
    /// `-32600` for a caller without a principal at a
    /// [per caller](GatewayBuilder::per_caller) gateway.
    pub async fn view(&self, principal: Option<&Principal>) -> Result<View, ErrorData> {
        // The caller's presence opens its scope, and keeps it a grace past
        // the view, as its streams do.
        let presence = self.demand.hold_presence(principal).await?;
        let scope = (self.inner.scopes)
            .find(principal)
            .expect("a caller's presence holds its scope");
        scope.ready().await;
        Ok(View::new(scope, presence))
    }

    /// Each upstream's figures, in the order they were given, summed over
    /// the scopes open now.
    pub fn stats(&self) -> Vec<UpstreamStats> {
        let scopes = self.inner.scopes.all();
        self.inner
            .scopes
            .upstreams
            .iter()
            .enumerate()
            .map(|(at, upstream)| {
                let mut stats = UpstreamStats::new(&upstream.name);
                for scope in &scopes {
                    stats.add(&scope.links[at].stats());
                }
                stats
            })
            .collect()
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstreams", &self.stats())
            .finish_non_exhaustive()
    }
}
