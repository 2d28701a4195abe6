//! Any other request on the connection a subscription uses (`server/discover`,
//! `tools/list`, `resources/read`): one trait for Streamable HTTP and stdio,
//! so a catalog fetches over the very connection, headers and credentials
//! its listen stream uses.

use std::future::Future;

use rmcp::model::{ErrorData, RequestId};
use serde_json::{Map, Value, json};

use crate::error::{ProtocolError, SubscribeError};
use crate::options::SubscribeOptions;
use crate::protocol::meta;

/// Sends one request and waits for its response.
pub(super) trait Request: Send + Sync + 'static {
    /// The `result` of `method` with `params`, or the JSON-RPC error as
    /// [`SubscribeError::Refused`]; sent with the options' `_meta` and
    /// headers.
    fn request(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &SubscribeOptions,
    ) -> impl Future<Output = Result<Value, SubscribeError>> + Send;
}

/// The request message: `params` with the options' `_meta` added (the
/// protocol version and the client, as every 2026-07-28 request names
/// them); what `params` already has in `_meta` is kept.
pub(super) fn message(
    id: &RequestId,
    method: &str,
    mut params: Map<String, Value>,
    options: &SubscribeOptions,
) -> Value {
    let Value::Object(defaults) = meta(options) else {
        unreachable!("the _meta is an object")
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        for (key, value) in defaults {
            meta.entry(key).or_insert(value);
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A response's `result`, or its `error` as a refusal.
pub(super) fn outcome(mut response: Value) -> Result<Value, SubscribeError> {
    match response.get_mut("error").map(Value::take) {
        Some(error) => Err(SubscribeError::Refused(
            serde_json::from_value::<ErrorData>(error)
                .map_err(|err| ProtocolError::InvalidMessage(format!("error: {err}")))?,
        )),
        None => match response.get_mut("result").map(Value::take) {
            Some(result) => Ok(result),
            None => Err(
                ProtocolError::InvalidMessage("a response without result or error".into()).into(),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meta_names_the_client_and_keeps_what_the_caller_put_there() {
        let mut params = Map::new();
        params.insert("cursor".into(), json!("c"));
        params.insert("_meta".into(), json!({"progressToken": 1}));
        let sent = message(
            &RequestId::Number(3),
            "tools/list",
            params,
            &SubscribeOptions::default(),
        );
        assert_eq!(sent["params"]["cursor"], "c");
        assert_eq!(sent["params"]["_meta"]["progressToken"], 1);
        assert_eq!(
            sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }

    #[test]
    fn an_error_response_is_a_refusal_and_a_bare_one_a_protocol_error() {
        let refused = outcome(json!({"id": 1, "error": {"code": -32601, "message": "no"}}));
        assert!(matches!(refused, Err(SubscribeError::Refused(e)) if e.code.0 == -32601));
        assert_eq!(outcome(json!({"id": 1, "result": 5})).unwrap(), 5);
        assert!(matches!(
            outcome(json!({"id": 1})),
            Err(SubscribeError::Protocol(_))
        ));
    }
}
