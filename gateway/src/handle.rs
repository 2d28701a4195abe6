//! The gateway a server holds: opened over its upstreams, serving the
//! merged lists, forwarding calls, and feeding its hub from shared
//! upstream listens as demand says.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorData, GetPromptRequestParams, GetPromptResult,
    Prompt, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
    ServerCapabilities, Tool,
};
use tokio::task::JoinHandle;

use crate::error::GatewayError;
use crate::link::Link;
use crate::lists;
use crate::stats::{CacheHint, UpstreamStats};
use crate::upstream::Upstream;
use mcp_subscriptions::Hub;
use mcp_subscriptions::{Capabilities, hub::InterestKey};
use mcp_subscriptions::{Demand, ListenService};
use mcp_subscriptions_client::catalog::{Catalog, CatalogKind, CatalogSet, Prefix, ServerHealth};

/// Options of a [`Gateway`], then [`open`](Self::open).
#[derive(Debug, Default)]
#[must_use]
pub struct GatewayBuilder {
    hub: Option<Hub>,
    grace: Option<Duration>,
    upstreams: Vec<Upstream>,
}

impl GatewayBuilder {
    /// Adds an upstream server.
    pub fn upstream(mut self, upstream: Upstream) -> Self {
        self.upstreams.push(upstream);
        self
    }

    /// Publishes into `hub` (its capacity, overflow policy and limits)
    /// instead of a hub advertising what the upstreams do.
    pub fn hub(mut self, hub: Hub) -> Self {
        self.hub = Some(hub);
        self
    }

    /// How long an upstream URI stays listened to after its last
    /// downstream listener left (default [`Demand::DEFAULT_GRACE`]), so that a
    /// client re-listening finds it still there.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Opens every upstream's catalog (discovery, a listen for its list
    /// changes, each list fetched once), all at once, and starts the
    /// tasks that keep them. It returns once each upstream has answered or
    /// failed a first attempt: one that is down *joins* when it comes up
    /// (see [`CatalogSet`]), and the others are served meanwhile.
    ///
    /// # Errors
    ///
    /// [`GatewayError`]: no upstream, a name twice or one a namespace
    /// cannot carry, or an upstream refused in a way trying again cannot
    /// cure (a URL that is not one, a certificate refused, a 401; the
    /// first, by the order given).
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
        let catalogs = CatalogSet::new();
        for upstream in &self.upstreams {
            catalogs.add_with(
                upstream.name.clone(),
                upstream.endpoint.clone(),
                upstream.options.clone(),
                Arc::clone(&upstream.namespace),
            );
        }
        // Those that are down go on joining; those refused for good fail
        // the gateway, as a mistake in its configuration.
        catalogs.settled().await;
        for (name, health) in catalogs.health() {
            if let ServerHealth::Failed(error) = health {
                return Err(GatewayError::Upstream { name, error });
            }
        }
        let links: Vec<Arc<Link>> = self
            .upstreams
            .into_iter()
            .map(|upstream| Arc::new(Link::new(upstream, catalogs.clone())))
            .collect();
        let hub = self
            .hub
            .unwrap_or_else(|| Hub::builder().capabilities(advertised(&catalogs)).build());
        let mut tasks = Vec::with_capacity(links.len() + 1);
        for link in &links {
            tasks.push(tokio::spawn(Arc::clone(link).run(hub.clone())));
        }
        tasks.push(tokio::spawn(lists::forward_changes(
            catalogs.changes(),
            hub.clone(),
        )));
        Ok(Gateway {
            inner: Arc::new(Inner {
                hub,
                catalogs,
                links,
                grace: self.grace.unwrap_or(Demand::DEFAULT_GRACE),
                tasks,
            }),
        })
    }
}

/// What the downstream hub advertises: each list some upstream has
/// (its catalog tells of its changes, listened to or refetched), and
/// resource subscriptions when some upstream offers them. An upstream
/// still joining may bring any of them, so it counts as having all.
fn advertised(catalogs: &CatalogSet) -> Capabilities {
    let joining = catalogs
        .health()
        .into_iter()
        .any(|(_, health)| matches!(health, ServerHealth::Joining { .. }));
    if joining {
        return Capabilities::none()
            .with_tools_list_changed()
            .with_prompts_list_changed()
            .with_resources_list_changed()
            .with_resources_subscribe();
    }
    let upstreams = catalogs
        .snapshot()
        .servers()
        .map(|(_, snapshot)| snapshot.server().capabilities.clone())
        .collect::<Vec<ServerCapabilities>>();
    let mut capabilities = Capabilities::none();
    for upstream in upstreams {
        if upstream.tools.is_some() {
            capabilities = capabilities.with_tools_list_changed();
        }
        if upstream.prompts.is_some() {
            capabilities = capabilities.with_prompts_list_changed();
        }
        if let Some(resources) = upstream.resources {
            capabilities = capabilities.with_resources_list_changed();
            if resources.subscribe == Some(true) {
                capabilities = capabilities.with_resources_subscribe();
            }
        }
    }
    capabilities
}

/// A gateway over several upstream MCP servers: one [`Catalog`] and at
/// most one URI listen per upstream, shared by every downstream listen
/// stream served from its [`hub`](Self::hub). See the
/// [module docs](super).
///
/// Cloning it is cheap; the tasks stop when the last clone, and the last
/// service its [demand](Self::demand) hooks were installed on, are dropped.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    hub: Hub,
    /// Each upstream's catalog and namespace, merged.
    catalogs: CatalogSet,
    links: Vec<Arc<Link>>,
    grace: Duration,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Gateway {
    /// Options, then [`GatewayBuilder::open`].
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }

    /// The hub downstream listen streams are served from: the upstreams'
    /// events, namespaced, are published into it.
    pub fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    /// The demand hooks that open, widen, narrow and close the upstream
    /// URI listens as downstream listeners come and go: install them on
    /// the service that serves the hub (or take
    /// [`listen_service`](Self::listen_service)).
    ///
    /// The hooks hold the gateway: its tasks go on while a service serves
    /// them, even if every [`Gateway`] handle was dropped.
    pub fn demand(&self) -> Demand {
        let attaching = Arc::clone(&self.inner);
        let detaching = Arc::clone(&self.inner);
        Demand::new(move |key: InterestKey| {
            let inner = Arc::clone(&attaching);
            async move {
                let InterestKey::Resource(uri) = key else {
                    return Ok(());
                };
                match lists::by_uri(&inner.catalogs, &inner.links, &uri) {
                    Some((link, upstream_uri)) => link.attach(upstream_uri).await,
                    None => Err(ErrorData::invalid_params(
                        format!("no upstream serves {uri:?}"),
                        None,
                    )),
                }
            }
        })
        .on_detach(move |key| {
            if let InterestKey::Resource(uri) = key
                && let Some((link, upstream_uri)) =
                    lists::by_uri(&detaching.catalogs, &detaching.links, &uri)
            {
                link.detach(&upstream_uri);
            }
        })
        .with_grace(self.inner.grace)
    }

    /// A [`ListenService`] over the hub with the [demand](Self::demand)
    /// hooks installed: what a transport serves.
    pub fn listen_service(&self) -> ListenService<Hub> {
        ListenService::new(self.inner.hub.clone()).with_demand(self.demand())
    }

    /// The upstreams' tools, named downstream.
    pub fn tools(&self) -> Vec<Tool> {
        lists::tools(&self.inner.catalogs)
    }

    /// The upstreams' prompts, named downstream.
    pub fn prompts(&self) -> Vec<Prompt> {
        lists::prompts(&self.inner.catalogs)
    }

    /// The upstreams' resources, their URIs downstream.
    pub fn resources(&self) -> Vec<Resource> {
        lists::resources(&self.inner.catalogs)
    }

    /// The upstreams' resource templates, their URI templates downstream.
    pub fn templates(&self) -> Vec<ResourceTemplate> {
        lists::templates(&self.inner.catalogs)
    }

    /// What a downstream client may cache of the merged list of `kind`:
    /// the upstreams' `ttlMs` and `cacheScope` merged pessimistically (the
    /// shortest lifetime; private when any upstream's is).
    pub fn cache_hint(&self, kind: CatalogKind) -> CacheHint {
        lists::cache_hint(&self.inner.catalogs, kind)
    }

    /// Calls the tool the request names (its downstream name) at its
    /// upstream: the whole request is forwarded (its arguments, its
    /// `_meta` but the keys that describe the downstream connection, and a
    /// multi-round-trip request's input responses and request state), its
    /// name the upstream's.
    ///
    /// # Errors
    ///
    /// `-32602` when no upstream's namespace claims the name; the
    /// upstream's own JSON-RPC error; `-32603` when it cannot be reached
    /// (or has not joined yet) or answers with something that is not a
    /// tool result.
    pub async fn call_tool(
        &self,
        request: CallToolRequestParams,
    ) -> Result<CallToolResult, ErrorData> {
        lists::call_tool(&self.inner.catalogs, &self.inner.links, request).await
    }

    /// Gets the prompt the request names from its upstream, forwarded as
    /// [`call_tool`](Self::call_tool) forwards.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    pub async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, ErrorData> {
        lists::get_prompt(&self.inner.catalogs, &self.inner.links, request).await
    }

    /// Reads the resource of the request's downstream URI from its
    /// upstream, forwarded as [`call_tool`](Self::call_tool) forwards; the
    /// contents carry downstream URIs.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    pub async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, ErrorData> {
        lists::read_resource(&self.inner.catalogs, &self.inner.links, request).await
    }

    /// The catalog kept of the upstream so named, once it has joined.
    pub fn catalog(&self, upstream: &str) -> Option<Arc<Catalog>> {
        self.inner.catalogs.get(upstream)
    }

    /// Every upstream's catalog under its name and namespace: the lists
    /// the gateway serves are this set's merged view.
    pub fn catalogs(&self) -> &CatalogSet {
        &self.inner.catalogs
    }

    /// Each upstream's figures, in the order they were given.
    pub fn stats(&self) -> Vec<UpstreamStats> {
        self.inner.links.iter().map(|link| link.stats()).collect()
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstreams", &self.stats())
            .finish_non_exhaustive()
    }
}
