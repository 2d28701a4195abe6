//! Telling a message a client sent apart from garbage, before anything
//! looks at what it asks: the one place both the stdio and the HTTP
//! transports decide between `-32700`, `-32600` and "a JSON-RPC message".

use serde_json::Value;

use crate::error::RequestError;

/// A message a client sent, valid as JSON-RPC 2.0 as MCP uses it (no
/// batches, no null ids).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A request: it has a string or integer `id` and a `method`.
    Request(Value),
    /// A notification: a `method` and no `id`.
    Notification(Value),
    /// A response to a request the server sent: an `id` and exactly one of
    /// `result` or `error`.
    Response(Value),
}

impl Incoming {
    /// The message itself.
    pub fn message(&self) -> &Value {
        match self {
            Self::Request(message) | Self::Notification(message) | Self::Response(message) => {
                message
            }
        }
    }

    /// The message, owned.
    pub fn into_message(self) -> Value {
        match self {
            Self::Request(message) | Self::Notification(message) | Self::Response(message) => {
                message
            }
        }
    }
}

/// Classifies the bytes of one message.
///
/// # Errors
///
/// [`RequestError::NotJson`] for bytes that are not one JSON value (empty,
/// truncated, trailing garbage); [`RequestError::InvalidMessage`] for JSON
/// that is not a JSON-RPC 2.0 message: not an object (a batch array
/// included), a `jsonrpc` member other than `"2.0"`, a `method` that is not
/// a string, an `id` that is not a string or an integer, `params` that are
/// not an object, or a response without exactly one of `result` and
/// `error`.
///
/// ```
/// use mcp_subscriptions::http::{Incoming, classify};
///
/// let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
/// assert!(matches!(classify(request), Ok(Incoming::Request(_))));
/// assert_eq!(classify(b"{").unwrap_err().to_error_data().code.0, -32700);
/// let null_id = br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#;
/// assert_eq!(classify(null_id).unwrap_err().to_error_data().code.0, -32600);
/// ```
pub fn classify(bytes: &[u8]) -> Result<Incoming, RequestError> {
    let message: Value = serde_json::from_slice(bytes).map_err(|_| RequestError::NotJson)?;
    let invalid = |reason| Err(RequestError::InvalidMessage { reason });
    let Some(object) = message.as_object() else {
        return match message {
            Value::Array(_) => invalid("batches are not supported"),
            _ => invalid("a message is a JSON object"),
        };
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(r#"the jsonrpc member must be "2.0""#);
    }
    let id = object.get("id");
    if id.is_some_and(|id| !is_id(id)) {
        return invalid("an id must be a string or an integer");
    }
    match object.get("method") {
        Some(Value::String(_)) => {
            if object
                .get("params")
                .is_some_and(|params| !params.is_object())
            {
                return invalid("params must be an object");
            }
            Ok(match id {
                Some(_) => Incoming::Request(message),
                None => Incoming::Notification(message),
            })
        }
        Some(_) => invalid("the method must be a string"),
        None if id.is_none() => invalid("a message needs a method, or an id and a result"),
        None => match (object.get("result"), object.get("error")) {
            (Some(_), None) | (None, Some(_)) => Ok(Incoming::Response(message)),
            _ => invalid("a response has exactly one of result and error"),
        },
    }
}

/// The id to answer a refused message with: its own when it is a valid
/// one, `null` otherwise.
pub(crate) fn reply_id(bytes: &[u8]) -> Value {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|message| message.get("id").cloned())
        .filter(is_id)
        .unwrap_or(Value::Null)
}

fn is_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(bytes: &str) -> i32 {
        classify(bytes.as_bytes())
            .unwrap_err()
            .to_error_data()
            .code
            .0
    }

    #[test]
    fn garbage_is_a_parse_error() {
        for bytes in [
            "",
            "   ",
            "nope",
            r#"{"jsonrpc":"2.0","id":1,"#,
            "{} {}",
            "\u{feff}{}",
        ] {
            assert_eq!(code(bytes), -32700, "{bytes:?}");
        }
    }

    #[test]
    fn json_that_is_not_json_rpc_is_an_invalid_request() {
        for bytes in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            r#""a string""#,
            r#"{"id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
            r#"{"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#,
        ] {
            assert_eq!(code(bytes), -32600, "{bytes}");
        }
    }

    #[test]
    fn requests_notifications_and_responses_pass() {
        let kind = |bytes: &str| classify(bytes.as_bytes()).unwrap();
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":"a","method":"m","params":{}}"#),
            Incoming::Request(_)
        ));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#),
            Incoming::Notification(_)
        ));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            Incoming::Response(_)
        ));
    }

    #[test]
    fn a_refusal_answers_with_the_id_only_when_it_is_one() {
        assert_eq!(reply_id(br#"{"id":3,"method":4}"#), Value::from(3));
        assert_eq!(reply_id(br#"{"id":{},"method":"m"}"#), Value::Null);
        assert_eq!(reply_id(b"nope"), Value::Null);
    }
}
