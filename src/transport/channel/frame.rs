//! The frames of the Diverge notification channel.
//!
//! Each WebSocket binary message is one frame: a tag byte, then JSON.
//!
//! | tag | body | meaning |
//! | --- | --- | --- |
//! | `0` | a server notification (`{"method":…,"params":…}`) | one notification, of any kind, including kinds this crate does not know |
//! | `1` | a JSON-RPC error object (`{"code":…,"message":…,"data":…}`) | the last frame: the channel failed and closes after it |
//!
//! The ask that opens a channel carries an empty payload; a server ignores
//! whatever bytes it finds there, so a newer peer may add some.

use rmcp::model::{ErrorData, ServerNotification};
use serde_json::Value;

use crate::error::FrameError;
use crate::event::Event;

/// The tag of a notification frame.
pub const NOTIFICATION_TAG: u8 = 0;
/// The tag of the error frame that ends a channel.
pub const ERROR_TAG: u8 = 1;

/// One frame of a notification channel.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Frame {
    /// A notification; kinds rmcp does not know arrive as
    /// `ServerNotification::CustomNotification`, unchanged.
    Notification(ServerNotification),
    /// The channel failed; nothing follows.
    Error(ErrorData),
}

impl Frame {
    /// Appends the frame's bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Notification(notification) => {
                out.push(NOTIFICATION_TAG);
                write_json(notification, out);
            }
            Self::Error(error) => Self::encode_error(error, out),
        }
    }

    /// Appends a notification frame for a published event to `out`, from
    /// the event's rendering: nothing is serialized again.
    pub fn encode_event(event: &Event, out: &mut Vec<u8>) {
        out.push(NOTIFICATION_TAG);
        event.write_notification(out);
    }

    /// Appends an error frame to `out`.
    pub fn encode_error(error: &ErrorData, out: &mut Vec<u8>) {
        out.push(ERROR_TAG);
        write_json(error, out);
    }

    /// Decodes one frame.
    ///
    /// # Errors
    ///
    /// [`FrameError::Empty`] for no bytes at all, [`FrameError::UnknownTag`]
    /// for a tag other than `0` or `1`, [`FrameError::InvalidBody`] when the
    /// body is not valid JSON for its tag.
    ///
    /// A name repeated within one object keeps its last value, as
    /// JavaScript's `JSON.parse` does. The body is read as a JSON value
    /// first so that this holds for every kind: rmcp's typed notifications
    /// refuse a repeated field and would fall back to a custom
    /// notification, which then reads as the typed kind after one encode.
    pub fn decode(bytes: &[u8]) -> Result<Self, FrameError> {
        let (&tag, body) = bytes.split_first().ok_or(FrameError::Empty)?;
        let invalid = |source| FrameError::InvalidBody { tag, source };
        let value = || serde_json::from_slice::<Value>(body).map_err(invalid);
        match tag {
            NOTIFICATION_TAG => serde_json::from_value(value()?)
                .map(Self::Notification)
                .map_err(invalid),
            ERROR_TAG => serde_json::from_value(value()?)
                .map(Self::Error)
                .map_err(invalid),
            _ => Err(FrameError::UnknownTag(tag)),
        }
    }
}

fn write_json<T: serde::Serialize>(value: &T, out: &mut Vec<u8>) {
    serde_json::to_writer(out, value).expect("protocol values serialize to JSON");
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rmcp::model::{CustomNotification, ErrorCode};
    use serde_json::{Value, json};

    use super::*;

    fn frame_of(event: &Event) -> Vec<u8> {
        let mut out = Vec::new();
        Frame::encode_event(event, &mut out);
        out
    }

    fn golden(tag: u8, json: &str) -> Vec<u8> {
        let mut bytes = vec![tag];
        bytes.extend_from_slice(json.as_bytes());
        bytes
    }

    /// Decodes, re-encodes, and checks the bytes came back unchanged.
    fn round_trips(bytes: &[u8]) -> Frame {
        let frame = Frame::decode(bytes).unwrap();
        let mut again = Vec::new();
        frame.encode(&mut again);
        assert_eq!(
            String::from_utf8_lossy(&again),
            String::from_utf8_lossy(bytes),
            "decode then encode is the identity on the wire"
        );
        frame
    }

    #[test]
    fn core_kinds_golden_both_directions() {
        let cases = [
            (
                Event::tools_list_changed(),
                r#"{"method":"notifications/tools/list_changed"}"#,
            ),
            (
                Event::prompts_list_changed(),
                r#"{"method":"notifications/prompts/list_changed"}"#,
            ),
            (
                Event::resources_list_changed(),
                r#"{"method":"notifications/resources/list_changed"}"#,
            ),
            (
                Event::resource_updated("file:///a"),
                r#"{"method":"notifications/resources/updated","params":{"uri":"file:///a"}}"#,
            ),
        ];
        for (event, json) in cases {
            let bytes = frame_of(&event);
            assert_eq!(bytes, golden(0, json));
            let Frame::Notification(notification) = round_trips(&bytes) else {
                panic!("a notification frame");
            };
            let expected_variant = match event.kind() {
                crate::EventKind::ListChanged(crate::ListKind::Tools) => {
                    matches!(
                        notification,
                        ServerNotification::ToolListChangedNotification(_)
                    )
                }
                crate::EventKind::ListChanged(crate::ListKind::Prompts) => {
                    matches!(
                        notification,
                        ServerNotification::PromptListChangedNotification(_)
                    )
                }
                crate::EventKind::ListChanged(crate::ListKind::Resources) => {
                    matches!(
                        notification,
                        ServerNotification::ResourceListChangedNotification(_)
                    )
                }
                _ => matches!(
                    notification,
                    ServerNotification::ResourceUpdatedNotification(_)
                ),
            };
            assert!(expected_variant, "{json} decodes to its own kind");
        }
    }

    #[test]
    fn extension_and_custom_notifications_pass_through_unchanged() {
        let status = json!({"taskId": "t1", "status": "working", "x-extra": [1, 2]});
        let extension = Event::extension(
            "notifications/x-tasks-progress",
            status.as_object().unwrap().clone(),
            Some(crate::Selector::new("taskIds", Some("t1".into()))),
        );
        let bytes = frame_of(&extension);
        assert_eq!(
            bytes,
            golden(
                0,
                r#"{"method":"notifications/x-tasks-progress","params":{"status":"working","taskId":"t1","x-extra":[1,2]}}"#
            )
        );
        assert!(matches!(
            round_trips(&bytes),
            Frame::Notification(ServerNotification::CustomNotification(_))
        ));

        let custom = CustomNotification::new("vendor/ping", Some(json!({"n": 1})));
        let mut bytes = Vec::new();
        Frame::Notification(ServerNotification::CustomNotification(custom)).encode(&mut bytes);
        assert_eq!(
            bytes,
            golden(0, r#"{"method":"vendor/ping","params":{"n":1}}"#)
        );
        round_trips(&bytes);
    }

    #[test]
    fn error_frame_golden_both_directions() {
        let error = ErrorData::new(
            ErrorCode(-32000),
            "Subscription overflow",
            Some(json!({"reason": "overflow", "dropped": 3})),
        );
        let mut bytes = Vec::new();
        Frame::encode_error(&error, &mut bytes);
        assert_eq!(
            bytes,
            golden(
                1,
                r#"{"code":-32000,"message":"Subscription overflow","data":{"dropped":3,"reason":"overflow"}}"#
            )
        );
        let Frame::Error(decoded) = round_trips(&bytes) else {
            panic!("an error frame")
        };
        assert_eq!(decoded, error);
    }

    #[test]
    fn null_error_data_reads_as_none() {
        let Frame::Error(error) =
            Frame::decode(b"\x01{\"code\":1,\"message\":\"m\",\"data\":null}").unwrap()
        else {
            panic!("an error frame")
        };
        assert_eq!(error.data, None);
    }

    #[test]
    fn a_repeated_name_keeps_its_last_value_and_the_kind_is_stable() {
        // Found by the fuzzer: rmcp's typed progress notification refuses
        // the repeated "progress", so a direct decode made it custom.
        let bytes = golden(
            0,
            r#"{"method":"notifications/progress","params":{"progressToken":1,"progress":0.25,"extra":1,"progress":0.5}}"#,
        );
        let Frame::Notification(ServerNotification::ProgressNotification(progress)) =
            Frame::decode(&bytes).unwrap()
        else {
            panic!("a progress notification")
        };
        assert_eq!(progress.params.progress, 0.5);
        let mut once = Vec::new();
        Frame::Notification(ServerNotification::ProgressNotification(progress)).encode(&mut once);
        round_trips(&once);
    }

    #[test]
    fn decoding_fails_in_exactly_three_ways() {
        assert!(matches!(Frame::decode(b""), Err(FrameError::Empty)));
        assert!(matches!(
            Frame::decode(b"\x07{}"),
            Err(FrameError::UnknownTag(7))
        ));
        for bad in [&b"\x00not json"[..], b"\x01{\"code\":\"x\"}", b"\x00"] {
            let err = Frame::decode(bad).unwrap_err();
            assert!(matches!(err, FrameError::InvalidBody { .. }), "{err}");
        }
        assert_eq!(
            FrameError::UnknownTag(7).to_string(),
            "unknown channel frame tag 7"
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z\\\\\"é ]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn encode_then_decode_is_the_identity(
            method in "vendor/[a-z]{1,8}",
            params in proptest::option::of(proptest::collection::btree_map("[a-z]{1,4}", json_value(), 0..4)),
            code in any::<i32>(),
            message in ".{0,12}",
            // `"data": null` and no data are one thing on the wire (rmcp
            // reads both as `None`), so a top-level null is not generated.
            data in proptest::option::of(json_value().prop_filter("not null", |v| !v.is_null())),
        ) {
            let params = params.map(|m| Value::Object(m.into_iter().collect()));
            let notification = ServerNotification::CustomNotification(CustomNotification::new(method, params));
            let mut bytes = Vec::new();
            Frame::Notification(notification.clone()).encode(&mut bytes);
            let Frame::Notification(decoded) = Frame::decode(&bytes).unwrap() else { panic!() };
            prop_assert_eq!(serde_json::to_value(decoded).unwrap(), serde_json::to_value(notification).unwrap());

            let error = ErrorData::new(ErrorCode(code), message, data);
            let mut bytes = Vec::new();
            Frame::Error(error.clone()).encode(&mut bytes);
            let Frame::Error(decoded) = Frame::decode(&bytes).unwrap() else { panic!() };
            prop_assert_eq!(decoded, error);
        }
    }
}
