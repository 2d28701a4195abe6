//! An MCP server for the live catalog's tests, in process: its lists are
//! the test's to change, each list request is counted (first pages apart,
//! so one count is one whole fetch), lists are paged, any request may be
//! held a while (a slow server) or answered with an HTTP status (a broken
//! one), a bearer token may be required, and changes are published
//! through a hub as a real server's would be. It may know principals by
//! their bearer tokens, each of a tenant, and scope events to them. Its
//! prompts say hello (`prompts/get`), and its tool `slow` starts a task
//! for a caller that declares the tasks extension, the caller's own
//! (`tasks/get` and `taskIds` listens are its owner's alone). It can be stopped and started again on the same port
//! (a restart).

#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcp_subscriptions::audience::{Label, Principal};
use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::{
    Audience, Capabilities, Event, Extension, Filter, Grant, Hub, ListKind, ListenService, Selector,
};
use parking_lot::Mutex;
use rmcp::model::{DetailedTask, ErrorData, TASKS_EXTENSION_ID, Task, TaskPayload, TaskStatus};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The tasks extension's filter field.
const TASK_IDS: &str = "taskIds";

#[derive(Default)]
struct Lists {
    tools: Vec<Value>,
    prompts: Vec<Value>,
    resources: Vec<Value>,
    templates: Vec<Value>,
    contents: BTreeMap<String, String>,
}

/// How a broken server pages its lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Paging {
    #[default]
    Honest,
    /// `tools` is not an array.
    Malformed,
    /// The same cursor again on every page.
    SameCursor,
    /// A new cursor on every page, forever.
    Endless,
}

#[derive(Default)]
struct Behaviour {
    /// How list pages are made.
    paging: Paging,
    /// How long each list request is held before it is answered.
    delay: Duration,
    /// An HTTP status list requests get instead of an answer.
    failing: Option<u16>,
    /// The bearer token every request must carry.
    token: Option<String>,
    /// Listens naming a URI that holds this are refused with -32602.
    refused_uris: Option<String>,
    /// URIs that hold this are left out of every grant.
    withheld_uris: Option<String>,
    /// The lists' `ttlMs` and `cacheScope`, other than 60 s and public.
    cache_hints: Option<(u64, &'static str)>,
    /// What `server/discover` says the server has, other than every list
    /// with its changes and resource subscriptions.
    capabilities: Option<Value>,
    /// Bearer tokens and the principal each stands for, with its tenant's
    /// label: when there are any, every request needs one of them.
    principals: HashMap<String, (Principal, Label)>,
}

struct Shared {
    /// Where its events are published; a new one at each restart.
    hub: Mutex<Hub>,
    lists: Mutex<Lists>,
    /// The tasks `slow` started: each one's owner and status.
    tasks: Mutex<BTreeMap<String, (Option<Principal>, DetailedTask)>>,
    behaviour: Mutex<Behaviour>,
    /// The params of the last `tools/call`.
    last_call: Mutex<Option<Value>>,
    /// First-page requests by method: one per whole fetch.
    fetches: Mutex<HashMap<String, usize>>,
    /// Every request by method, pages included.
    requests: Mutex<HashMap<String, usize>>,
    page_size: usize,
}

/// A running catalog server.
pub struct CatalogServer {
    pub port: u16,
    shared: Arc<Shared>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
}

impl CatalogServer {
    /// Starts on a free loopback port, with lists paged `page_size` at a
    /// time.
    pub async fn start(page_size: usize) -> Self {
        let shared = Arc::new(Shared {
            hub: Mutex::new(hub()),
            lists: Mutex::default(),
            tasks: Mutex::default(),
            behaviour: Mutex::default(),
            last_call: Mutex::default(),
            fetches: Mutex::default(),
            requests: Mutex::default(),
            page_size,
        });
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = tcp.local_addr().unwrap().port();
        let server = Self {
            port,
            shared,
            stop: Mutex::new(None),
        };
        server.serve(tcp);
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn serve(&self, tcp: TcpListener) {
        let hub = self.shared.hub.lock().clone();
        let shared = Arc::clone(&self.shared);
        let listen = ListenService::new(hub).with_authorizer(
            move |context: &mcp_subscriptions::OpenContext, requested: &Filter| {
                let behaviour = shared.behaviour.lock();
                let holds = |uri: &str, needle: &Option<String>| {
                    needle.as_deref().is_some_and(|needle| uri.contains(needle))
                };
                if requested
                    .resource_subscriptions()
                    .any(|uri| holds(uri, &behaviour.refused_uris))
                {
                    return Err(OpenError::Refused(ErrorData::invalid_params(
                        "a URI this server does not serve",
                        None,
                    )));
                }
                let granted = requested
                    .lists_changed()
                    .fold(Filter::new(), Filter::with_list_changed);
                let mut granted = requested
                    .resource_subscriptions()
                    .filter(|uri| !holds(uri, &behaviour.withheld_uris))
                    .fold(granted, Filter::with_resource);
                // The tasks asked for that are the caller's own.
                if let Some(Value::Array(ids)) = requested.extensions().get(TASK_IDS) {
                    let tasks = shared.tasks.lock();
                    let owned: Vec<Value> = ids
                        .iter()
                        .filter(|id| {
                            let task = id.as_str().and_then(|id| tasks.get(id));
                            task.is_some_and(|(owner, _)| *owner == context.principal)
                        })
                        .cloned()
                        .collect();
                    granted = granted.with_extension(TASK_IDS, Value::Array(owned));
                }
                let tenant = context.principal.as_ref().and_then(|principal| {
                    let known = behaviour.principals.values();
                    known
                        .filter(|(p, _)| p == principal)
                        .map(|(_, tenant)| tenant)
                        .next()
                });
                Ok(match tenant {
                    Some(tenant) => Grant::new(granted).with_label(tenant.clone()),
                    None => Grant::new(granted),
                })
            },
        );
        let http = mcp_subscriptions::http::HttpTransport::new(
            listen,
            axum::Router::new()
                .fallback(answer)
                .with_state(Arc::clone(&self.shared)),
        );
        let app = axum::Router::new()
            .route("/mcp", http.into_method_router())
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&self.shared),
                authorize,
            ));
        let (stop, stopped) = oneshot::channel();
        *self.stop.lock() = Some(stop);
        tokio::spawn(mcp_subscriptions::http::serve(tcp, app, async {
            let _ = stopped.await;
        }));
    }

    /// Stops as a server shutting down does: every listen stream completes
    /// gracefully, then the port closes.
    pub async fn stop(&self) {
        self.shared.hub.lock().complete();
        if let Some(stop) = self.stop.lock().take() {
            let _ = stop.send(());
        }
        // The port is free once the accept loop has stopped.
        for _ in 0..200 {
            if std::net::TcpListener::bind(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the port stays taken");
    }

    /// Starts again on the same port, with a new hub (no listener of the
    /// old one survives), keeping the lists and counts.
    pub async fn restart(&self) {
        *self.shared.hub.lock() = hub();
        let tcp = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(tcp);
    }

    /// Publishes a list change.
    pub fn publish(&self, list: ListKind) {
        self.shared.hub.lock().publish(Event::list_changed(list));
    }

    /// Publishes a resource update.
    pub fn publish_updated(&self, uri: &str) {
        self.shared.hub.lock().publish(Event::resource_updated(uri));
    }

    /// Says it has `capabilities` (a `ServerCapabilities` object) from
    /// the next `server/discover` on.
    pub fn set_capabilities(&self, capabilities: Value) {
        self.shared.behaviour.lock().capabilities = Some(capabilities);
    }

    /// Sets task `id`'s status (`slow` started it) and publishes it to its
    /// owner's listens.
    pub fn set_task_status(&self, id: &str, payload: TaskPayload) {
        let task = {
            let mut tasks = self.shared.tasks.lock();
            let (owner, task) = tasks.get_mut(id).expect("a task slow started");
            // A second later than the last status, so that it succeeds it.
            let last = &task.task.last_updated_at;
            let (minute, second) = last.trim_end_matches('Z').rsplit_once(':').unwrap();
            let updated = format!("{minute}:{:02}Z", second.parse::<u32>().unwrap() + 1);
            *task = DetailedTask::new(
                Task::new(id, payload.status(), task.task.created_at.clone(), updated),
                payload,
            );
            (owner.clone(), task.clone())
        };
        publish_task(&self.shared, task.0, &task.1);
    }

    /// Publishes `event`, whoever it is for.
    pub fn publish_event(&self, event: Event) {
        self.shared.hub.lock().publish(event);
    }

    /// Knows each principal by its bearer token, of its tenant (label
    /// `tenant:<tenant>`): `(token, principal, tenant)`. Every request then
    /// needs one of them.
    pub fn know_principals(&self, known: &[(&str, &str, &str)]) {
        self.shared.behaviour.lock().principals = known
            .iter()
            .map(|&(token, principal, tenant)| {
                let tenant = Label::new(format!("tenant:{tenant}"));
                (token.to_owned(), (Principal::new(principal), tenant))
            })
            .collect();
    }

    /// Listen streams open on the server.
    pub fn listeners(&self) -> u64 {
        self.shared.hub.lock().stats().listeners_active
    }

    pub fn set_tool(&self, name: &str, description: &str) {
        let mut lists = self.shared.lists.lock();
        let tool =
            json!({"name": name, "description": description, "inputSchema": {"type": "object"}});
        match lists.tools.iter_mut().find(|t| t["name"] == name) {
            Some(old) => *old = tool,
            None => lists.tools.push(tool),
        }
    }

    pub fn remove_tool(&self, name: &str) {
        self.shared.lists.lock().tools.retain(|t| t["name"] != name);
    }

    pub fn add_prompt(&self, name: &str) {
        self.shared.lists.lock().prompts.push(json!({"name": name}));
    }

    pub fn add_resource(&self, uri: &str) {
        self.shared
            .lists
            .lock()
            .resources
            .push(json!({"uri": uri, "name": uri}));
    }

    pub fn add_template(&self, template: &str) {
        self.shared
            .lists
            .lock()
            .templates
            .push(json!({"uriTemplate": template, "name": template}));
    }

    pub fn set_contents(&self, uri: &str, text: &str) {
        self.shared
            .lists
            .lock()
            .contents
            .insert(uri.into(), text.into());
    }

    /// Holds every list request this long.
    pub fn set_delay(&self, delay: Duration) {
        self.shared.behaviour.lock().delay = delay;
    }

    /// Gives every list page this `ttlMs` and `cacheScope`.
    pub fn set_cache_hints(&self, ttl_ms: u64, scope: &'static str) {
        self.shared.behaviour.lock().cache_hints = Some((ttl_ms, scope));
    }

    /// Pages lists this way.
    pub fn set_paging(&self, paging: Paging) {
        self.shared.behaviour.lock().paging = paging;
    }

    /// Answers list requests with this HTTP status; `None` to answer again.
    pub fn set_failing(&self, status: Option<u16>) {
        self.shared.behaviour.lock().failing = status;
    }

    /// Refuses listens naming a URI that holds `needle`, with -32602.
    pub fn refuse_uris_containing(&self, needle: &str) {
        self.shared.behaviour.lock().refused_uris = Some(needle.into());
    }

    /// Leaves URIs that hold `needle` out of every grant.
    pub fn withhold_uris_containing(&self, needle: &str) {
        self.shared.behaviour.lock().withheld_uris = Some(needle.into());
    }

    /// Requires this bearer token on every request, listens included.
    pub fn require_token(&self, token: &str) {
        self.shared.behaviour.lock().token = Some(token.into());
    }

    /// The params of the last `tools/call` it answered.
    pub fn last_call(&self) -> Option<Value> {
        self.shared.last_call.lock().clone()
    }

    /// Whole fetches of `method` so far (first pages).
    pub fn fetches(&self, method: &str) -> usize {
        self.shared.fetches.lock().get(method).copied().unwrap_or(0)
    }

    /// Requests of `method` so far, every page.
    pub fn requests(&self, method: &str) -> usize {
        self.shared
            .requests
            .lock()
            .get(method)
            .copied()
            .unwrap_or(0)
    }
}

async fn authorize(
    State(shared): State<Arc<Shared>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let principal = {
        let behaviour = shared.behaviour.lock();
        let given = request.headers().get("authorization");
        let token = given.and_then(|v| v.to_str().ok()?.strip_prefix("Bearer "));
        match token.and_then(|token| behaviour.principals.get(token)) {
            Some((principal, _)) => Some(principal.clone()),
            None if behaviour.principals.is_empty() => None,
            None => return (StatusCode::UNAUTHORIZED, "no known principal").into_response(),
        }
    };
    if let Some(principal) = principal {
        request.extensions_mut().insert(principal);
    }
    let token = shared.behaviour.lock().token.clone();
    if let Some(token) = token {
        let expected = format!("Bearer {token}");
        let given = request.headers().get("authorization");
        if given.and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
            return (StatusCode::UNAUTHORIZED, "no valid token").into_response();
        }
    }
    next.run(request).await
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    principal: Option<axum::Extension<Principal>>,
    body: String,
) -> Response {
    let principal = principal.map(|axum::Extension(principal)| principal);
    let request: Value = serde_json::from_str(&body).unwrap();
    let method = request["method"].as_str().unwrap_or_default().to_owned();
    let params = &request["params"];
    assert!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28",
        "{method} names its protocol version: {request}"
    );
    *shared.requests.lock().entry(method.clone()).or_default() += 1;
    if params.get("cursor").is_none() {
        *shared.fetches.lock().entry(method.clone()).or_default() += 1;
    }
    let (delay, failing, paging, (ttl_ms, cache_scope), capabilities) = {
        let behaviour = shared.behaviour.lock();
        let hints = behaviour.cache_hints.unwrap_or((60_000, "public"));
        let capabilities = behaviour.capabilities.clone().unwrap_or_else(|| {
            json!({
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"listChanged": true, "subscribe": true},
            })
        });
        let (delay, failing, paging) = (behaviour.delay, behaviour.failing, behaviour.paging);
        (delay, failing, paging, hints, capabilities)
    };
    if method != "server/discover" {
        tokio::time::sleep(delay).await;
        if let Some(status) = failing {
            return (StatusCode::from_u16(status).unwrap(), "failing on purpose").into_response();
        }
    }
    let result = {
        let lists = shared.lists.lock();
        let page = |field: &str, items: &[Value]| {
            let cursor: usize = params["cursor"]
                .as_str()
                .map_or(0, |cursor| cursor.parse().unwrap());
            let start = cursor.min(items.len());
            let end = (start + shared.page_size).min(items.len());
            let mut page = json!({
                "resultType": "complete", "ttlMs": ttl_ms, "cacheScope": cache_scope,
                field: items[start..end],
            });
            if end < items.len() {
                page["nextCursor"] = json!(end.to_string());
            }
            match paging {
                Paging::Honest => {}
                Paging::Malformed => page[field] = json!("not a list"),
                Paging::SameCursor => page["nextCursor"] = json!("0"),
                Paging::Endless => page["nextCursor"] = json!(format!("{}", cursor + 1)),
            }
            page
        };
        match method.as_str() {
            "server/discover" => json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": capabilities,
                "ttlMs": 0, "cacheScope": "public",
            }),
            "tools/list" => page("tools", &lists.tools),
            "prompts/list" => page("prompts", &lists.prompts),
            "resources/list" => page("resources", &lists.resources),
            "resources/templates/list" => page("resourceTemplates", &lists.templates),
            "tools/call" => {
                *shared.last_call.lock() = Some(params.clone());
                let takes_tasks =
                    params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                        .get(TASKS_EXTENSION_ID)
                        .is_some();
                if params["name"] == "slow" && takes_tasks {
                    start_task(&shared, principal)
                } else {
                    json!({"resultType": "complete", "content": [{"type": "text", "text": "called"}], "isError": false})
                }
            }
            "prompts/get" => {
                let name = params["name"].as_str().unwrap_or_default();
                if !lists.prompts.iter().any(|prompt| prompt["name"] == name) {
                    return json_answer(json!({"jsonrpc": "2.0", "id": request["id"],
                        "error": {"code": -32602, "message": "no such prompt"}}));
                }
                json!({"resultType": "complete", "messages": [
                    {"role": "user", "content": {"type": "text", "text": format!("{name} says hello")}}
                ]})
            }
            "tasks/get" => {
                let id = params["taskId"].as_str().unwrap_or_default();
                match shared.tasks.lock().get(id) {
                    Some((owner, task)) if *owner == principal => {
                        let mut got = serde_json::to_value(task).unwrap();
                        got["resultType"] = json!("complete");
                        got
                    }
                    _ => {
                        return json_answer(json!({"jsonrpc": "2.0", "id": request["id"],
                            "error": {"code": -32602, "message": "no such task"}}));
                    }
                }
            }
            "resources/read" => {
                let uri = params["uri"].as_str().unwrap();
                match lists.contents.get(uri) {
                    Some(text) => {
                        json!({"resultType": "complete", "contents": [{"uri": uri, "text": text}]})
                    }
                    None => {
                        return json_answer(json!({"jsonrpc": "2.0", "id": request["id"],
                            "error": {"code": -32002, "message": "Resource not found"}}));
                    }
                }
            }
            _ => {
                return json_answer(json!({"jsonrpc": "2.0", "id": request["id"],
                    "error": {"code": -32601, "message": "Method not found"}}));
            }
        }
    };
    json_answer(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
}

/// A hub that serves the tasks extension's `taskIds`.
fn hub() -> Hub {
    let tasks = Extension::new(TASKS_EXTENSION_ID)
        .with_id_list(TASK_IDS, 1_000)
        .with_method("notifications/tasks")
        .requiring_client_declaration();
    Hub::builder()
        .capabilities(Capabilities::default().with_extension(tasks))
        .build()
}

/// `task`'s status, to its owner's listens of its id.
fn publish_task(shared: &Shared, owner: Option<Principal>, task: &DetailedTask) {
    let Ok(Value::Object(params)) = serde_json::to_value(task) else {
        unreachable!("a task serializes as an object")
    };
    let selector = Selector::new(TASK_IDS, Some(task.task.task_id.clone()));
    let audience = owner.map_or_else(Audience::everyone, Audience::principal);
    let event = Event::extension("notifications/tasks", params, Some(selector));
    shared.hub.lock().publish(event.with_audience(audience));
}

/// `tools/call` of `slow` by a caller that takes tasks: a task of its
/// own, working.
fn start_task(shared: &Shared, owner: Option<Principal>) -> Value {
    let mut tasks = shared.tasks.lock();
    let id = format!("t-{}", tasks.len() + 1);
    let at = "2026-12-06T00:00:00Z";
    let task = DetailedTask::new(
        Task::new(id.as_str(), TaskStatus::Working, at, at),
        TaskPayload::Working,
    );
    tasks.insert(id, (owner.clone(), task.clone()));
    drop(tasks);
    publish_task(shared, owner, &task);
    let mut created = serde_json::to_value(&task.task).unwrap();
    created["resultType"] = json!("task");
    created
}

fn json_answer(message: Value) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        message.to_string(),
    )
        .into_response()
}
