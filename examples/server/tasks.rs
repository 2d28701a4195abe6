//! The tasks the `test_start_task` tool runs: each works through its steps
//! and publishes every status change through the hub (and its relay, when
//! there is one), and remembers who started it, for the authorizer, and
//! its latest status, which the relay sends again when another replica
//! resyncs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use mcp_subscriptions::{Event, audience::Principal, tasks};
use rmcp::model::{DetailedTask, Task, TaskPayload, TaskStatus};
use serde_json::json;

use crate::replicas::Replica;

/// The tasks started so far, with the principal that started each (none
/// when the server runs without bearer tokens, or over stdio).
#[derive(Clone, Default)]
pub(crate) struct Tasks {
    next: Arc<AtomicU64>,
    owners: Arc<Mutex<HashMap<String, Option<Principal>>>>,
    /// Each task's latest status, as published.
    latest: Arc<Mutex<HashMap<String, Event>>>,
}

impl Tasks {
    /// Starts a task of `steps` steps, `interval` apart, on the runtime:
    /// `working` at each step (its message says which), then `completed`.
    /// Returns its id at once: `task-N`, or `task-REPLICA-N` when relayed,
    /// so that replicas never start two tasks of one id.
    pub(crate) fn start(
        &self,
        replica: &Replica,
        owner: Option<Principal>,
        steps: u32,
        interval: Duration,
    ) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = match replica.origin() {
            Some(replica) => format!("task-{replica}-{n}"),
            None => format!("task-{n}"),
        };
        self.owners
            .lock()
            .expect("no panic while holding the owners")
            .insert(id.clone(), owner);
        let created = now();
        let (replica, task_id, latest) = (replica.clone(), id.clone(), self.latest.clone());
        let publish = move |task: DetailedTask| {
            let event = tasks::event(&task);
            latest
                .lock()
                .expect("no panic while holding the statuses")
                .insert(task_id.clone(), event.clone());
            replica.hub().publish(event);
        };
        let task_id = id.clone();
        tokio::spawn(async move {
            for step in 1..=steps {
                let mut task = Task::new(&task_id, TaskStatus::Working, &created, now());
                task.status_message = Some(format!("step {step} of {steps}"));
                publish(DetailedTask::new(task, TaskPayload::Working));
                tokio::time::sleep(interval).await;
            }
            let task = Task::new(&task_id, TaskStatus::Completed, &created, now());
            let result =
                json!({"content": [{"type": "text", "text": format!("{steps} steps done")}]});
            let result = result.as_object().cloned().unwrap_or_default();
            publish(DetailedTask::new(task, TaskPayload::Completed { result }));
        });
        id
    }

    /// Each task's latest status: what the relay sends again when another
    /// replica resyncs.
    #[cfg(any_relay)]
    pub(crate) fn latest(&self) -> Vec<Event> {
        self.latest
            .lock()
            .expect("no panic while holding the statuses")
            .values()
            .cloned()
            .collect()
    }

    /// Whether `principal` started the task `id`.
    pub(crate) fn owned_by(&self, id: &str, principal: &Principal) -> bool {
        self.owners
            .lock()
            .expect("no panic while holding the owners")
            .get(id)
            .is_some_and(|owner| owner.as_ref() == Some(principal))
    }

    /// The ids of the tasks `principal` started.
    pub(crate) fn of(&self, principal: &Principal) -> Vec<String> {
        self.owners
            .lock()
            .expect("no panic while holding the owners")
            .iter()
            .filter(|(_, owner)| owner.as_ref() == Some(principal))
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// Now, as the tasks extension writes timestamps.
fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}
