//! The JSON-RPC messages a listen stream frames around its events, written
//! in wire order (`jsonrpc`, then `id` or `method`, then the body) so their
//! bytes are predictable and golden-testable.

use rmcp::model::{ErrorData, Implementation};
use serde::Serialize;

use super::meta::{SERVER_INFO, SUBSCRIPTION_ID};

fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("protocol values serialize to JSON")
}

/// `notifications/subscriptions/acknowledged` carrying the granted filter
/// (anything that serializes to its `notifications` object).
pub(crate) fn acknowledgement(id_json: &str, granted: &impl Serialize) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{"_meta":{{"{SUBSCRIPTION_ID}":{id_json}}},"notifications":{}}}}}"#,
        json(granted)
    )
    .into_bytes()
}

/// The graceful end: a `complete` result to the listen request.
pub(crate) fn completion(id_json: &str, server_info: &Implementation) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id_json},"result":{{"resultType":"complete","_meta":{{"{SUBSCRIPTION_ID}":{id_json},"{SERVER_INFO}":{}}}}}}}"#,
        json(server_info)
    )
    .into_bytes()
}

/// The graceful end in the `notifications/cancelled` dialect: the server
/// cancels the listen request, naming it (and stamped, as every message
/// of the stream is).
pub(crate) fn cancellation(id_json: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"_meta":{{"{SUBSCRIPTION_ID}":{id_json}}},"requestId":{id_json},"reason":"server shutting down"}}}}"#
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

/// An error response to a request whose raw JSON id is `id`: it may be
/// `null`, or an id rmcp would not accept. (Only the transports that read
/// raw JSON-RPC need it.)
#[cfg(rmcp_session)]
pub(crate) fn error_reply(id: &serde_json::Value, error: &ErrorData) -> Vec<u8> {
    error_response(&json(id), error)
}

#[cfg(test)]
mod tests {
    use rmcp::model::ErrorCode;
    use serde_json::{Value, json};

    use super::*;
    use crate::wire::golden;

    fn granted() -> crate::Filter {
        crate::Filter::new()
            .with_tools_list_changed()
            .with_resource("file:///project/config.json")
    }

    #[test]
    fn acknowledgement_golden() {
        golden::check(
            "acknowledgement",
            &acknowledgement(r#""listen-1""#, &granted()),
        );
        golden::check(
            "acknowledgement.empty",
            &acknowledgement("7", &crate::Filter::new()),
        );
    }

    #[test]
    fn completion_golden() {
        let info = Implementation::new("demo", "1.0.0");
        let bytes = completion(r#""listen-1""#, &info);
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            value["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "demo"
        );
        golden::check("completion", &bytes);
    }

    #[test]
    fn cancellation_golden() {
        let bytes = cancellation(r#""listen-1""#);
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(value["params"]["requestId"], "listen-1");
        golden::check("cancellation", &bytes);
        golden::check("cancellation.number", &cancellation("7"));
    }

    #[test]
    fn error_golden() {
        let error = ErrorData::new(
            ErrorCode(-32000),
            "Subscription overflow",
            Some(json!({"reason": "overflow", "dropped": 3})),
        );
        golden::check("error", &error_response("2", &error));
    }

    #[cfg(rmcp_session)]
    #[test]
    fn error_reply_golden() {
        let invalid = ErrorData::invalid_request("not a request", None);
        golden::check("error.null_id", &error_reply(&Value::Null, &invalid));
    }
}
