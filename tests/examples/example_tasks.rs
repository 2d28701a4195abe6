//! The example server's tasks: `test_start_task` publishes each status
//! change, which reaches the listen streams and channels that follow the
//! task; in bearer-token mode only the principal that started it may.

use crate::support::example::{HttpServer, call, request_meta};
use crate::support::http::{listen, post};
use futures_util::StreamExt;
use mcp_subscriptions::channel::Frame;
use serde_json::{Value, json};

const TASKS: &str = mcp_subscriptions::tasks::EXTENSION_ID;

/// A raw `tools/call` of `test_start_task`, as a 2026-07-28 client sends
/// it without a session.
fn start_task(steps: u32) -> Value {
    json!({"jsonrpc": "2.0", "id": "start", "method": "tools/call", "params": {
        "name": "test_start_task",
        "arguments": {"steps": steps, "interval_ms": 20},
        "_meta": request_meta(),
    }})
}

/// Reads a stream's task statuses until the terminal one: (status,
/// lastUpdatedAt) each.
async fn statuses(stream: &mut crate::support::http::Answer) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    while let Some(message) = stream.next().await {
        assert_eq!(message["method"], "notifications/tasks", "{message}");
        let params = &message["params"];
        let status = params["status"].as_str().unwrap().to_owned();
        seen.push((
            status.clone(),
            params["lastUpdatedAt"].as_str().unwrap().to_owned(),
        ));
        if status == "completed" {
            break;
        }
    }
    seen
}

#[tokio::test]
async fn http_a_stream_with_task_ids_follows_the_task_to_its_end() {
    let server = HttpServer::start(&[]).await;
    // The first task a fresh server starts is `task-1`.
    let body = listen(json!("tasks"), json!({"taskIds": ["task-1"]}), &[TASKS]);
    let mut stream = post(&server.base, &body, &[]).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"taskIds": ["task-1"]})
    );
    let client = server.client().await;
    call(
        &client,
        "test_start_task",
        json!({"steps": 3, "interval_ms": 20}),
    )
    .await;
    let seen = statuses(&mut stream).await;
    assert_eq!(seen.last().unwrap().0, "completed", "{seen:?}");
    assert!(seen.len() >= 2, "working, then completed: {seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0].1 <= w[1].1),
        "never back in time: {seen:?}"
    );
}

#[tokio::test]
async fn channel_frames_carry_the_task_statuses() {
    let server = HttpServer::start(&[]).await;
    let url = format!("ws://{}/mcp/notifications/main", server.addr());
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    server
        .wait_for_active(1, std::time::Duration::from_secs(5))
        .await;
    let client = server.client().await;
    call(
        &client,
        "test_start_task",
        json!({"steps": 1, "interval_ms": 10}),
    )
    .await;
    let mut statuses = Vec::new();
    while statuses.last().map(String::as_str) != Some("completed") {
        let message = tokio::time::timeout(std::time::Duration::from_secs(5), socket.next())
            .await
            .expect("a frame within 5 s")
            .unwrap()
            .unwrap();
        let Ok(Frame::Notification(notification)) = Frame::decode(&message.into_data()) else {
            continue;
        };
        let notification = serde_json::to_value(&notification).unwrap();
        if notification["method"] == "notifications/tasks" {
            statuses.push(
                notification["params"]["status"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
    }
    assert_eq!(statuses.first().map(String::as_str), Some("working"));
}

#[tokio::test]
async fn bearer_mode_lets_only_the_tasks_owner_follow_it() {
    let server = HttpServer::start(&[
        "--bearer-token",
        "alice:a-secret",
        "--bearer-token",
        "bob:b-secret",
    ])
    .await;
    let alice = [("authorization", "Bearer a-secret")];
    let bob = [("authorization", "Bearer b-secret")];

    let anonymous = post(&server.base, &start_task(1), &[]).await;
    assert_eq!(anonymous.status, 401);

    // A slow task, so that both can listen while it runs.
    let started = post(&server.base, &start_task(50), &alice).await;
    assert_eq!(started.status, 200);
    drop(started);

    let asks = || listen(json!(1), json!({"taskIds": ["task-1"]}), &[TASKS]);
    let mut theirs = post(&server.base, &asks(), &bob).await;
    let ack = theirs.next().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({}),
        "bob did not start it"
    );

    let mut own = post(&server.base, &asks(), &alice).await;
    let ack = own.next().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"taskIds": ["task-1"]})
    );
    let status = own.next().await.unwrap();
    assert_eq!(status["params"]["taskId"], "task-1");
    // Granted nothing, bob's stream was completed: no status of hers.
    let end = theirs.next().await.unwrap();
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert!(theirs.next().await.is_none());

    let resources = json!({"resourceSubscriptions": ["file:///alice/notes", "file:///bob/notes"]});
    let mut stream = post(&server.base, &listen(json!(2), resources, &[]), &bob).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["file:///bob/notes"]})
    );
}
