//! A server's `ServerHandler`, wrapped so that what it advertises tells the
//! truth and the older revisions' sessions are served from the hub.

use std::borrow::Cow;
use std::sync::Arc;

use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    DiscoverResult, ErrorData, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams,
    GetSkillResult, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SubscribeRequestMethod, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestMethod, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};

use super::state::Session;
use crate::context::{OpenContext, TransportKind};
use crate::filter::Capabilities;
use crate::hub::Hub;
use crate::serve::ListenService;

/// A server's [`ServerHandler`] whose subscriptions are served from a
/// [`Hub`]: what it advertises tells the truth to every protocol version,
/// and a client of an older revision gets its notifications on its session.
///
/// A session of an older revision (2025-06-18, 2025-11-25) is one hub
/// listener, opened at `initialize` through the
/// [`ListenService`]'s admission (its authorizer and per-principal
/// limits) for the lists the server advertises. Its filter grows with each
/// `resources/subscribe` and shrinks with each `resources/unsubscribe`
/// ([`Listener::refilter`](crate::Listener::refilter)). Its events are sent
/// on the session one at a time, each once the previous one was handed to
/// the transport, so a session that does not read fills its own queue and
/// its overflow policy applies, as it would to a listen stream; its counts
/// are in the hub's stats. A 2026-07-28 client is served by the listen
/// route as before.
///
/// # Lag and overflow
///
/// An older revision has no way to say "you missed some". A session whose
/// listener lagged (drop-oldest) or overflowed (disconnect, after which a
/// new listener takes its place) is sent a change of every list it gets
/// and an update of every URI it subscribed: it refetches what it may have
/// missed, and is never silently stale.
///
/// # Ending
///
/// The session's listener is closed when the session ends (rmcp drops its
/// handler) or its transport closes. Once the hub completes, the session
/// is sent nothing more; its requests go on being served. Over Streamable
/// HTTP served statelessly (rmcp's `legacy_session_mode` off), where each
/// request is a session of its own, an older client is told no
/// subscription bit.
///
/// Everything else is the wrapped handler's: every request and
/// notification is handed to it, except `resources/subscribe` and
/// `resources/unsubscribe`, which this answers. What the handler's
/// [`get_info`](ServerHandler::get_info) declares is the base that the
/// subscription bits are set under ([`Hub::advertise`]): a server without
/// prompts never claims `prompts`.
///
/// One value serves one session: build it where rmcp asks for a handler,
/// in the factory of its Streamable HTTP service (a new session each
/// call) or once per stdio connection.
///
/// ```no_run
/// use mcp_subscriptions::{Hub, ListenService, WithSubscriptions};
/// use mcp_subscriptions::stdio::StdioTransport;
/// use rmcp::model::{ServerCapabilities, ServerConfig};
/// use rmcp::{ServerHandler, ServiceExt};
///
/// struct MyServer;
///
/// impl ServerHandler for MyServer {
///     fn get_info(&self) -> ServerConfig {
///         ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
///     }
/// }
///
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// let hub = Hub::new();
/// let listen = ListenService::new(hub.clone());
/// let running = WithSubscriptions::new(&listen, MyServer)
///     .serve(StdioTransport::stdio(listen))
///     .await?;
/// // A 2025-11-25 client's `resources/subscribe` for this URI, and a
/// // 2026-07-28 client's listen stream, both get this update:
/// hub.notify_resource_updated("file:///notes.txt");
/// # running.waiting().await?;
/// # Ok(()) }
/// ```
pub struct WithSubscriptions<H> {
    inner: H,
    listen: ListenService<Hub>,
    /// This session's listener, once `initialize` negotiated an older
    /// revision.
    session: Mutex<Option<Arc<Session>>>,
}

impl<H: ServerHandler> WithSubscriptions<H> {
    /// Wraps `inner`, serving subscriptions from `listen`'s hub under its
    /// admission checks (authorizer, per-principal limits).
    ///
    /// It also tells `listen` (and every clone of it) what `inner`
    /// declares, so that no listen stream, over any transport, is granted
    /// a list the server lacks (the acknowledgement never carries more
    /// than the server advertises), and each stream's result names the
    /// server `inner` names.
    pub fn new(listen: &ListenService<Hub>, inner: H) -> Self {
        listen.declare(inner.get_info());
        Self {
            inner,
            listen: listen.clone(),
            session: Mutex::new(None),
        }
    }

    /// A factory of wrapped handlers, one per session, for rmcp's
    /// Streamable HTTP service (or `http::endpoint`): each call wraps what
    /// `server` makes. It calls `server` once now, to tell `listen` what
    /// the server declares (see [`new`](Self::new)).
    pub fn factory(
        listen: &ListenService<Hub>,
        server: impl Fn() -> H + Send + Sync + 'static,
    ) -> impl Fn() -> Self + Send + Sync + 'static {
        // Declared now, not at the first session: a listen stream may come
        // first.
        listen.declare(server().get_info());
        let listen = listen.clone();
        move || Self::new(&listen, server())
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }
}

impl<H> WithSubscriptions<H> {
    fn hub(&self) -> &Hub {
        self.listen.source()
    }

    /// Opens the session's listener for what `advertised` says it gets.
    /// Where it cannot be opened (the hub is full, or the principal's
    /// limit reached), the client is told no subscription bit at all.
    fn open_session(
        &self,
        context: &RequestContext<RoleServer>,
        client: &InitializeRequestParams,
        advertised: &mut rmcp::model::ServerCapabilities,
    ) {
        let open =
            OpenContext::of_request(context).with_client_capabilities(client.capabilities.clone());
        match Session::open(&self.listen, open, Capabilities::from(&*advertised)) {
            Ok(session) => *self.session.lock() = Some(Arc::new(session)),
            Err(err) => {
                tracing::warn!(
                    target: "mcp_subscriptions",
                    error = %err,
                    "an older revision's session gets no notifications"
                );
                let base = std::mem::take(advertised);
                *advertised = self
                    .hub()
                    .capabilities()
                    .advertise_to(base, &client.protocol_version);
            }
        }
    }
}

impl OpenContext {
    /// What a request to an rmcp server handler tells of where it came
    /// from: over Streamable HTTP its head (and the
    /// [`Principal`](crate::audience::Principal) a layer in front put
    /// there), else stdio, with the principal its transport serves the
    /// connection as. What a session's listener is opened with, and what
    /// a handler that serves each caller its own view (a gateway) reads
    /// the caller from.
    pub fn of_request(context: &RequestContext<RoleServer>) -> Self {
        #[cfg(feature = "http")]
        if let Some(parts) = http_head(context) {
            return Self::default()
                .with_transport(TransportKind::Http)
                .with_http(parts.clone());
        }
        let mut open = Self::default().with_transport(TransportKind::Stdio);
        open.principal = context
            .extensions
            .get::<crate::audience::Principal>()
            .cloned();
        open
    }
}

#[cfg(feature = "http")]
fn http_head(context: &RequestContext<RoleServer>) -> Option<&http::request::Parts> {
    context.extensions.get::<http::request::Parts>()
}

/// Whether the transport carries notifications on a session: all but
/// Streamable HTTP served statelessly, where each request is a session of
/// its own.
#[cfg(feature = "http")]
fn carries_sessions(context: &RequestContext<RoleServer>) -> bool {
    http_head(context).is_none_or(|parts| {
        parts
            .extensions
            .get::<crate::transport::request::Stateless>()
            .is_none()
    })
}

#[cfg(not(feature = "http"))]
fn carries_sessions(_context: &RequestContext<RoleServer>) -> bool {
    true
}

fn is_older(version: &ProtocolVersion) -> bool {
    // ISO dates compare as strings in calendar order.
    version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
}

impl<H: ServerHandler> ServerHandler for WithSubscriptions<H> {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.inner.get_info();
        info.capabilities = self.hub().advertise(info.capabilities);
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let client = request.clone();
        // The handler negotiates from its own `get_info`: the base.
        let mut info = self.inner.initialize(request, context.clone()).await?;
        let base = std::mem::take(&mut info.capabilities);
        if is_older(&info.protocol_version) && carries_sessions(&context) {
            info.capabilities = self.hub().capabilities().advertise_to_session(base);
            self.open_session(&context, &client, &mut info.capabilities);
        } else {
            info.capabilities = self
                .hub()
                .capabilities()
                .advertise_to(base, &info.protocol_version);
        }
        Ok(info)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer.clone();
        self.inner.on_initialized(context).await;
        if let Some(session) = &*self.session.lock() {
            session.start(peer);
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Out of the lock: a subscribe may wait for a demand hook's attach.
        let session = self.session.lock().clone();
        match session {
            Some(session) => session.subscribe(request.uri).await,
            None => Err(ErrorData::method_not_found::<SubscribeRequestMethod>()),
        }
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match &*self.session.lock() {
            Some(session) => session.unsubscribe(&request.uri),
            None => Err(ErrorData::method_not_found::<UnsubscribeRequestMethod>()),
        }
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let mut result = self.inner.discover(context).await?;
        result.capabilities = self.hub().advertise(result.capabilities);
        Ok(result)
    }

    // Everything else is the wrapped handler's.

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.inner.ping(context).await
    }

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.inner.complete(request, context).await
    }

    #[expect(
        deprecated,
        reason = "an older revision's client may still set a log level"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.set_level(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.inner.get_prompt(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.inner.list_prompts(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.inner.list_resources(request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.inner.list_resource_templates(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.inner.read_resource(request, context).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.inner.listen(context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.inner.call_tool(request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.inner.list_tools(request, context).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.get_tool(name)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.inner.on_custom_request(request, context).await
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_cancelled(notification, context).await;
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_progress(notification, context).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.inner.on_roots_list_changed(context).await;
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner
            .on_custom_notification(notification, context)
            .await;
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.inner.get_task(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.update_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.cancel_task(request, context).await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.inner.list_skills(request, context).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.inner.get_skill(request, context).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.inner.read_resource_directory(request, context).await
    }
}

impl<H: std::fmt::Debug> std::fmt::Debug for WithSubscriptions<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithSubscriptions")
            .field("inner", &self.inner)
            .field("session", &self.session.lock().is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
