//! What a source learns about the stream being opened: who asks, over what,
//! and with which per-stream options.

use rmcp::model::{ClientCapabilities, Implementation, RequestId};
use serde_json::{Map, Value};

use crate::audience::{Label, Membership, Principal};
use crate::error::ListenParamsError;
use crate::queue::Settings;

/// The `_meta` key of the protocol version a request was made under.
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the client's declared capabilities.
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the client's name and version.
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The transport a stream is served over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// Newline-delimited JSON-RPC over a pipe.
    Stdio,
    /// Streamable HTTP: the listen POST answered with server-sent events.
    Http,
    /// The Diverge notification channel over a WebSocket.
    Channel,
}

impl TransportKind {
    /// Its name in logs and metrics labels: `stdio`, `http` or `channel`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Channel => "channel",
        }
    }
}

/// What a source learns about the stream being opened, and per-stream
/// options.
///
/// A transport fills in where the request came from ([`transport`],
/// [`principal`], and for HTTP the request's head); the serving layer fills
/// in what the request said about itself in its `_meta` ([`protocol_version`],
/// [`client_capabilities`], [`client_info`]). A source opened in process
/// gets what its caller gives it: [`OpenContext::default`] is an anonymous
/// in-process stream.
///
/// [`transport`]: Self::transport
/// [`principal`]: Self::principal
/// [`protocol_version`]: Self::protocol_version
/// [`client_capabilities`]: Self::client_capabilities
/// [`client_info`]: Self::client_info
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenContext {
    /// The id of the `subscriptions/listen` request, when there is one.
    pub subscription_id: Option<RequestId>,
    /// The protocol version the request names in its `_meta`.
    pub protocol_version: Option<String>,
    /// The capabilities the client declared in the request's `_meta`
    /// (its `extensions` are what extension fields are checked against).
    pub client_capabilities: Option<ClientCapabilities>,
    /// The client's name and version from the request's `_meta`.
    pub client_info: Option<Implementation>,
    /// The transport serving the stream; `None` in process.
    pub transport: Option<TransportKind>,
    /// Who is asking, when an authentication layer said so.
    pub principal: Option<Principal>,
    /// The labels the stream carries besides its principal (a tenant, a
    /// role), so that events addressed to them reach it (see
    /// [`Audience`](crate::Audience)); an authorizer's
    /// [`Grant`](crate::Grant) adds to them.
    pub labels: Vec<Label>,
    /// The HTTP request's head (method, URI, headers, extensions) for the
    /// HTTP and channel transports: what a layer in front attached is in its
    /// `extensions`.
    #[cfg(http_edge)]
    pub http: Option<http::request::Parts>,
    /// This stream's queue settings, overriding the source's default.
    pub queue: Option<Settings>,
}

impl OpenContext {
    /// Records the listen request's id.
    pub fn with_subscription_id(mut self, id: RequestId) -> Self {
        self.subscription_id = Some(id);
        self
    }

    /// Records the transport.
    pub fn with_transport(mut self, transport: TransportKind) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Records who is asking.
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// Adds a label the stream carries (see [`labels`](Self::labels)).
    pub fn with_label(mut self, label: impl Into<Label>) -> Self {
        self.labels.push(label.into());
        self
    }

    /// Its principal and labels, as the hub routes by them.
    pub(crate) fn membership(&self) -> Membership {
        Membership::new(self.principal.clone(), &self.labels)
    }

    /// Records the client's declared capabilities.
    pub fn with_client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.client_capabilities = Some(capabilities);
        self
    }

    /// Records the HTTP request's head, and the [`Principal`] a layer in
    /// front put in its extensions, if any.
    #[cfg(http_edge)]
    pub fn with_http(mut self, parts: http::request::Parts) -> Self {
        if let Some(principal) = parts.extensions.get::<Principal>() {
            self.principal = Some(principal.clone());
        }
        self.http = Some(parts);
        self
    }

    /// Overrides the source's queue settings for this stream.
    pub fn with_queue(mut self, settings: Settings) -> Self {
        self.queue = Some(settings);
        self
    }

    /// Fills in what a request's `_meta` says about the client, keeping
    /// whatever is already set.
    ///
    /// # Errors
    ///
    /// `-32602` when the client capabilities or client info are present but
    /// malformed.
    pub(crate) fn read_meta(
        &mut self,
        meta: Option<&Map<String, Value>>,
    ) -> Result<(), ListenParamsError> {
        let Some(meta) = meta else { return Ok(()) };
        if self.protocol_version.is_none() {
            self.protocol_version = meta
                .get(PROTOCOL_VERSION)
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if self.client_capabilities.is_none()
            && let Some(value) = meta.get(CLIENT_CAPABILITIES)
        {
            let parsed = serde_json::from_value(value.clone()).map_err(|_| {
                ListenParamsError::InvalidMeta {
                    key: CLIENT_CAPABILITIES,
                }
            })?;
            self.client_capabilities = Some(parsed);
        }
        if self.client_info.is_none()
            && let Some(value) = meta.get(CLIENT_INFO)
        {
            let parsed = serde_json::from_value(value.clone())
                .map_err(|_| ListenParamsError::InvalidMeta { key: CLIENT_INFO })?;
            self.client_info = Some(parsed);
        }
        Ok(())
    }

    /// Whether the client declared the extension `id` in its capabilities.
    pub fn client_declares_extension(&self, id: &str) -> bool {
        self.client_capabilities
            .as_ref()
            .and_then(|caps| caps.extensions.as_ref())
            .is_some_and(|extensions| extensions.contains_key(id))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_what_the_meta_says_about_the_client() {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            },
            "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "1.0"},
        });
        let mut context = OpenContext::default();
        context.read_meta(meta.as_object()).unwrap();
        assert_eq!(context.protocol_version.as_deref(), Some("2026-07-28"));
        assert!(context.client_declares_extension("io.modelcontextprotocol/tasks"));
        assert!(!context.client_declares_extension("vendor/other"));
        assert_eq!(context.client_info.unwrap().name, "agent");
    }

    #[test]
    fn malformed_client_capabilities_are_invalid_params() {
        let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": 3}});
        let err = OpenContext::default()
            .read_meta(meta.as_object())
            .unwrap_err();
        assert_eq!(err.to_error_data().code.0, -32602);
    }
}
