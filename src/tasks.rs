//! The tasks extension (SEP-2663, feature `tasks`): listen streams that
//! follow the status of long-running tasks.
//!
//! A client asks for `taskIds: ["t1", ...]` in its filter, having declared
//! `io.modelcontextprotocol/tasks` in its capabilities (`-32021`
//! otherwise); it then receives `notifications/tasks` whose params are the
//! task's whole status object, as `tasks/get` would return it. The server
//! installs the extension ([`extension`]) in its hub's capabilities, which
//! also advertises it, and publishes each status change with
//! [`Hub::notify_task`].
//!
//! # Ordering and the last word
//!
//! Each status is published in a [`Succession`] keyed by its task id and
//! versioned by its `lastUpdatedAt`, so a listener never receives a status
//! older than one it already received for that task, a slow listener gets
//! the latest status in the place of the pending older one, and a terminal
//! status (`completed`, `failed`, `cancelled`) survives the drop-oldest
//! policy while the listener's queue holds anything else.
//!
//! ```
//! use mcp_subscriptions::{Capabilities, Filter, Hub, Next, tasks};
//! use rmcp::model::{DetailedTask, Task, TaskPayload, TaskStatus};
//! use serde_json::json;
//!
//! let hub = Hub::builder()
//!     .capabilities(Capabilities::default().with_extension(tasks::extension()))
//!     .build();
//! let mut listener = hub
//!     .listen(&Filter::new().with_extension(tasks::TASK_IDS, json!(["t1"])))
//!     .unwrap();
//! let task = Task::new("t1", TaskStatus::Working, "2026-12-01T10:00:00Z", "2026-12-01T10:00:05Z");
//! hub.notify_task(&DetailedTask::new(task, TaskPayload::Working));
//! let Some(Next::Event(event)) = listener.try_next() else { panic!() };
//! assert_eq!(event.method(), "notifications/tasks");
//! ```

use rmcp::model::DetailedTask;
use serde_json::{Map, Value};

use crate::event::{Event, Selector, Succession};
use crate::filter::Extension;
use crate::hub::{Hub, PublishReport};

/// The extension's identifier.
pub const EXTENSION_ID: &str = rmcp::model::TASKS_EXTENSION_ID;

/// The filter field that names the tasks a stream follows.
pub const TASK_IDS: &str = "taskIds";

/// The notification that carries a task's status.
pub const METHOD: &str = "notifications/tasks";

/// The most task ids one listen request may name; more is `-32602`.
pub const MAX_TASK_IDS: usize = 1_000;

/// The tasks extension's declaration: it owns `taskIds` (an array of at
/// most [`MAX_TASK_IDS`] string ids, or `true` for every task), sends
/// `notifications/tasks`, and requires the client to declare it.
pub fn extension() -> Extension {
    Extension::new(EXTENSION_ID)
        .with_id_list(TASK_IDS, MAX_TASK_IDS)
        .with_method(METHOD)
        .requiring_client_declaration()
}

/// The `notifications/tasks` event for `task`'s current status, routed to
/// the listeners that follow its id and placed in its task's succession
/// (versioned by `lastUpdatedAt`; a status whose timestamp does not parse
/// as RFC 3339 is published without one).
pub fn event(task: &DetailedTask) -> Event {
    let params = match serde_json::to_value(task) {
        Ok(Value::Object(params)) => params,
        _ => Map::new(),
    };
    let id = task.task.task_id.clone();
    let event = Event::extension(
        METHOD,
        params,
        Some(Selector::new(TASK_IDS, Some(id.clone()))),
    );
    match rfc3339_nanos(&task.task.last_updated_at) {
        Some(version) => {
            let succession = Succession::new(id, version);
            event.with_succession(if task.status().is_terminal() {
                succession.terminal()
            } else {
                succession
            })
        }
        None => event,
    }
}

impl Hub {
    /// Publishes `task`'s current status as `notifications/tasks` (see the
    /// [`tasks`](crate::tasks) module).
    pub fn notify_task(&self, task: &DetailedTask) -> PublishReport {
        self.publish(event(task))
    }
}

/// Nanoseconds since the Unix epoch of an RFC 3339 timestamp
/// (`2026-12-01T10:00:05.25Z`, `2026-12-01T11:00:05+01:00`).
fn rfc3339_nanos(text: &str) -> Option<i128> {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(range)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if bytes.get(4) != Some(&b'-')
        || bytes.get(7) != Some(&b'-')
        || !matches!(bytes.get(10), Some(b'T' | b't' | b' '))
        || bytes.get(13) != Some(&b':')
        || bytes.get(16) != Some(&b':')
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos: i128 = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let scaled = format!("{:0<9}", &fraction[..digits.min(9)]);
        nanos = scaled.parse().ok()?;
        rest = &fraction[digits..];
    }
    let offset_seconds: i64 = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let hours: i64 = rest[1..3].parse().ok()?;
            let minutes: i64 = rest[4..6].parse().ok()?;
            sign * (hours * 3_600 + minutes * 60)
        }
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_seconds;
    Some(i128::from(seconds) * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_order_by_instant_whatever_their_form() {
        let at = |text| rfc3339_nanos(text).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(at("1970-01-01T00:00:00Z"), 0);
        assert_eq!(at("1970-01-02T00:00:01.5Z"), 86_401_500_000_000);
        assert!(at("2026-12-01T10:00:00Z") < at("2026-12-01T10:00:00.5Z"));
        assert_eq!(at("2026-12-01T11:00:00+01:00"), at("2026-12-01T10:00:00Z"));
        assert!(at("2024-02-29T00:00:00Z") < at("2024-03-01T00:00:00Z"));
        for bad in [
            "",
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2026-12-01T00:00:00",
            "x",
        ] {
            assert_eq!(rfc3339_nanos(bad), None, "{bad}");
        }
    }
}
