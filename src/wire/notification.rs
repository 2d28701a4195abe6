//! Rendering a notification to JSON once, and stamping a subscription id into it
//! by splicing bytes rather than serializing again.
//!
//! A notification is kept as its stamped form with the id cut out:
//!
//! ```text
//! {"jsonrpc":"2.0","method":"…","params":{"_meta":{"…subscriptionId":  |  ,meta entries},other params}}
//! ```
//!
//! so that a stream's copy is the text before the cut, its id, and the text
//! after it: two shared halves and a few bytes of its own, whatever the
//! size of the params. The unstamped form (for channels without
//! subscription ids) is assembled from the same text.

use std::ops::Range;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::message::Message;
use super::meta::SUBSCRIPTION_ID;

const ENVELOPE: &str = r#"{"jsonrpc":"2.0","#;
const PARAMS_OPEN: &str = r#","params":{"#;
const META_OPEN: &str = r#""_meta":{"#;
const STAMP_OPEN: &str = r#""_meta":{"io.modelcontextprotocol/subscriptionId":"#;

/// A notification rendered once, ready to be written many times.
#[derive(Debug, Clone)]
pub(crate) struct Rendering {
    /// The stamped message without its id, which goes at `cut`.
    text: Bytes,
    cut: usize,
    /// End of `{"jsonrpc":"2.0","method":"…","params":{`.
    head_end: usize,
    /// The extra `_meta` entries (comma-separated, no braces).
    meta: Range<usize>,
    /// The other params (comma-separated, no braces).
    body: Range<usize>,
}

impl Rendering {
    /// Renders `method` with `params`: any `_meta` object in it is kept, except
    /// a stale subscription id, which stamping replaces.
    pub(crate) fn render(method: &str, params: &Map<String, Value>) -> Self {
        let meta = match params.get("_meta") {
            Some(Value::Object(meta)) => Some(meta),
            _ => None,
        };
        Self::assemble(
            method,
            meta.into_iter()
                .flatten()
                .filter(|(key, _)| *key != SUBSCRIPTION_ID)
                .map(|(key, value)| (key.as_str(), Json::Parsed(value))),
            params
                .iter()
                .filter(|(key, _)| *key != "_meta")
                .map(|(key, value)| (key.as_str(), Json::Parsed(value))),
        )
    }

    /// Writes `method` with the `_meta` entries `meta` (no subscription id
    /// among them) and the other params `body`.
    pub(crate) fn assemble<'a>(
        method: &str,
        meta: impl Iterator<Item = (&'a str, Json<'a>)>,
        body: impl Iterator<Item = (&'a str, Json<'a>)>,
    ) -> Self {
        let mut text = Vec::from(ENVELOPE);
        text.extend_from_slice(br#""method":"#);
        write_json(&mut text, method);
        text.extend_from_slice(PARAMS_OPEN.as_bytes());
        let head_end = text.len();
        text.extend_from_slice(STAMP_OPEN.as_bytes());
        let cut = text.len();
        let meta = push_after_comma(&mut text, meta);
        text.push(b'}');
        let body = push_after_comma(&mut text, body);
        text.extend_from_slice(b"}}");
        // The text lives as long as any queue holds the event: give back
        // what the buffer grew beyond it, so that a queue's byte bound is
        // the memory it holds.
        text.shrink_to_fit();
        Self {
            text: Bytes::from(text),
            cut,
            head_end,
            meta,
            body,
        }
    }

    /// The length of the stamped text without its id.
    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }

    fn head(&self) -> &[u8] {
        &self.text[..self.head_end]
    }

    /// The message with `_meta[subscriptionId] = id_json`, sharing this
    /// rendering's bytes.
    pub(crate) fn stamped(&self, id_json: Bytes) -> Message {
        Message::spliced(
            self.text.slice(..self.cut),
            id_json,
            self.text.slice(self.cut..),
        )
    }

    /// Appends the message without a subscription id to `out`; a
    /// notification with no params is written without a `params` member.
    /// With `envelope` false the `"jsonrpc":"2.0"` member is left out too,
    /// giving the bare notification as rmcp's `ServerNotification`
    /// serializes it.
    pub(crate) fn write_plain(&self, envelope: bool, out: &mut Vec<u8>) {
        let head = if envelope {
            self.head()
        } else {
            // `{"jsonrpc":"2.0",` → `{`, then the rest of the head.
            out.push(b'{');
            &self.head()[ENVELOPE.len()..]
        };
        let (meta, body) = (&self.text[self.meta.clone()], &self.text[self.body.clone()]);
        if meta.is_empty() && body.is_empty() {
            out.extend_from_slice(&head[..head.len() - PARAMS_OPEN.len()]);
            out.push(b'}');
            return;
        }
        out.reserve(self.text.len());
        out.extend_from_slice(head);
        if !meta.is_empty() {
            out.extend_from_slice(META_OPEN.as_bytes());
            out.extend_from_slice(meta);
            out.push(b'}');
            if !body.is_empty() {
                out.push(b',');
            }
        }
        out.extend_from_slice(body);
        out.extend_from_slice(b"}}");
    }
}

/// A params value to write: parsed, or the JSON text it was received as.
#[derive(Clone, Copy)]
pub(crate) enum Json<'a> {
    Parsed(&'a Value),
    /// Valid JSON, written as it is but for its line breaks: outside
    /// strings they are only whitespace (a string cannot hold one raw), and
    /// a rendering must fit on one line of stdio or SSE.
    Raw(&'a str),
}

/// Appends `entries` after a comma, or nothing when there are none; where
/// the entries sit in `text`.
fn push_after_comma<'a>(
    text: &mut Vec<u8>,
    entries: impl Iterator<Item = (&'a str, Json<'a>)>,
) -> Range<usize> {
    let comma = text.len();
    for (key, value) in entries {
        text.push(b',');
        write_json(text, key);
        text.push(b':');
        match value {
            Json::Parsed(value) => write_json(text, value),
            Json::Raw(raw) if raw.contains(['\n', '\r']) => {
                text.extend(raw.bytes().filter(|b| !matches!(b, b'\n' | b'\r')));
            }
            Json::Raw(raw) => text.extend_from_slice(raw.as_bytes()),
        }
    }
    if text.len() == comma {
        return comma..comma;
    }
    comma + 1..text.len()
}

fn write_json(text: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    // Writing a string or a `Value` into memory cannot fail: it has no
    // non-string map keys.
    serde_json::to_writer(text, value).expect("JSON serializes");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::golden;

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    /// Checks the stamped and plain forms against their golden files; the
    /// bare form is the plain one without its envelope.
    fn check(name: &str, rendering: &Rendering, id: &str) {
        let stamped = rendering.stamped(Bytes::copy_from_slice(id.as_bytes()));
        golden::check(&format!("{name}.stamped"), &stamped.to_vec());
        let mut plain = Vec::new();
        rendering.write_plain(true, &mut plain);
        golden::check(&format!("{name}.plain"), &plain);
        let mut bare = Vec::new();
        rendering.write_plain(false, &mut bare);
        assert_eq!(
            String::from_utf8(bare).unwrap(),
            String::from_utf8(plain)
                .unwrap()
                .replacen(r#""jsonrpc":"2.0","#, "", 1),
            "the bare form is the message without its envelope"
        );
    }

    #[test]
    fn no_params() {
        let rendering = Rendering::render("notifications/tools/list_changed", &Map::new());
        check("no_params", &rendering, r#""listen-1""#);
    }

    #[test]
    fn params_and_existing_meta_survive_stamping() {
        let rendering = Rendering::render(
            "notifications/x",
            &params(json!({
                "b": [1, {"c": null}],
                "_meta": {"trace": "abc", "io.modelcontextprotocol/subscriptionId": "stale"},
                "a": "\"quoted\"",
            })),
        );
        check("meta_and_params", &rendering, "42");
        let stamped = rendering.stamped(Bytes::from_static(b"42")).to_vec();
        assert_eq!(
            serde_json::from_slice::<Value>(&stamped).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/x", "params": {
                "_meta": {"io.modelcontextprotocol/subscriptionId": 42, "trace": "abc"},
                "a": "\"quoted\"", "b": [1, {"c": null}],
            }})
        );
    }

    #[test]
    fn meta_only_and_body_only() {
        check(
            "meta_only",
            &Rendering::render("m", &params(json!({"_meta": {"k": 1}}))),
            "1",
        );
        check(
            "body_only",
            &Rendering::render("m", &params(json!({"uri": "file:///a"}))),
            "1",
        );
    }
}
