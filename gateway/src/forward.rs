//! The requests a caller's view forwards to the upstream a name, URI or
//! task id belongs to: the whole request, with the caller's credential,
//! and the answer named downstream.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    CreateTaskResult, ErrorData, GetPromptRequestParams, GetPromptResult, GetTaskParams,
    GetTaskResult, InputRequiredResult, ReadResourceRequestParams, ReadResourceResult,
    UpdateTaskParams,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::link::{Link, upstream_error};
use mcp_subscriptions::tasks;
use mcp_subscriptions_client::catalog::CatalogSet;

/// The link of the upstream `claim` names, and the name or URI there.
fn link_of(links: &[Arc<Link>], claim: Option<(String, String)>) -> Option<(&Link, String)> {
    let (upstream, there) = claim?;
    let link = links.iter().find(|link| link.upstream.name == upstream)?;
    Some((&**link, there))
}

/// The upstream a downstream URI is for, and its URI there.
fn by_uri<'a>(
    catalogs: &CatalogSet,
    links: &'a [Arc<Link>],
    uri: &str,
) -> Option<(&'a Link, String)> {
    link_of(links, catalogs.claim_uri(uri))
}

// The `_meta` keys that describe the downstream client's own connection:
// upstream, the request is the gateway's, and names it instead.
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// A downstream request's params as the upstream one's at `link`: the
/// whole request (its arguments, its `_meta` (a progress token, trace
/// context), and a multi-round-trip request's input responses and request
/// state), with `field` set to `there` and the connection's `_meta` the
/// gateway's own, declaring the tasks extension when the caller does (so
/// that an upstream answers with a task only a caller that takes one).
fn upstream_params(
    link: &Link,
    request: impl Serialize,
    field: &str,
    there: String,
) -> Map<String, Value> {
    let Ok(Value::Object(mut params)) = serde_json::to_value(request) else {
        unreachable!("request params serialize as an object")
    };
    params.insert(field.into(), Value::String(there));
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        let takes_tasks = meta
            .get(CLIENT_CAPABILITIES)
            .and_then(|caps| serde_json::from_value::<ClientCapabilities>(caps.clone()).ok())
            .is_some_and(|caps| caps.supports_tasks());
        meta.remove(PROTOCOL_VERSION);
        meta.remove(CLIENT_INFO);
        let mut own = link.upstream.options.subscribe.client_capabilities.clone();
        if takes_tasks {
            declare_tasks(&mut own);
        } else if let Some(extensions) = &mut own.extensions {
            extensions.remove(tasks::EXTENSION_ID);
        }
        let own = serde_json::to_value(own).expect("capabilities serialize");
        meta.insert(CLIENT_CAPABILITIES.into(), own);
    }
    params
}

/// Declares the tasks extension in `capabilities`.
pub(super) fn declare_tasks(capabilities: &mut ClientCapabilities) {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .entry(tasks::EXTENSION_ID.to_owned())
        .or_default();
}

/// A request naming a downstream name (a tool, a prompt, a task id) in
/// `field`, at its upstream; its answer as it came.
async fn call<'a>(
    catalogs: &CatalogSet,
    links: &'a [Arc<Link>],
    method: &str,
    (field, name): (&str, &str),
    request: impl Serialize,
) -> Result<(&'a Link, Value), ErrorData> {
    let Some((link, upstream_name)) = link_of(links, catalogs.claim_name(name)) else {
        return Err(ErrorData::invalid_params(
            format!("no upstream has {name:?}"),
            None,
        ));
    };
    let params = upstream_params(link, request, field, upstream_name);
    let result = match link.catalog() {
        Ok(catalog) => catalog.request(method, params).await,
        Err(error) => Err(error),
    };
    match result {
        Ok(result) => Ok((link, result)),
        Err(error) => Err(upstream_error(&link.upstream.name, &error)),
    }
}

/// `tools/call`: its result, the input it requires, or the task it
/// started, named downstream.
pub(super) async fn call_tool(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let name = request.name.clone();
    let (link, result) = call(catalogs, links, "tools/call", ("name", &name), request).await?;
    let method = "tools/call";
    Ok(match result.get("resultType").and_then(Value::as_str) {
        Some("task") => {
            let mut created: CreateTaskResult = decode(link, method, result)?;
            created.task.task_id = link.upstream.namespace.name_down(&created.task.task_id);
            CallToolResponse::Task(created)
        }
        Some("input_required") => {
            CallToolResponse::InputRequired(decode::<InputRequiredResult>(link, method, result)?)
        }
        _ => CallToolResponse::Complete(decode::<CallToolResult>(link, method, result)?),
    })
}

pub(super) async fn get_prompt(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let name = request.name.clone();
    let (link, result) = call(catalogs, links, "prompts/get", ("name", &name), request).await?;
    decode(link, "prompts/get", result)
}

/// `tasks/get` of a downstream task id, named downstream in the answer.
pub(super) async fn get_task(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: GetTaskParams,
) -> Result<GetTaskResult, ErrorData> {
    let id = request.task_id.clone();
    let (link, result) = call(catalogs, links, "tasks/get", ("taskId", &id), request).await?;
    let mut got: GetTaskResult = decode(link, "tasks/get", result)?;
    got.task.task.task_id = id;
    Ok(got)
}

/// `tasks/update` of a downstream task id.
pub(super) async fn update_task(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: UpdateTaskParams,
) -> Result<(), ErrorData> {
    let id = request.task_id.clone();
    call(catalogs, links, "tasks/update", ("taskId", &id), request).await?;
    Ok(())
}

/// `tasks/cancel` of a downstream task id.
pub(super) async fn cancel_task(
    catalogs: &CatalogSet,
    links: &[Arc<Link>],
    request: CancelTaskParams,
) -> Result<(), ErrorData> {
    let id = request.task_id.clone();
    call(catalogs, links, "tasks/cancel", ("taskId", &id), request).await?;
    Ok(())
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
    let params = upstream_params(link, request, "uri", upstream_uri);
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
    match result {
        Ok(result) => decode(link, "resources/read", result),
        Err(error) => Err(upstream_error(&link.upstream.name, &error)),
    }
}

/// An upstream's result decoded as the downstream one; `-32603` when it is
/// not one.
fn decode<T: DeserializeOwned>(link: &Link, method: &str, result: Value) -> Result<T, ErrorData> {
    serde_json::from_value(result).map_err(|err| {
        let name = &link.upstream.name;
        ErrorData::internal_error(format!("upstream {name}: a {method} result: {err}"), None)
    })
}
