//! The client's side of one listen stream, transport-agnostic: the request
//! it sends, and the checks on what comes back (acknowledgement first, the
//! grant within the request, every notification stamped with our id and
//! granted, then a result or an error).

use rmcp::model::{ErrorData, RequestId};
use serde_json::{Map, Value, json};

use crate::error::{ProtocolError, SubscribeError};
use crate::item::End;
use crate::options::SubscribeOptions;
use mcp_subscriptions::Filter;
use mcp_subscriptions::{Event, EventKind};

/// The protocol revision the client speaks.
pub(super) const PROTOCOL_VERSION: &str = "2026-07-28";

const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// What a server sends to end a stream gracefully in the other dialect
/// (`Teardown::Cancelled` on the serving side), as a client sends to
/// cancel one.
pub(super) const CANCELLED: &str = "notifications/cancelled";

/// The `subscriptions/listen` request for `requested`, with `_meta`: the
/// protocol version, the client's info and capabilities.
pub(super) fn listen_request(
    id: &RequestId,
    requested: &Filter,
    options: &SubscribeOptions,
) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "subscriptions/listen",
        "params": {"_meta": meta(options), "notifications": requested},
    })
}

/// The `_meta` of every request: the protocol version, the client's info
/// and capabilities.
pub(super) fn meta(options: &SubscribeOptions) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": options.client_info,
        "io.modelcontextprotocol/clientCapabilities": options.client_capabilities,
    })
}

/// The `notifications/cancelled` that ends the stream of `id` on stdio.
pub(super) fn cancelled(id: &RequestId) -> Value {
    json!({"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": id}})
}

/// One message as it came: its JSON text, and that text parsed for the
/// checks. An event passes the text on, never rendered again.
#[derive(Debug)]
pub(super) struct Incoming {
    pub(super) text: String,
    pub(super) value: Value,
}

impl Incoming {
    /// Parses `text`, or says why it is no JSON.
    pub(super) fn parse(text: String) -> Result<Self, ProtocolError> {
        match serde_json::from_str(&text) {
            Ok(value) => Ok(Self { text, value }),
            Err(err) => Err(ProtocolError::InvalidJson(err.to_string())),
        }
    }
}

/// What one message of the stream meant.
#[derive(Debug)]
pub(super) enum Step {
    /// The acknowledgement, with the grant.
    Acknowledged(Filter),
    /// A notification for the application.
    Event(Event),
    /// The response that ends the stream.
    End(End),
    /// Nothing for this stream (a request from the server, a keep-alive).
    Skip,
}

/// The checks on one stream's messages, in order.
pub(super) struct Expect {
    id: Value,
    requested: Filter,
    granted: Option<Filter>,
}

impl Expect {
    pub(super) fn new(id: &RequestId, requested: &Filter) -> Self {
        Self {
            id: serde_json::to_value(id).expect("an id serializes"),
            requested: requested.clone(),
            granted: None,
        }
    }

    /// Reads one message's text.
    #[cfg(test)]
    fn text(&mut self, text: &str) -> Result<Step, ProtocolError> {
        self.message(Incoming::parse(text.to_owned())?)
    }

    /// Reads one message.
    pub(super) fn message(&mut self, message: Incoming) -> Result<Step, ProtocolError> {
        let Incoming { text, value } = message;
        let Value::Object(mut message) = value else {
            return Err(ProtocolError::InvalidMessage("not an object".into()));
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(ProtocolError::InvalidMessage(
                "no \"jsonrpc\": \"2.0\"".into(),
            ));
        }
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (method, message.contains_key("id")) {
            // A request from the server: not part of this stream.
            (Some(_), true) => Ok(Step::Skip),
            (Some(method), false) => {
                let params = match message.remove("params") {
                    Some(Value::Object(params)) => params,
                    None | Some(Value::Null) => Map::new(),
                    Some(_) => {
                        return Err(ProtocolError::InvalidMessage(format!(
                            "{method}: params is not an object"
                        )));
                    }
                };
                self.notification(method, params, &text)
            }
            (None, true) => self.response(&message),
            (None, false) => Err(ProtocolError::InvalidMessage(
                "neither a notification nor a response".into(),
            )),
        }
    }

    /// Checks a notification: `method` and `params` parsed from `text`.
    fn notification(
        &mut self,
        method: String,
        mut params: Map<String, Value>,
        text: &str,
    ) -> Result<Step, ProtocolError> {
        // The server's graceful end in the `notifications/cancelled`
        // dialect, stamped or not.
        if method == CANCELLED && params.get("requestId") == Some(&self.id) {
            return Ok(Step::End(End::Complete));
        }
        let stamp = take_stamp(&mut params);
        let Some(granted) = &self.granted else {
            if method != ACKNOWLEDGED {
                return Err(ProtocolError::BeforeAcknowledgement { what: method });
            }
            if stamp.as_ref() != Some(&self.id) {
                return Err(ProtocolError::WrongSubscriptionId { found: stamp });
            }
            let notifications = params
                .get("notifications")
                .ok_or_else(|| ProtocolError::InvalidAcknowledgement("no notifications".into()))?;
            let granted = Filter::from_notifications(notifications, usize::MAX)
                .map_err(|err| ProtocolError::InvalidAcknowledgement(err.to_string()))?;
            if granted.intersect(&self.requested) != granted {
                return Err(ProtocolError::GrantedMore { granted });
            }
            self.granted = Some(granted.clone());
            return Ok(Step::Acknowledged(granted));
        };
        if stamp.as_ref() != Some(&self.id) {
            return Err(ProtocolError::WrongSubscriptionId { found: stamp });
        }
        let event = Event::from_json(text, None)
            .map_err(|err| ProtocolError::InvalidMessage(format!("{method}: {err}")))?;
        if !granted_kind(granted, event.kind()) {
            return Err(ProtocolError::NotGranted {
                method: event.method().to_owned(),
            });
        }
        Ok(Step::Event(event))
    }

    fn response(&mut self, message: &Map<String, Value>) -> Result<Step, ProtocolError> {
        if message.get("id") != Some(&self.id) {
            return Err(ProtocolError::InvalidMessage(format!(
                "a response to another request {}",
                message.get("id").unwrap_or(&Value::Null)
            )));
        }
        if let Some(error) = message.get("error") {
            let error: ErrorData = serde_json::from_value(error.clone())
                .map_err(|err| ProtocolError::InvalidMessage(format!("error: {err}")))?;
            return Ok(Step::End(End::failed(error)));
        }
        if !message.contains_key("result") {
            return Err(ProtocolError::InvalidMessage(
                "a response without result or error".into(),
            ));
        }
        if self.granted.is_none() {
            return Err(ProtocolError::BeforeAcknowledgement {
                what: "a result".into(),
            });
        }
        Ok(Step::End(End::Complete))
    }
}

/// Removes the subscription id from `_meta` (and `_meta` when nothing else
/// is left in it).
fn take_stamp(params: &mut Map<String, Value>) -> Option<Value> {
    let Some(Value::Object(meta)) = params.get_mut("_meta") else {
        return None;
    };
    let stamp = meta.remove(mcp_subscriptions::SubscriptionId::META_KEY);
    if meta.is_empty() {
        params.remove("_meta");
    }
    stamp
}

/// Whether a core kind is granted; extension kinds are the extension's to
/// route and pass.
pub(super) fn granted_kind(granted: &Filter, kind: &EventKind) -> bool {
    match kind {
        EventKind::Extension { .. } => granted.is_everything() || kind.travels_on_listen_streams(),
        core => granted.matches(core),
    }
}

/// Refuses a URL whose scheme is not one of `schemes` before anything is
/// sent: a transport's own "unsupported scheme" would read as a server out
/// of reach, to be tried again forever.
pub(super) fn check_scheme(url: &str, schemes: &[&str]) -> Result<(), SubscribeError> {
    match reqwest::Url::parse(url) {
        Ok(parsed) if schemes.contains(&parsed.scheme()) => Ok(()),
        Ok(parsed) => Err(SubscribeError::Invalid(match parsed.scheme() {
            "https" => "https:// needs the `tls` feature of mcp-subscriptions".to_owned(),
            other => format!(
                "{other}:// is not served here; {}:// is",
                schemes.join("://, ")
            ),
        })),
        Err(err) => Err(SubscribeError::Invalid(format!("{url}: {err}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_subscriptions::ListKind;

    fn expect() -> Expect {
        Expect::new(
            &RequestId::String("l-1".into()),
            &Filter::new()
                .with_tools_list_changed()
                .with_resource("file:///a"),
        )
    }

    const ACK: &str = r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"},"notifications":{"toolsListChanged":true}}}"#;

    #[test]
    fn a_stream_in_order() {
        let mut expect = expect();
        let Step::Acknowledged(granted) = expect.text(ACK).unwrap() else {
            panic!()
        };
        assert_eq!(granted, Filter::new().with_tools_list_changed());
        let Step::Event(event) = expect
            .text(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"}}}"#)
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(event.kind(), &EventKind::ListChanged(ListKind::Tools));
        assert!(event.is_idempotent(), "the stamp is gone");
        assert!(matches!(
            expect
                .text(r#"{"jsonrpc":"2.0","id":"l-1","result":{"resultType":"complete"}}"#)
                .unwrap(),
            Step::End(End::Complete)
        ));
    }

    #[test]
    fn an_event_passes_on_the_json_it_came_as() {
        let mut expect = expect();
        expect.text(ACK).unwrap();
        let Step::Event(event) = expect
            .text(r#"{"jsonrpc":"2.0","method":"x/jobs","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1","trace":"\u00e9"},"n":123456789012345678901234567890,"f":1.50}}"#)
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            event.to_plain_json(),
            r#"{"jsonrpc":"2.0","method":"x/jobs","params":{"_meta":{"trace":"\u00e9"},"n":123456789012345678901234567890,"f":1.50}}"#,
            "numbers and escapes unchanged, the stamp gone"
        );
        let Ok(Step::Event(twice)) = expect.text(r#"{"jsonrpc":"2.0","method":"x/jobs","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"},"n":1,"n":2}}"#) else {
            panic!()
        };
        assert_eq!(
            twice.to_plain_json(),
            r#"{"jsonrpc":"2.0","method":"x/jobs","params":{"n":2}}"#,
            "a key twice keeps its last value, as the checks read it"
        );
    }

    #[test]
    fn a_server_cancelling_the_listen_request_ends_it_gracefully() {
        let mut expect = expect();
        expect.text(ACK).unwrap();
        // Another request's cancel is not this stream's end.
        assert!(matches!(
            expect.text(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l-2"}}"#),
            Err(ProtocolError::WrongSubscriptionId { .. })
        ));
        for stamped in [
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l-1"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"},"requestId":"l-1","reason":"server shutting down"}}"#,
        ] {
            assert!(matches!(
                expect.text(stamped).unwrap(),
                Step::End(End::Complete)
            ));
        }
    }

    #[test]
    fn each_violation_is_named() {
        let mut fresh = expect();
        assert!(matches!(
            fresh.text(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"}}}"#),
            Err(ProtocolError::BeforeAcknowledgement { .. })
        ));
        assert!(matches!(
            expect().text("garbage"),
            Err(ProtocolError::InvalidJson(_))
        ));
        assert!(matches!(
            expect().text(&ACK.replace("\"toolsListChanged\":true", "\"promptsListChanged\":true")),
            Err(ProtocolError::GrantedMore { .. })
        ));
        assert!(matches!(
            expect().text(&ACK.replace("l-1", "l-2")),
            Err(ProtocolError::WrongSubscriptionId { .. })
        ));
        let mut acked = expect();
        acked.text(ACK).unwrap();
        assert!(matches!(
            acked.text(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}"#),
            Err(ProtocolError::WrongSubscriptionId { found: Some(Value::Number(_)) })
        ));
        assert!(matches!(
            acked.text(r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"}}}"#),
            Err(ProtocolError::NotGranted { .. })
        ));
        let Step::End(End::Failed(error)) = acked
            .text(r#"{"jsonrpc":"2.0","id":"l-1","error":{"code":-32000,"message":"Subscription overflow","data":{"reason":"overflow","dropped":3}}}"#)
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(error.code.0, -32000);
    }
}
