//! Extensions and request context: what a source learns about a request,
//! extension fields declared once (`-32021`, `-32602`, ungranted fields),
//! and the tasks extension's ordering and last-word guarantees, in process,
//! over raw HTTP and over stdio.

#![cfg(all(feature = "http", feature = "stdio", feature = "tasks"))]

use std::sync::{Arc, Mutex};

use crate::support::http::{app, listen, post, serve};
use axum::extract::Request;
use axum::middleware::Next as Middleware;
use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::tasks::{self, TASK_IDS};
use mcp_subscriptions::{
    Capabilities, Filter, Hub, ListenService, Listener, Next, OpenContext, Opened, Overflow,
    Selector, Source, TransportKind, audience::Principal,
};
use rmcp::model::{DetailedTask, Task, TaskPayload, TaskStatus};
use serde_json::{Value, json};

const TASKS: &str = tasks::EXTENSION_ID;

fn tasks_hub() -> Hub {
    Hub::builder()
        .capabilities(Capabilities::default().with_extension(tasks::extension()))
        .build()
}

/// A status of task `id` at second `second` of a fixed minute.
fn status(id: &str, status: TaskStatus, second: u32) -> DetailedTask {
    let at = format!("2026-12-01T10:00:{second:02}Z");
    let task = Task::new(id, status, "2026-12-01T10:00:00Z", at);
    let payload = match status {
        TaskStatus::Completed => TaskPayload::Completed {
            result: Default::default(),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: Default::default(),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    DetailedTask::new(task, payload)
}

/// A source that serves from a hub and records every context it was
/// opened with.
struct Recording {
    hub: Hub,
    seen: Arc<Mutex<Vec<OpenContext>>>,
}

impl Source for Recording {
    type Handle = Listener;

    fn capabilities(&self) -> Capabilities {
        self.hub.capabilities().clone()
    }

    fn open(
        &self,
        requested: &Filter,
        context: &OpenContext,
    ) -> Result<Opened<Listener>, OpenError> {
        self.seen.lock().unwrap().push(context.clone());
        self.hub.open(requested, context)
    }
}

#[tokio::test]
async fn smoke_a_task_status_reaches_the_stream_that_follows_it() {
    let hub = tasks_hub();
    let url = serve(app(ListenService::new(hub.clone()))).await;
    let body = listen(json!(1), json!({"taskIds": ["t1"]}), &[TASKS]);
    let mut stream = post(&url, &body, &[]).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": ["t1"]}));
    hub.notify_task(&status("t2", TaskStatus::Working, 1));
    hub.notify_task(&status("t1", TaskStatus::Working, 2));
    let event = stream.next().await.unwrap();
    assert_eq!(event["method"], "notifications/tasks");
    assert_eq!(event["params"]["taskId"], "t1");
    assert_eq!(event["params"]["status"], "working");
    assert_eq!(event["params"]["lastUpdatedAt"], "2026-12-01T10:00:02Z");
    assert_eq!(
        event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
}

#[tokio::test]
async fn the_source_sees_the_request_context_and_a_header_a_layer_set() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let source = Recording {
        hub: tasks_hub(),
        seen: seen.clone(),
    };
    // A tower layer in front of the endpoint, as an auth layer would be.
    let layer = axum::middleware::from_fn(|mut request: Request, next: Middleware| async move {
        request
            .headers_mut()
            .insert("x-tenant", "acme".parse().unwrap());
        request.extensions_mut().insert(Principal::new("alice"));
        next.run(request).await
    });
    let url = serve(app(ListenService::new(source)).layer(layer)).await;
    let body = listen(json!("ctx"), json!({"toolsListChanged": true}), &[TASKS]);
    let mut stream = post(&url, &body, &[]).await;
    stream.next().await.unwrap();

    let context = seen.lock().unwrap().pop().expect("the source was opened");
    assert_eq!(context.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(context.client_declares_extension(TASKS));
    assert_eq!(context.client_info.as_ref().unwrap().name, "raw-test");
    assert_eq!(context.transport, Some(TransportKind::Http));
    assert_eq!(context.principal, Some(Principal::new("alice")));
    let head = context.http.as_ref().expect("the HTTP head");
    assert_eq!(head.headers["x-tenant"], "acme");
    assert_eq!(
        context.subscription_id,
        Some(rmcp::model::RequestId::String("ctx".into()))
    );
}

#[tokio::test]
async fn task_ids_from_a_client_that_did_not_declare_the_extension_get_32021() {
    let url = serve(app(ListenService::new(tasks_hub()))).await;
    let body = listen(json!(7), json!({"taskIds": ["t1"]}), &[]);
    let answer = post(&url, &body, &[]).await;
    let reply = answer.json().await;
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["error"]["code"], -32021);
    assert_eq!(
        reply["error"]["data"],
        json!({"requiredCapabilities": {"extensions": {TASKS: {}}}})
    );
}

#[tokio::test]
async fn malformed_task_ids_are_invalid_params() {
    let url = serve(app(ListenService::new(tasks_hub()))).await;
    let too_many: Vec<String> = (0..=tasks::MAX_TASK_IDS).map(|i| format!("t{i}")).collect();
    for bad in [json!(["t1", 2]), json!("t1"), json!(false), json!(too_many)] {
        let body = listen(json!(1), json!({ "taskIds": bad }), &[TASKS]);
        let reply = post(&url, &body, &[]).await.json().await;
        assert_eq!(reply["error"]["code"], -32602, "{bad}: {reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("taskIds"),
            "{reply}"
        );
    }
}

#[tokio::test]
async fn fields_no_declared_extension_owns_are_not_granted() {
    let url = serve(app(ListenService::new(tasks_hub()))).await;
    let asked = json!({"toolsListChanged": true, "taskIds": ["t1"], "vendorThings": ["x"]});
    let mut stream = post(&url, &listen(json!(1), asked, &[TASKS]), &[]).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "taskIds": ["t1"]})
    );
    // Without the extension installed, taskIds is not granted either.
    let bare = serve(app(ListenService::new(Hub::new()))).await;
    let asked = json!({"toolsListChanged": true, "taskIds": ["t1"]});
    let mut stream = post(&bare, &listen(json!(2), asked, &[TASKS]), &[]).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
}

/// Drains what `listener` holds: (task id, status, second) for each status.
fn drain_statuses(listener: &mut Listener) -> Vec<(String, String, u32)> {
    std::iter::from_fn(|| listener.try_next())
        .filter_map(|next| match next {
            Next::Event(event) => {
                let value: Value = serde_json::from_str(&event.to_plain_json()).unwrap();
                let params = &value["params"];
                let at = params["lastUpdatedAt"].as_str().unwrap();
                Some((
                    params["taskId"].as_str().unwrap().to_owned(),
                    params["status"].as_str().unwrap().to_owned(),
                    at[17..19].parse().unwrap(),
                ))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn statuses_never_go_back_in_time_and_a_newer_one_takes_the_pending_ones_place() {
    let hub = tasks_hub();
    let mut listener = hub
        .listen(&Filter::new().with_extension(TASK_IDS, json!(true)))
        .unwrap();
    hub.notify_task(&status("t1", TaskStatus::Working, 1));
    hub.notify_task(&status("t2", TaskStatus::Working, 1));
    hub.notify_task(&status("t1", TaskStatus::Working, 3));
    hub.notify_task(&status("t1", TaskStatus::Working, 2)); // late: older than pending
    assert_eq!(
        drain_statuses(&mut listener),
        [
            ("t1".to_owned(), "working".to_owned(), 3),
            ("t2".to_owned(), "working".to_owned(), 1),
        ]
    );
    hub.notify_task(&status("t1", TaskStatus::Working, 2)); // late: older than taken
    assert!(drain_statuses(&mut listener).is_empty());
    let stats = listener.stats();
    assert_eq!(stats.events.coalesced, 3);
    assert!(stats.events.is_balanced());
}

#[test]
fn a_terminal_status_survives_drop_oldest_overflow() {
    let hub = Hub::builder()
        .capacity(4)
        .overflow(Overflow::DropOldest)
        .capabilities(Capabilities::default().with_extension(tasks::extension()))
        .build();
    let mut listener = hub
        .listen(&Filter::new().with_extension(TASK_IDS, json!(true)))
        .unwrap();
    hub.notify_task(&status("t0", TaskStatus::Working, 1));
    hub.notify_task(&status("t0", TaskStatus::Completed, 2));
    // A flood of other tasks' progress, far more than the queue holds.
    for i in 1..50 {
        hub.notify_task(&status(&format!("t{i}"), TaskStatus::Working, 3));
    }
    hub.notify_task(&status("t50", TaskStatus::Failed, 4));
    for i in 51..100 {
        hub.notify_task(&status(&format!("t{i}"), TaskStatus::Working, 5));
    }
    let got = drain_statuses(&mut listener);
    assert!(
        got.contains(&("t0".to_owned(), "completed".to_owned(), 2)),
        "{got:?}"
    );
    assert!(
        got.contains(&("t50".to_owned(), "failed".to_owned(), 4)),
        "{got:?}"
    );
    assert!(
        !got.contains(&("t0".to_owned(), "working".to_owned(), 1)),
        "the completed status took the working one's place: {got:?}"
    );
    assert!(listener.stats().events.dropped > 0, "it did overflow");
    assert!(listener.stats().events.is_balanced());
}

#[test]
fn progress_and_log_notifications_never_reach_a_listen_stream() {
    let hub = tasks_hub();
    let mut listener = hub
        .listen(&Filter::new().with_extension(TASK_IDS, json!(true)))
        .unwrap();
    let mut channel = hub.listen(&Filter::everything()).unwrap();
    for method in ["notifications/progress", "notifications/message"] {
        let selector = Some(Selector::new(TASK_IDS, Some("t1".into())));
        hub.publish(mcp_subscriptions::Event::extension(
            method,
            Default::default(),
            selector,
        ));
    }
    // A method the tasks extension does not list does not travel under
    // its field either.
    let selector = Some(Selector::new(TASK_IDS, Some("t1".into())));
    hub.publish(mcp_subscriptions::Event::extension(
        "vendor/other",
        Default::default(),
        selector,
    ));
    assert_eq!(listener.try_next(), None);
    assert_eq!(
        std::iter::from_fn(|| channel.try_next()).count(),
        3,
        "a channel carries everything"
    );
}

#[tokio::test]
async fn over_stdio_a_stream_follows_its_tasks() {
    let hub = tasks_hub();
    let service = ListenService::new(hub.clone());
    let (_, mut pipe) = crate::support::stdio::serve(64 * 1024, |input, output| {
        StdioTransport::new(service, input, output)
    });
    pipe.send(&listen(json!("no-caps"), json!({"taskIds": ["t1"]}), &[]))
        .await;
    pipe.send(&listen(json!("s"), json!({"taskIds": ["t1"]}), &[TASKS]))
        .await;
    let refused = pipe.read().await;
    assert_eq!(
        (refused["id"].clone(), refused["error"]["code"].clone()),
        (json!("no-caps"), json!(-32021))
    );
    assert_eq!(
        pipe.read().await["params"]["notifications"],
        json!({"taskIds": ["t1"]})
    );
    hub.notify_task(&status("t1", TaskStatus::Completed, 9));
    let event = pipe.read().await;
    assert_eq!(event["method"], "notifications/tasks");
    assert_eq!(event["params"]["status"], "completed");
}
