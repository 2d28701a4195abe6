//! Reading a notification's JSON text back without parsing its params into
//! values: its method, and each params entry as the raw JSON it was
//! received as, so that passing it on copies those bytes instead of
//! rendering them again (and keeps what a parse would change: numbers past
//! what an `f64` holds exactly, escapes, the order of entries).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::meta::SUBSCRIPTION_ID;
use super::notification::{Json, Rendering};

/// One `params` or `_meta` entry: its key and its value's raw JSON.
pub(crate) type Entry<'a> = (Cow<'a, str>, &'a RawValue);

/// A notification read from its JSON text.
pub(crate) struct Received<'a> {
    pub(crate) method: Cow<'a, str>,
    /// The `_meta` entries but the subscription id.
    pub(crate) meta: Vec<Entry<'a>>,
    /// The other params.
    pub(crate) body: Vec<Entry<'a>>,
}

impl<'a> Received<'a> {
    /// Reads `text`: a JSON-RPC notification (`"jsonrpc": "2.0"`, a
    /// `method`, no `id`) or the bare notification (`method` and `params`
    /// only, as a channel frame carries it). `params`, when present, is an
    /// object whose `_meta`, when present, is one too. A key twice in one
    /// object keeps its last value, as `JSON.parse` (and a channel frame's
    /// decoding) reads it.
    pub(crate) fn read(text: &'a str) -> Result<Self, serde_json::Error> {
        let Entries(message) = serde_json::from_str(text)?;
        let member = |name: &str| {
            message
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, raw)| *raw)
        };
        if member("id").is_some() {
            return Err(de::Error::custom("a request, not a notification"));
        }
        if member("jsonrpc").is_some_and(|version| !is_version_2(version)) {
            return Err(de::Error::custom("not a JSON-RPC 2.0 message"));
        }
        let Text(method) = serde_json::from_str(
            member("method")
                .ok_or_else(|| de::Error::missing_field("method"))?
                .get(),
        )
        .map_err(|err| de::Error::custom(format_args!("`method`: {err}")))?;
        let mut body = match member("params") {
            Some(params) => object(params, "params")?,
            None => Vec::new(),
        };
        let mut meta = match body.iter().position(|(key, _)| key == "_meta") {
            Some(at) => object(body.remove(at).1, "_meta")?,
            None => Vec::new(),
        };
        meta.retain(|(key, _)| key != SUBSCRIPTION_ID);
        Ok(Self { method, meta, body })
    }

    /// Its rendering, each entry's value copied as it came.
    pub(crate) fn rendering(&self) -> Rendering {
        Rendering::assemble(
            &self.method,
            self.meta.iter().map(raw),
            self.body.iter().map(raw),
        )
    }
}

/// The entries of the object `raw`, the member `name`; none for `null`, as
/// a parse into values reads it.
fn object<'a>(raw: &'a RawValue, name: &str) -> Result<Vec<Entry<'a>>, serde_json::Error> {
    if raw.get() == "null" {
        return Ok(Vec::new());
    }
    serde_json::from_str::<Entries>(raw.get())
        .map(|Entries(entries)| entries)
        .map_err(|err| de::Error::custom(format_args!("`{name}`: {err}")))
}

/// Whether `version` is the string `2.0`: compared as written, and read
/// only when it was written with escapes.
fn is_version_2(version: &RawValue) -> bool {
    version.get() == r#""2.0""#
        || serde_json::from_str::<Text>(version.get()).is_ok_and(|Text(text)| text == "2.0")
}

fn raw<'b>((key, value): &'b Entry<'_>) -> (&'b str, Json<'b>) {
    (key.as_ref(), Json::Raw(value.get()))
}

/// A string borrowed from the text unless it had escapes to undo.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Text<'a> {
            type Value = Cow<'a, str>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(text))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(text.to_owned()))
            }
        }
        deserializer
            .deserialize_str(Text(std::marker::PhantomData))
            .map(Self)
    }
}

/// An object's entries in the order they came, each key once.
#[derive(Default)]
struct Entries<'a>(Vec<Entry<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Object<'a> {
            type Value = Vec<Entry<'a>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries: Vec<Entry<'a>> = Vec::new();
                while let Some((Text(key), value)) = map.next_entry::<Text<'a>, &'a RawValue>()? {
                    entries.push((key, value));
                }
                Ok(last_of_each_key(entries))
            }
        }
        deserializer
            .deserialize_map(Object(std::marker::PhantomData))
            .map(Self)
    }
}

/// `entries` with a key given twice read as `JSON.parse` reads it: the last
/// value, in the first one's place.
fn last_of_each_key(mut entries: Vec<Entry<'_>>) -> Vec<Entry<'_>> {
    if entries.len() < 2 {
        return entries;
    }
    let mut by_key: Vec<usize> = (0..entries.len()).collect();
    // Stable: each key's places stay in the order they came.
    by_key.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
    let runs: Vec<&[usize]> = by_key
        .chunk_by(|&a, &b| entries[a].0 == entries[b].0)
        .collect();
    let mut kept = vec![true; entries.len()];
    for run in runs {
        if let [first, .., last] = *run {
            entries[first].1 = entries[last].1;
            run[1..].iter().for_each(|&later| kept[later] = false);
        }
    }
    let mut kept = kept.into_iter();
    entries.retain(|_| kept.next() == Some(true));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries<'a>(entries: &'a [Entry<'a>]) -> Vec<(&'a str, &'a str)> {
        entries
            .iter()
            .map(|(key, value)| (key.as_ref(), value.get()))
            .collect()
    }

    #[test]
    fn entries_keep_their_text_and_order_and_the_stamp_goes() {
        let text = r#"{"jsonrpc":"2.0","method":"x/y","params":{"z":12345678901234567890123,
            "_meta":{"io.modelcontextprotocol/subscriptionId":"s","trace":"\u00e9"},"a":[1.50]}}"#;
        let received = Received::read(text).unwrap();
        assert_eq!(received.method, "x/y");
        assert_eq!(entries(&received.meta), [("trace", r#""\u00e9""#)]);
        assert_eq!(
            entries(&received.body),
            [("z", "12345678901234567890123"), ("a", "[1.50]")]
        );
    }

    #[test]
    fn a_bare_notification_without_params_is_one() {
        let received = Received::read(r#"{"method":"notifications/tools/list_changed"}"#).unwrap();
        assert_eq!(received.method, "notifications/tools/list_changed");
        assert!(received.meta.is_empty() && received.body.is_empty());
    }

    #[test]
    fn a_version_written_with_escapes_is_still_2_0() {
        let received = Received::read(r#"{"jsonrpc":"\u0032.0","method":"m"}"#).unwrap();
        assert_eq!(received.method, "m");
    }

    #[test]
    fn a_null_params_or_meta_is_none() {
        let received = Received::read(r#"{"method":"m","params":null}"#).unwrap();
        assert!(received.meta.is_empty() && received.body.is_empty());
        let received = Received::read(r#"{"method":"m","params":{"_meta":null,"a":1}}"#).unwrap();
        assert!(received.meta.is_empty());
        assert_eq!(entries(&received.body), [("a", "1")]);
    }

    #[test]
    fn escaped_keys_and_methods_are_read() {
        let received = Received::read(r#"{"method":"x\/y","params":{"\u0061":1}}"#).unwrap();
        assert_eq!(received.method, "x/y");
        assert_eq!(entries(&received.body), [("a", "1")]);
    }

    #[test]
    fn a_key_twice_keeps_its_last_value_in_its_first_place() {
        let text = r#"{"method":"m","params":{"a":1,"b":2,"a":3,"c":4,"b":5,"a":6,
            "_meta":{"k":1,"k":[2]}}}"#;
        let received = Received::read(text).unwrap();
        assert_eq!(
            entries(&received.body),
            [("a", "6"), ("b", "5"), ("c", "4")]
        );
        assert_eq!(entries(&received.meta), [("k", "[2]")]);
        let received = Received::read(r#"{"method":"m","method":"n"}"#).unwrap();
        assert_eq!(received.method, "n");
    }

    #[test]
    fn what_is_no_notification_is_refused_with_why() {
        let refused = |text: &str| Received::read(text).err().unwrap().to_string();
        for (text, why) in [
            (r#"{"jsonrpc":"1.0","method":"m"}"#, "JSON-RPC 2.0"),
            (r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#, "a request"),
            (r#"{"jsonrpc":"2.0"}"#, "missing field `method`"),
            (r#"[1]"#, "an object"),
            (r#"{"method":"m","params":[1]}"#, "`params`: invalid type"),
            (r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#, "a request"),
            (
                r#"{"method":"m","params":{"_meta":1}}"#,
                "`_meta`: invalid type",
            ),
            (
                r#"{"method":1}"#,
                "`method`: invalid type: integer `1`, expected a string",
            ),
            (r#"{"jsonrpc":2,"method":"m"}"#, "JSON-RPC 2.0"),
            (r#"{"method":"m""#, "EOF"),
        ] {
            let error = refused(text);
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
