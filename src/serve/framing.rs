//! The JSON-RPC messages a listen stream frames around its events, written
//! in wire order (`jsonrpc`, then `id` or `method`, then the body) so their
//! bytes are predictable and golden-testable.

use rmcp::model::{ErrorData, Implementation};
use serde::Serialize;

use crate::filter::Filter;

const SERVER_INFO_META_KEY: &str = "io.modelcontextprotocol/serverInfo";

fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("protocol values serialize to JSON")
}

/// `notifications/subscriptions/acknowledged` carrying the granted filter.
pub(crate) fn acknowledgement(id_json: &str, granted: &Filter) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{"_meta":{{"io.modelcontextprotocol/subscriptionId":{id_json}}},"notifications":{}}}}}"#,
        json(granted)
    )
    .into_bytes()
}

/// The graceful end: a `complete` result to the listen request.
pub(crate) fn completion(id_json: &str, server_info: &Implementation) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id_json},"result":{{"resultType":"complete","_meta":{{"io.modelcontextprotocol/subscriptionId":{id_json},"{SERVER_INFO_META_KEY}":{}}}}}}}"#,
        json(server_info)
    )
    .into_bytes()
}

/// The failed end, or a refusal: an error response to the listen request.
pub(crate) fn error_response(id_json: &str, error: &ErrorData) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id_json},"error":{}}}"#,
        json(error)
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use rmcp::model::ErrorCode;
    use serde_json::json;

    use super::*;

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn acknowledgement_golden() {
        let granted = Filter::new()
            .with_tools_list_changed()
            .with_resource("file:///project/config.json");
        assert_eq!(
            text(acknowledgement(r#""listen-1""#, &granted)),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///project/config.json"]}}}"#
        );
        assert_eq!(
            text(acknowledgement("7", &Filter::new())),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{}}}"#
        );
    }

    #[test]
    fn completion_golden() {
        let info = Implementation::new("demo", "1.0.0");
        let bytes = text(completion(r#""listen-1""#, &info));
        assert!(
            bytes.starts_with(
                r#"{"jsonrpc":"2.0","id":"listen-1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1","io.modelcontextprotocol/serverInfo":{"#
            ),
            "{bytes}"
        );
        let value: serde_json::Value = serde_json::from_str(&bytes).unwrap();
        assert_eq!(
            value["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "demo"
        );
    }

    #[test]
    fn error_golden() {
        let error = ErrorData::new(
            ErrorCode(-32000),
            "Subscription overflow",
            Some(json!({"reason": "overflow", "dropped": 3})),
        );
        assert_eq!(
            text(error_response("2", &error)),
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Subscription overflow","data":{"dropped":3,"reason":"overflow"}}}"#
        );
    }
}
