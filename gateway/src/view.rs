//! What one caller sees through the gateway: its merged lists, their
//! cache hints, and its requests forwarded with its credential.

use std::sync::Arc;

use mcp_subscriptions::Presence;
use mcp_subscriptions_client::catalog::{Catalog, CatalogKind, CatalogSet};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ErrorData, GetPromptRequestParams,
    GetPromptResult, GetTaskParams, GetTaskResult, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, Tool, UpdateTaskParams,
};

use crate::forward;
use crate::lists;
use crate::scope::Scope;
use crate::stats::CacheHint;

/// One caller's view of a [`Gateway`](crate::Gateway)
/// ([`Gateway::view`](crate::Gateway::view)): the upstreams as its
/// credential sees them, merged and named downstream. It holds the
/// caller's scope open while it lives (and a grace after).
pub struct View {
    scope: Arc<Scope>,
    _presence: Presence,
}

impl View {
    pub(super) fn new(scope: Arc<Scope>, presence: Presence) -> Self {
        Self {
            scope,
            _presence: presence,
        }
    }

    /// The upstreams' tools, named downstream.
    pub fn tools(&self) -> Vec<Tool> {
        lists::tools(&self.scope.catalogs)
    }

    /// The upstreams' prompts, named downstream.
    pub fn prompts(&self) -> Vec<Prompt> {
        lists::prompts(&self.scope.catalogs)
    }

    /// The upstreams' resources, their URIs downstream.
    pub fn resources(&self) -> Vec<Resource> {
        lists::resources(&self.scope.catalogs)
    }

    /// The upstreams' resource templates, their URI templates downstream.
    pub fn templates(&self) -> Vec<ResourceTemplate> {
        lists::templates(&self.scope.catalogs)
    }

    /// What a downstream client may cache of the merged list of `kind`:
    /// the upstreams' `ttlMs` and `cacheScope` merged pessimistically (the
    /// shortest lifetime; private when any upstream's is).
    pub fn cache_hint(&self, kind: CatalogKind) -> CacheHint {
        lists::cache_hint(&self.scope.catalogs, kind)
    }

    /// Calls the tool the request names (its downstream name) at its
    /// upstream: the whole request is forwarded (its arguments, its
    /// `_meta` but the keys that describe the downstream connection, and a
    /// multi-round-trip request's input responses and request state), its
    /// name the upstream's. The answer is the tool's result, the input it
    /// requires, or, when the caller declared the tasks extension, the
    /// task the upstream started for it, its id named downstream as the
    /// upstream's tools are (`a/task-1`): the caller follows it with
    /// [`get_task`](Self::get_task) or a listen for its `taskIds`.
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
    ) -> Result<CallToolResponse, ErrorData> {
        forward::call_tool(&self.scope.catalogs, &self.scope.links, request).await
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
        forward::get_prompt(&self.scope.catalogs, &self.scope.links, request).await
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
        forward::read_resource(&self.scope.catalogs, &self.scope.links, request).await
    }

    /// `tasks/get` of a task (its downstream id) at its upstream, with the
    /// caller's credential: a task is its owner's at the upstream, so
    /// another caller's is refused there.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    pub async fn get_task(&self, request: GetTaskParams) -> Result<GetTaskResult, ErrorData> {
        forward::get_task(&self.scope.catalogs, &self.scope.links, request).await
    }

    /// `tasks/update` (responses to a task's input requests) at the task's
    /// upstream.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    pub async fn update_task(&self, request: UpdateTaskParams) -> Result<(), ErrorData> {
        forward::update_task(&self.scope.catalogs, &self.scope.links, request).await
    }

    /// `tasks/cancel` at the task's upstream.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    pub async fn cancel_task(&self, request: CancelTaskParams) -> Result<(), ErrorData> {
        forward::cancel_task(&self.scope.catalogs, &self.scope.links, request).await
    }

    /// The catalog of the upstream so named, once it has joined.
    pub fn catalog(&self, upstream: &str) -> Option<Arc<Catalog>> {
        self.scope.catalogs.get(upstream)
    }

    /// Every upstream's catalog under its name and namespace: the lists
    /// of this view are this set's merged view.
    pub fn catalogs(&self) -> &CatalogSet {
        &self.scope.catalogs
    }
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("principal", &self.scope.principal)
            .finish_non_exhaustive()
    }
}
