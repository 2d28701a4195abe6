//! The merged lists downstream clients see, the list changes they hear,
//! and the requests forwarded to the upstream a name or URI belongs to.

use std::sync::Arc;

use rmcp::model::{
    CallToolResult, ErrorData, GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::link::{Link, upstream_error};
use crate::namespace::Namespace;
use mcp_subscriptions::Event;
use mcp_subscriptions::Hub;
use mcp_subscriptions_client::SubscribeError;

/// Publishes a list change downstream each time one upstream's list
/// really changed: its catalog's diff decides, so a refetch that found
/// the same list (after a restart, say) is no change.
pub(super) async fn forward_changes(link: Arc<Link>, hub: Hub) {
    let mut changes = link.catalog.changes();
    while let Some(change) = changes.next().await {
        // Watched contents come by the link's URI listen, not here.
        if let Some(kind) = change.kind() {
            hub.publish(Event::list_changed(kind.list_kind()));
        }
    }
}

/// Every upstream's entries of one list, each named as `rename` says.
fn merged<T: Clone>(
    links: &[Arc<Link>],
    list: impl Fn(&mcp_subscriptions_client::catalog::Snapshot) -> &[T],
    rename: impl Fn(&dyn Namespace, &mut T),
) -> Vec<T> {
    let mut all = Vec::new();
    for link in links {
        let snapshot = link.catalog.snapshot();
        all.extend(list(&snapshot).iter().map(|entry| {
            let mut entry = entry.clone();
            rename(&*link.upstream.namespace, &mut entry);
            entry
        }));
    }
    all
}

pub(super) fn tools(links: &[Arc<Link>]) -> Vec<Tool> {
    merged(
        links,
        |s| s.tools(),
        |ns, tool: &mut Tool| {
            tool.name = ns.name_down(&tool.name).into();
        },
    )
}

pub(super) fn prompts(links: &[Arc<Link>]) -> Vec<Prompt> {
    merged(
        links,
        |s| s.prompts(),
        |ns, prompt: &mut Prompt| {
            prompt.name = ns.name_down(&prompt.name);
        },
    )
}

pub(super) fn resources(links: &[Arc<Link>]) -> Vec<Resource> {
    merged(
        links,
        |s| s.resources(),
        |ns, resource: &mut Resource| {
            resource.uri = ns.uri_down(&resource.uri);
        },
    )
}

pub(super) fn templates(links: &[Arc<Link>]) -> Vec<ResourceTemplate> {
    merged(
        links,
        |s| s.templates(),
        |ns, template: &mut ResourceTemplate| {
            template.uri_template = ns.uri_down(&template.uri_template);
        },
    )
}

/// The upstream a downstream name is for, and its name there.
fn by_name<'a>(links: &'a [Arc<Link>], name: &str) -> Option<(&'a Link, String)> {
    links.iter().find_map(|link| {
        let upstream = link.upstream.namespace.name_up(name)?;
        Some((&**link, upstream))
    })
}

/// The upstream a downstream URI is for, and its URI there.
pub(super) fn by_uri<'a>(links: &'a [Arc<Link>], uri: &str) -> Option<(&'a Link, String)> {
    links.iter().find_map(|link| {
        let upstream = link.upstream.namespace.uri_up(uri)?;
        Some((&**link, upstream))
    })
}

/// `tools/call` or `prompts/get` of a downstream name, at its upstream.
pub(super) async fn call<T: DeserializeOwned>(
    links: &[Arc<Link>],
    method: &str,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<T, ErrorData> {
    let Some((link, upstream_name)) = by_name(links, name) else {
        return Err(ErrorData::invalid_params(
            format!("no upstream has {name:?}"),
            None,
        ));
    };
    let mut params = Map::new();
    params.insert("name".into(), Value::String(upstream_name));
    if let Some(arguments) = arguments {
        params.insert("arguments".into(), Value::Object(arguments));
    }
    let result = link.catalog.request(method, params).await;
    decode(link, method, result)
}

pub(super) async fn call_tool(
    links: &[Arc<Link>],
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<CallToolResult, ErrorData> {
    call(links, "tools/call", name, arguments).await
}

pub(super) async fn get_prompt(
    links: &[Arc<Link>],
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<GetPromptResult, ErrorData> {
    call(links, "prompts/get", name, arguments).await
}

/// `resources/read` of a downstream URI at its upstream, the contents'
/// URIs named downstream.
pub(super) async fn read_resource(
    links: &[Arc<Link>],
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let Some((link, upstream_uri)) = by_uri(links, uri) else {
        return Err(ErrorData::invalid_params(
            format!("no upstream serves {uri:?}"),
            None,
        ));
    };
    let mut params = Map::new();
    params.insert("uri".into(), Value::String(upstream_uri));
    let mut result = link.catalog.request("resources/read", params).await;
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
