//! The vocabulary of the audience models (`tests/serving/audiences.rs`,
//! `tests/relay/audiences.rs`): what a stream watches, who an event is
//! for, and numbered events that no two are alike.

#![allow(dead_code, unreachable_pub)]

use mcp_subscriptions::{Audience, Event};
use rand::RngExt;
use rand::rngs::StdRng;
use serde_json::json;

/// What a stream can watch, and what an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Tools,
    Uri(usize),
}

/// The URIs of the models.
pub const URIS: usize = 4;

/// Every key of the models.
pub const EVERYTHING: &[Key] = &[
    Key::Tools,
    Key::Uri(0),
    Key::Uri(1),
    Key::Uri(2),
    Key::Uri(3),
];

/// Who an event is for, as the model sees it: `None` for everyone, else
/// the principals and labels it names (none: no one).
pub type Scope = Option<(Vec<&'static str>, Vec<&'static str>)>;

pub fn uri(i: usize) -> String {
    format!("file:///{i}")
}

/// Event number `n`, about `key`, for `scope`: a list change or an update
/// carrying `n`, so that no two are alike and none coalesces.
pub fn event(n: usize, key: Key, scope: &Scope) -> Event {
    let (method, params) = match key {
        Key::Tools => ("notifications/tools/list_changed", json!({ "n": n })),
        Key::Uri(i) => (
            "notifications/resources/updated",
            json!({ "uri": uri(i), "n": n }),
        ),
    };
    let event = Event::extension(method, params.as_object().unwrap().clone(), None);
    match scope {
        None => event,
        Some((principals, labels)) => {
            let audience = principals
                .iter()
                .fold(Audience::nobody(), |a, &p| a.with_principal(p));
            event.with_audience(labels.iter().fold(audience, |a, &l| a.with_label(l)))
        }
    }
}

/// A key at random: the tools list one time in five, else a URI.
pub fn random_key(rng: &mut StdRng) -> Key {
    if rng.random_bool(0.2) {
        Key::Tools
    } else {
        Key::Uri(rng.random_range(0..URIS))
    }
}

/// A scope at random: everyone, no one, a principal (`p9` has no
/// stream), a label (`tenant:z` neither), both, or two principals.
pub fn random_scope(rng: &mut StdRng) -> Scope {
    const PRINCIPALS: [&str; 5] = ["p0", "p1", "p2", "p3", "p9"];
    const LABELS: [&str; 3] = ["tenant:a", "tenant:b", "tenant:z"];
    let principal = |rng: &mut StdRng| PRINCIPALS[rng.random_range(0..PRINCIPALS.len())];
    let label = |rng: &mut StdRng| LABELS[rng.random_range(0..LABELS.len())];
    match rng.random_range(0..100) {
        0..30 => None,
        30..40 => Some((vec![], vec![])),
        40..65 => Some((vec![principal(rng)], vec![])),
        65..85 => Some((vec![], vec![label(rng)])),
        85..95 => Some((vec![principal(rng)], vec![label(rng)])),
        _ => Some((vec![principal(rng), principal(rng)], vec![])),
    }
}
