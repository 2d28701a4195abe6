//! What travels on the bus: a versioned envelope around one event, or a
//! heartbeat (the channel each goes to is `channels.rs`'s).
//!
//! ```text
//! {"v":1,"origin":"9f..","seq":7,"order":12,"type":"event",
//!  "selector":{"field":"taskIds","key":"t1"},
//!  "succession":{"key":"t1","version":"1764583205000000000","terminal":false},
//!  "notification":{"method":"notifications/tasks","params":{...}}}
//! {"v":1,"origin":"9f..","seq":8,"order":13,"type":"heartbeat","dropped":0}
//! {"v":1,"origin":"9f..","seq":9,"order":14,"type":"scoped",
//!  "audience":{"principals":["alice"],"labels":["tenant:a"]},
//!  "notification":{"method":"notifications/tools/list_changed","params":{}}}
//! {"v":1,"origin":"9f..","seq":10,"order":15,"type":"revoke",
//!  "audience":{"principals":["alice"]}}
//! {"v":1,"origin":"9f..","seq":11,"order":16,"type":"revoke",
//!  "audience":{"everyone":true}}
//! {"v":1,"origin":"9f..","seq":12,"order":17,"type":"resend"}
//! {"v":1,"origin":"9f..","seq":13,"order":18,"type":"goodbye"}
//! ```
//!
//! The notification is the event's own rendering, spliced in as it is;
//! the receiver builds one [`Event`] from it, so each replica renders an
//! event once. The key an event is routed by (its URI, or the selector's
//! key) travels inside the notification or the selector, so a receiver
//! matches it exactly whatever channel it came on. `seq` counts an
//! origin's messages on the catalog channel (a gap there means lost
//! messages); `order` counts its messages on every channel, so a receiver
//! can put what it read on several channels back in the origin's order;
//! `dropped` is how many events the origin's outbound queue has dropped
//! since it started (a rise means lost messages too). A receiver reads a
//! missing `order` as 0.
//!
//! # Audiences
//!
//! An event for an [`Audience`] other than everyone travels as type
//! `scoped`, with the principals and labels it names (never listener ids:
//! those are the publishing hub's), and each receiver delivers it to its
//! own members of the audience alone. A revocation travels as type
//! `revoke` on the catalog channel (a revocation of everyone as
//! `"everyone":true`). Both types were added to version 1:
//! a replica that predates them ignores a message of a type it does not
//! know, so it never delivers a scoped event to anyone (it cannot tell who
//! may see it) and does not revoke; a scoped event or a revocation on the
//! catalog channel leaves a gap in the `seq` it reads, and that gap resyncs
//! its listeners as a lost message would.
//!
//! # Goodbye
//!
//! A replica that stops gracefully sends what it still holds, then a
//! `goodbye` on the catalog channel, its last message: its peers drop it
//! with nothing owed, where its silence would have resynced them.
//!
//! # Resend
//!
//! A replica that resyncs its listeners sends a `resend` on the catalog
//! channel: each other replica sends again the latest events it keeps for
//! that (each live task's latest status), on their own channels, since a
//! resync's list changes and URI updates do not bring a lost status back.
//!
//! Both types were added to version 1 too; a replica that predates them
//! reads the gap they leave, and resyncs as it would for a lost message.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::audience::{Audience, Label, Principal};
use crate::event::{Event, EventKind, Selector, Succession};

/// The envelope's version; a receiver ignores any other.
pub(crate) const VERSION: u32 = 1;

#[derive(Serialize)]
struct Header<'a> {
    v: u32,
    origin: &'a str,
    seq: u64,
    order: u64,
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dropped: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    selector: Option<WireSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    succession: Option<WireSuccession>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audience: Option<WireAudience>,
}

/// An audience by name. `everyone` is only ever set on a revocation (a
/// scoped event is never for everyone): a revocation of every stream.
#[derive(Serialize, Deserialize)]
struct WireAudience {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    everyone: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    principals: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    labels: Vec<String>,
}

impl WireAudience {
    fn of(audience: &Audience) -> Self {
        Self {
            everyone: audience.is_everyone(),
            principals: audience
                .principals()
                .iter()
                .map(|p| p.to_string())
                .collect(),
            labels: audience.labels().iter().map(|l| l.to_string()).collect(),
        }
    }

    fn into_audience(self) -> Audience {
        if self.everyone {
            return Audience::everyone();
        }
        let audience = self
            .principals
            .into_iter()
            .map(Principal::from)
            .fold(Audience::nobody(), Audience::with_principal);
        self.labels
            .into_iter()
            .map(Label::from)
            .fold(audience, Audience::with_label)
    }
}

#[derive(Serialize, Deserialize)]
struct WireSelector {
    field: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct WireSuccession {
    key: String,
    /// A string: an `i128` does not fit every JSON reader's numbers.
    version: String,
    terminal: bool,
}

#[derive(Deserialize)]
struct Received {
    v: u32,
    origin: String,
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    order: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    dropped: u64,
    #[serde(default)]
    selector: Option<WireSelector>,
    #[serde(default)]
    succession: Option<WireSuccession>,
    /// Read back as the JSON it came as, never rendered again.
    #[serde(default)]
    notification: Option<Box<RawValue>>,
    #[serde(default)]
    audience: Option<WireAudience>,
}

/// One message read from the bus.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub(crate) origin: String,
    pub(crate) stamp: Stamp,
    pub(crate) body: Body,
}

/// Where a message stands among its origin's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// The origin's catalog messages so far (0 on a key's channel).
    pub(crate) seq: u64,
    /// The origin's messages so far, on every channel.
    pub(crate) order: u64,
}

#[derive(Debug)]
pub(crate) enum Body {
    Event(Event),
    Heartbeat {
        dropped: u64,
    },
    /// End the streams of this audience.
    Revoke(Audience),
    /// The origin stopped gracefully: nothing it published is owed.
    Goodbye,
    /// The origin resynced: send again what `RelayOptions::with_resend`
    /// gives.
    Resend,
}

/// `event` from `origin`.
pub(crate) fn encode_event(origin: &str, stamp: Stamp, event: &Event) -> Vec<u8> {
    let selector = match event.kind() {
        EventKind::Extension {
            selector: Some(selector),
            ..
        } => Some(WireSelector {
            field: selector.field().to_owned(),
            key: selector.key().map(str::to_owned),
        }),
        _ => None,
    };
    let succession = event.succession().map(|s| WireSuccession {
        key: s.key().to_owned(),
        version: s.version().to_string(),
        terminal: s.is_terminal(),
    });
    let scoped = !event.audience().is_everyone();
    let header = Header {
        v: VERSION,
        origin,
        seq: stamp.seq,
        order: stamp.order,
        kind: if scoped { "scoped" } else { "event" },
        dropped: None,
        selector,
        succession,
        audience: scoped.then(|| WireAudience::of(event.audience())),
    };
    let mut out = serde_json::to_vec(&header).expect("a header serializes");
    // Splice the rendering in after the header's members: no second
    // serialization of the params.
    out.pop();
    out.extend_from_slice(br#","notification":"#);
    event.write_notification(&mut out);
    out.push(b'}');
    out
}

/// A heartbeat from `origin`.
pub(crate) fn encode_heartbeat(origin: &str, stamp: Stamp, dropped: u64) -> Vec<u8> {
    encode_bare(origin, stamp, "heartbeat", Some(dropped), None)
}

/// A revocation of `audience`'s streams from `origin`.
pub(crate) fn encode_revoke(origin: &str, stamp: Stamp, audience: &Audience) -> Vec<u8> {
    encode_bare(
        origin,
        stamp,
        "revoke",
        None,
        Some(WireAudience::of(audience)),
    )
}

/// `origin`'s last message: it stopped gracefully, after sending what it
/// held.
pub(crate) fn encode_goodbye(origin: &str, stamp: Stamp) -> Vec<u8> {
    encode_bare(origin, stamp, "goodbye", None, None)
}

/// `origin` resynced: each replica sends again the latest events it keeps
/// for that (see `RelayOptions::with_resend`).
pub(crate) fn encode_resend(origin: &str, stamp: Stamp) -> Vec<u8> {
    encode_bare(origin, stamp, "resend", None, None)
}

/// A message that carries no notification.
fn encode_bare(
    origin: &str,
    stamp: Stamp,
    kind: &str,
    dropped: Option<u64>,
    audience: Option<WireAudience>,
) -> Vec<u8> {
    let header = Header {
        v: VERSION,
        origin,
        seq: stamp.seq,
        order: stamp.order,
        kind,
        dropped,
        selector: None,
        succession: None,
        audience,
    };
    serde_json::to_vec(&header).expect("a header serializes")
}

/// Reads one message; `None` for anything this version does not know
/// (another version, another type, malformed JSON).
pub(crate) fn decode(bytes: &[u8]) -> Option<Envelope> {
    let received: Received = serde_json::from_slice(bytes).ok()?;
    if received.v != VERSION {
        return None;
    }
    let body = match received.kind.as_str() {
        "heartbeat" => Body::Heartbeat {
            dropped: received.dropped,
        },
        "revoke" => Body::Revoke(received.audience?.into_audience()),
        "goodbye" => Body::Goodbye,
        "resend" => Body::Resend,
        kind @ ("event" | "scoped") => {
            // A scoped event whose audience went missing reaches no one.
            let audience = match kind {
                "scoped" => received.audience?.into_audience(),
                _ => Audience::everyone(),
            };
            let notification = received.notification?;
            let selector = received.selector.map(|s| Selector::new(s.field, s.key));
            let mut event = Event::from_json(notification.get(), selector).ok()?;
            if let Some(s) = received.succession {
                let succession = Succession::new(s.key, s.version.parse().ok()?);
                event = event.with_succession(if s.terminal {
                    succession.terminal()
                } else {
                    succession
                });
            }
            Body::Event(event.with_audience(audience))
        }
        _ => return None,
    };
    Some(Envelope {
        origin: received.origin,
        stamp: Stamp {
            seq: received.seq,
            order: received.order,
        },
        body,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hub::InterestKey;
    use crate::relay::channels::route;

    fn event_of(bytes: &[u8]) -> Event {
        match decode(bytes).unwrap().body {
            Body::Event(event) => event,
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn core_events_round_trip_to_the_same_rendering() {
        for event in [
            Event::tools_list_changed(),
            Event::prompts_list_changed(),
            Event::resources_list_changed(),
            Event::resource_updated("file:///a \"quoted\""),
        ] {
            let stamp = Stamp { seq: 3, order: 5 };
            let bytes = encode_event("o1", stamp, &event);
            let envelope = decode(&bytes).unwrap();
            assert_eq!((envelope.origin.as_str(), envelope.stamp), ("o1", stamp));
            let back = event_of(&bytes);
            assert_eq!(back, event);
            assert_eq!(back.kind(), event.kind());
            assert_eq!(back.is_idempotent(), event.is_idempotent());
        }
    }

    #[test]
    fn params_cross_as_they_were_published() {
        let text = r#"{"method":"x/y","params":{"n":123456789012345678901234567890,"f":1.50}}"#;
        let event = Event::from_json(text, None).unwrap();
        let back = event_of(&encode_event("o", Stamp { seq: 0, order: 1 }, &event));
        assert_eq!(back.to_plain_json(), event.to_plain_json());
        assert!(
            back.to_plain_json()
                .contains(r#""n":123456789012345678901234567890,"f":1.50"#)
        );
    }

    #[test]
    fn extension_events_keep_their_selector_and_succession() {
        let params = json!({"taskId": "t1", "status": "working"});
        let event = Event::extension(
            "notifications/tasks",
            params.as_object().unwrap().clone(),
            Some(Selector::new("taskIds", Some("t1".into()))),
        )
        .with_succession(Succession::new("t1", -(1_i128 << 100)).terminal());
        let back = event_of(&encode_event("o", Stamp { seq: 0, order: 1 }, &event));
        assert_eq!(back, event);
        assert_eq!(back.succession(), event.succession());
        assert_eq!(
            route(&back),
            Some(InterestKey::Extension {
                field: "taskIds".into(),
                key: "t1".into()
            })
        );
    }

    #[test]
    fn scoped_events_and_revocations_carry_their_audience_by_name() {
        let audience = Audience::principal("alice").with_label("tenant:a");
        let event = Event::tools_list_changed().with_audience(audience.clone());
        let bytes = encode_event("o", Stamp { seq: 1, order: 1 }, &event);
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(
            text.contains(
                r#""type":"scoped","audience":{"principals":["alice"],"labels":["tenant:a"]}"#
            ),
            "{text}"
        );
        let back = event_of(&bytes);
        assert_eq!(back.audience(), &audience);
        assert_eq!(back, event);
        // An event for no one stays for no one.
        let nobody = Event::tools_list_changed().with_audience(Audience::nobody());
        let back = event_of(&encode_event("o", Stamp { seq: 2, order: 2 }, &nobody));
        assert_eq!(back.audience(), &Audience::nobody());

        let revoke = decode(&encode_revoke("o", Stamp { seq: 3, order: 3 }, &audience)).unwrap();
        assert!(matches!(revoke.body, Body::Revoke(a) if a == audience));
        for whom in [Audience::everyone(), Audience::nobody()] {
            let bytes = encode_revoke("o", Stamp { seq: 4, order: 4 }, &whom);
            let revoke = decode(&bytes).unwrap();
            assert!(matches!(revoke.body, Body::Revoke(a) if a == whom));
        }
        // A scoped event without its audience is dropped, never widened.
        let bare = br#"{"v":1,"origin":"o","type":"scoped","notification":{"method":"notifications/tools/list_changed"}}"#;
        assert!(decode(bare).is_none());
    }

    #[test]
    fn heartbeats_and_strangers() {
        let stamp = Stamp { seq: 9, order: 20 };
        let envelope = decode(&encode_heartbeat("o", stamp, 4)).unwrap();
        assert!(matches!(envelope.body, Body::Heartbeat { dropped: 4 }));
        assert_eq!(envelope.stamp, stamp);
        // A sender without `order` (before it was added) reads as 0.
        let older = decode(br#"{"v":1,"origin":"o","seq":2,"type":"heartbeat","dropped":0}"#);
        assert_eq!(older.unwrap().stamp, Stamp { seq: 2, order: 0 });
        assert!(decode(br#"{"v":2,"origin":"o","type":"event"}"#).is_none());
        assert!(decode(br#"{"v":1,"origin":"o","type":"gossip"}"#).is_none());
        let goodbye = decode(&encode_goodbye("o", stamp)).unwrap();
        assert!(matches!(goodbye.body, Body::Goodbye));
        assert_eq!(goodbye.stamp, stamp);
        let resend = decode(&encode_resend("o", stamp)).unwrap();
        assert!(matches!(resend.body, Body::Resend));
        assert!(decode(b"not json").is_none());
    }
}
