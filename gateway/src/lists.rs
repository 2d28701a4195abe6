//! The merged lists downstream clients see, the list changes they hear,
//! and the requests forwarded to the upstream a name or URI belongs to.

use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResult, ErrorData, GetPromptRequestParams,
    GetPromptResult, Prompt, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::link::{Link, upstream_error};
use mcp_subscriptions::Hub;
use mcp_subscriptions::{Audience, Event};
use mcp_subscriptions_client::SubscribeError;
use mcp_subscriptions_client::catalog::{
    CatalogKind, CatalogSet, ServerHealth, SetChange, SetChanges,
};

use crate::stats::CacheHint;

/// Publishes a list change downstream each time an upstream's list
/// really changed (its catalog's diff decides, so a refetch that found the
/// same list, after a restart say, is no change), and each list's when an
/// upstream joins or leaves: for `audience`, the scope's streams.
pub(super) async fn forward_changes(mut changes: SetChanges, hub: Hub, audience: Audience) {
    let publish = |kind: CatalogKind| {
        hub.publish(Event::list_changed(kind.list_kind()).with_audience(audience.clone()));
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

/// The link of the upstream `claim` names, and the name or URI there.
fn link_of(links: &[Arc<Link>], claim: Option<(String, String)>) -> Option<(&Link, String)> {
    let (upstream, there) = claim?;
    let link = links.iter().find(|link| link.upstream.name == upstream)?;
    Some((&**link, there))
}

/// The upstream a downstream URI is for, and its URI there.
pub(super) fn by_uri<'a>(
    catalogs: &CatalogSet,
    links: &'a [Arc<Link>],
    uri: &str,
) -> Option<(&'a Link, String)> {
    link_of(links, catalogs.claim_uri(uri))
}

/// The `_meta` keys that describe the downstream client's own connection:
/// upstream, the request is the gateway's, and names it instead.
const CONNECTION_META: [&str; 3] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
];

/// A downstream request's params as the upstream one's: the whole request
/// (its arguments, its `_meta` (a progress token, trace context), and a
/// multi-round-trip request's input responses and request state), with
/// `field` set to `there` and the connection's `_meta` left out.
fn upstream_params(request: impl Serialize, field: &str, there: String) -> Map<String, Value> {
    let Ok(Value::Object(mut params)) = serde_json::to_value(request) else {
        unreachable!("request params serialize as an object")
    };
    params.insert(field.into(), Value::String(there));
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        meta.retain(|key, _| !CONNECTION_META.contains(&key.as_str()));
    }
    params
}

/// `tools/call` or `prompts/get` of a downstream name, at its upstream.
async fn call<T: DeserializeOwned>(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    method: &str,
    name: &str,
    request: impl Serialize,
) -> Result<T, ErrorData> {
    let Some((link, upstream_name)) = link_of(links, catalogs.claim_name(name)) else {
        return Err(ErrorData::invalid_params(
            format!("no upstream has {name:?}"),
            None,
        ));
    };
    let params = upstream_params(request, "name", upstream_name);
    let result = match link.catalog() {
        Ok(catalog) => catalog.request(method, params).await,
        Err(error) => Err(error),
    };
    decode(link, method, result)
}

pub(super) async fn call_tool(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: CallToolRequestParams,
) -> Result<CallToolResult, ErrorData> {
    let name = request.name.clone();
    call(catalogs, links, "tools/call", &name, request).await
}

pub(super) async fn get_prompt(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let name = request.name.clone();
    call(catalogs, links, "prompts/get", &name, request).await
}

/// `resources/read` of a downstream URI at its upstream, the contents'
/// URIs named downstream.
pub(super) async fn read_resource(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: ReadResourceRequestParams,
) -> Result<ReadResourceResult, ErrorData> {
    let Some((link, upstream_uri)) = by_uri(catalogs, links, &request.uri) else {
        return Err(ErrorData::invalid_params(
            format!("no upstream serves {:?}", request.uri),
            None,
        ));
    };
    let params = upstream_params(request, "uri", upstream_uri);
    let mut result = match link.catalog() {
        Ok(catalog) => catalog.request("resources/read", params).await,
        Err(error) => Err(error),
    };
    if let Ok(Value::Object(result)) = &mut result
        && let Some(Value::Array(contents)) = result.get_mut("contents")
    {
        for content in contents {
            if let Some(Value::String(uri)) = content.get_mut("uri") {
                *uri = link.upstream.namespace.uri_down(uri);
            }
        }
    }
    decode(link, "resources/read", result)
}

/// An upstream's answer as the downstream one: its result decoded, its
/// JSON-RPC error as it is, any other failure `-32603`.
fn decode<T: DeserializeOwned>(
    link: &Link,
    method: &str,
    result: Result<Value, SubscribeError>,
) -> Result<T, ErrorData> {
    let name = &link.upstream.name;
    match result {
        Ok(result) => serde_json::from_value(result).map_err(|err| {
            ErrorData::internal_error(format!("upstream {name}: a {method} result: {err}"), None)
        }),
        Err(error) => Err(upstream_error(name, &error)),
    }
}
