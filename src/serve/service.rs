//! The service that opens listen streams from a source.

use std::sync::{Arc, OnceLock};

use rmcp::model::{ErrorData, Implementation, RequestId, ServerCapabilities};
use serde_json::Value;

use super::authorize::{Authorize, Grant};
use super::limits::{CapPolicy, PrincipalLimits};
use super::pull::Lease;
use super::stream::ListenStream;
#[cfg(any_transport)]
use super::stream::Waiting;
use super::teardown::Teardown;
use super::unknown::UnknownFields;
use crate::context::OpenContext;
use crate::error::{OpenError, Refusal, StreamError};
use crate::filter::Filter;
use crate::source::Source;

/// Serves listen streams from one source; cheap to clone.
///
/// ```
/// use mcp_subscriptions::{Hub, ListenService};
/// use rmcp::model::RequestId;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let hub = Hub::new();
/// let service = ListenService::new(hub.clone());
/// let params = json!({"notifications": {"toolsListChanged": true}});
/// let mut stream = service.open(RequestId::Number(1), Some(&params)).unwrap();
///
/// let ack = stream.next_message().await.unwrap();
/// assert!(String::from_utf8(ack.to_vec()).unwrap().contains("subscriptions/acknowledged"));
/// hub.notify_tools_list_changed();
/// let event = stream.next_message().await.unwrap();
/// assert!(String::from_utf8(event.to_vec()).unwrap().contains("tools/list_changed"));
/// # });
/// ```
///
/// # Admission
///
/// Before a stream is opened, and so before anything is acknowledged, a
/// request passes these checks in order; the first that fails answers it
/// with a JSON-RPC error:
///
/// 1. its params parse, with no more URIs than the source's
///    [`max_uris`](Source::max_uris), and its `_meta` client capabilities
///    and info are well formed (`-32602`);
/// 2. each filter field a declared [`Extension`](crate::Extension) owns
///    comes from a client that declared the extension, where the extension
///    requires it (`-32021`), and passes the extension's validator
///    (`-32602`);
/// 3. the [authorizer](Self::with_authorizer), if any, grants a subset or
///    refuses with its own error;
/// 4. the principal, if any, holds fewer than its
///    [limit](Self::with_max_streams_per_principal) of open streams
///    (`-32603` `Subscription limit reached`), unless its
///    [cap policy](Self::with_cap_policy) replaces its oldest;
/// 5. with demand hooks (`with_demand`, under a transport feature), the
///    attach of each of its keys no stream held before (the hook's error,
///    or `-32603` for a hook that panicked), waited for before the
///    acknowledgement;
/// 6. the source opens it, narrowing to what it serves (`-32603` for a full
///    hub).
pub struct ListenService<S> {
    source: Arc<S>,
    /// Set by [`with_server_info`](Self::with_server_info); else the
    /// declared handler's, else this crate's.
    server_info: Option<Arc<Implementation>>,
    authorizer: Option<Arc<dyn Authorize>>,
    limits: Option<PrincipalLimits>,
    cap_policy: CapPolicy,
    teardown: Teardown,
    unknown: Arc<UnknownFields>,
    /// What the server declares, once a handler said (see
    /// [`declare`](Self::declare)): no stream is granted a list it lacks.
    declared: Arc<OnceLock<Declared>>,
    #[cfg(any_transport)]
    demand: Option<Arc<super::demand::Keys>>,
    #[cfg(any_transport)]
    max_lifetime: Option<std::time::Duration>,
}

/// What a server's handler declares in its `get_info`.
struct Declared {
    capabilities: ServerCapabilities,
    server_info: Arc<Implementation>,
}

/// The server info of a service no handler or option named.
static THIS_CRATE: std::sync::LazyLock<Arc<Implementation>> = std::sync::LazyLock::new(|| {
    Arc::new(Implementation::new(
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION"),
    ))
});

impl<S> Clone for ListenService<S> {
    fn clone(&self) -> Self {
        Self {
            source: self.source.clone(),
            server_info: self.server_info.clone(),
            authorizer: self.authorizer.clone(),
            limits: self.limits.clone(),
            cap_policy: self.cap_policy,
            teardown: self.teardown,
            unknown: self.unknown.clone(),
            declared: self.declared.clone(),
            #[cfg(any_transport)]
            demand: self.demand.clone(),
            #[cfg(any_transport)]
            max_lifetime: self.max_lifetime,
        }
    }
}

impl<S: Source + 'static> ListenService<S> {
    /// Serves `source`, naming in `complete` results the server that its
    /// handler's `get_info` names once wrapped in
    /// `WithSubscriptions` (or this crate,
    /// until then), unless [`with_server_info`](Self::with_server_info)
    /// says otherwise.
    pub fn new(source: S) -> Self {
        Self {
            source: Arc::new(source),
            server_info: None,
            authorizer: None,
            limits: None,
            cap_policy: CapPolicy::Refuse,
            teardown: Teardown::Complete,
            unknown: Arc::default(),
            declared: Arc::default(),
            #[cfg(any_transport)]
            demand: None,
            #[cfg(any_transport)]
            max_lifetime: None,
        }
    }

    /// Asks `authorizer` what each request may be granted (see
    /// [`Authorize`]).
    pub fn with_authorizer(mut self, authorizer: impl Authorize) -> Self {
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// Runs `demand`'s hooks as keys (resource URIs, task ids) gain their
    /// first stream of this service, before that stream's source is opened
    /// or anything is acknowledged, and after the last has gone (see
    /// [`Demand`](crate::Demand)). An attach that refuses answers each
    /// request waiting for it with its error, and opens nothing. Clones of
    /// one demand installed on several services keep one bookkeeping.
    #[cfg(any_transport)]
    pub fn with_demand(mut self, demand: super::demand::Demand) -> Self {
        self.demand = Some(demand.keys());
        self
    }

    /// Ends each stream after about `lifetime` (within 10% either side,
    /// drawn per stream, so that streams opened together do not end
    /// together) with [`LIFETIME_ERROR_CODE`](crate::error::LIFETIME_ERROR_CODE)
    /// and `data: {"reason":"lifetime"}`, counted as
    /// [`CloseReason::Lifetime`](crate::CloseReason::Lifetime).
    ///
    /// Streams held for hours never move, so after a herd or a scale-out
    /// the spread over replicas stays as uneven as it fell; with a
    /// lifetime, clients listen again now and then and land where the load
    /// balancer puts them now. The end is an error, not the `complete`
    /// result: `complete` tells a client the server is done with it, and
    /// clients (this crate's, the TypeScript and Python SDKs') do not
    /// listen again after it, while after an error they do (this crate's
    /// client at once, with `Item::Relistening`
    /// and then a resync; an SDK application as after any lost stream).
    /// Nothing is replayed, so a client refetches what it lists.
    #[cfg(any_transport)]
    pub fn with_max_stream_lifetime(mut self, lifetime: std::time::Duration) -> Self {
        self.max_lifetime = Some(lifetime);
        self
    }

    /// Lets each [`Principal`](crate::audience::Principal) hold at most `limit` open
    /// streams (listen streams and channels together); one more is refused
    /// with `-32603` `Subscription limit reached` (or, under
    /// [`CapPolicy::ReplaceOldest`], takes the place of the principal's
    /// oldest), and a slot is freed the
    /// moment a stream ends, however it ends (its terminal message, a
    /// cancel, a dropped connection), not when its value is dropped. Streams without a principal are
    /// limited only by the source.
    pub fn with_max_streams_per_principal(mut self, limit: usize) -> Self {
        self.limits = Some(PrincipalLimits::new(limit, self.cap_policy));
        self
    }

    /// What a principal at its [cap](Self::with_max_streams_per_principal)
    /// gets for one more stream: refused (the default), or admitted in
    /// place of its oldest, which ends with `{"reason":"replaced"}` (see
    /// [`CapPolicy`] for which to choose when).
    pub fn with_cap_policy(mut self, policy: CapPolicy) -> Self {
        self.cap_policy = policy;
        if let Some(limits) = &mut self.limits {
            limits.set_policy(policy);
        }
        self
    }

    /// How every stream says its graceful end: the `complete` result (the
    /// default) or `notifications/cancelled` naming the listen request
    /// (see [`Teardown`] for which peers want which), over every transport.
    pub fn with_teardown(mut self, teardown: Teardown) -> Self {
        self.teardown = teardown;
        self
    }

    /// Sets the server info every stream's `complete` result carries, in
    /// place of what the handler's `get_info` names: only for a service
    /// whose handler is not wrapped in
    /// `WithSubscriptions`, or that names
    /// itself apart from it.
    pub fn with_server_info(mut self, server_info: Implementation) -> Self {
        self.server_info = Some(Arc::new(server_info));
        self
    }

    /// The source served.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The server info the `complete` result carries.
    pub fn server_info(&self) -> &Implementation {
        self.shared_server_info()
    }

    fn shared_server_info(&self) -> &Arc<Implementation> {
        self.server_info
            .as_ref()
            .or_else(|| self.declared.get().map(|declared| &declared.server_info))
            .unwrap_or(&THIS_CRATE)
    }

    /// Validates a listen request made in process (no transport, no
    /// principal) and opens its stream. See [`open_with`](Self::open_with).
    ///
    /// # Errors
    ///
    /// As [`open_with`](Self::open_with).
    pub fn open(
        &self,
        id: RequestId,
        params: Option<&Value>,
    ) -> Result<ListenStream<S::Handle>, Refusal> {
        self.open_with(OpenContext::default(), id, params)
    }

    /// Validates a listen request that arrived with `context` (what its
    /// transport knows: the transport, the principal, the HTTP head) and
    /// opens its stream. What the request's `_meta` says about the client
    /// is added to the context the source sees. Nothing is sent before this
    /// succeeds.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] carrying the JSON-RPC error response to send instead,
    /// from the first [admission](Self#admission) check that failed.
    pub fn open_with(
        &self,
        mut context: OpenContext,
        id: RequestId,
        params: Option<&Value>,
    ) -> Result<ListenStream<S::Handle>, Refusal> {
        let refuse = |context: &OpenContext, error: ErrorData| {
            trace_refused(context, &id, &error);
            Refusal::new(id.clone(), error)
        };
        let requested = match Filter::from_listen_params(params, self.source.max_uris()) {
            Ok(requested) => requested,
            Err(err) => return Err(refuse(&context, err.to_error_data())),
        };
        let meta = params
            .and_then(|params| params.get("_meta"))
            .and_then(Value::as_object);
        if let Err(err) = context.read_meta(meta) {
            return Err(refuse(&context, err.to_error_data()));
        }
        self.open_filter(context.clone(), id.clone(), &requested)
            .map_err(|err| refuse(&context, err.to_error_data()))
    }

    /// Opens the stream of listen request `id` for an already parsed
    /// filter, under the admission checks from the second on; the source
    /// sees `id` as the context's
    /// [`subscription_id`](OpenContext::subscription_id).
    ///
    /// # Errors
    ///
    /// The [`OpenError`] of the first [admission](Self#admission) check that
    /// failed.
    pub fn open_filter(
        &self,
        mut context: OpenContext,
        id: RequestId,
        requested: &Filter,
    ) -> Result<ListenStream<S::Handle>, OpenError> {
        context.subscription_id = Some(id.clone());
        if !requested.extensions().is_empty() {
            self.unknown.tell(requested, &self.source.capabilities());
        }
        #[allow(unused_mut, reason = "demand hooks need a transport's runtime")]
        let (grant, mut lease) = self.lease(&mut context, requested)?;
        #[cfg(any_transport)]
        if let Some(keys) = &self.demand {
            let wanted = grant.narrow(&self.source.capabilities()).interest_keys();
            let (hold, attach) = keys.hold(context.principal.as_ref(), wanted);
            lease.demand = Some(hold);
            if let Some(attach) = attach {
                let source = self.source.clone();
                let (asked, stream_id) = (grant.clone(), id.clone());
                let open = move |attached: Result<(), ErrorData>| {
                    let opened = attached.and_then(|()| {
                        source
                            .open(&grant, &context)
                            .map_err(|err| err.to_error_data())
                    });
                    match &opened {
                        Ok(opened) => trace_opened(&context, &opened.granted),
                        Err(error) => trace_refused(&context, &stream_id, error),
                    }
                    opened
                };
                let waiting = Waiting {
                    attach,
                    open: Box::new(open),
                    lease,
                };
                return Ok(ListenStream::waiting(
                    waiting,
                    id,
                    asked,
                    (self.shared_server_info().clone(), self.teardown),
                ));
            }
        }
        // A refusal from the source drops the lease, freeing its slot.
        let opened = self.source.open(&grant, &context)?;
        trace_opened(&context, &opened.granted);
        Ok(ListenStream::new(
            opened.handle,
            id,
            opened.granted,
            (self.shared_server_info().clone(), self.teardown),
            lease,
        ))
    }

    /// Records what the server declares (its handler's `get_info`: its
    /// capabilities before the subscription bits, and its name), for this
    /// service and every clone of it: from then on a stream is granted no
    /// list whose capability the server lacks, as the acknowledgement must
    /// never carry more than the server advertises, and its `complete`
    /// result names the server as `initialize` does. The first declaration
    /// holds.
    #[cfg(rmcp_session)]
    pub(crate) fn declare(&self, info: rmcp::model::ServerConfig) {
        let _ = self.declared.set(Declared {
            capabilities: info.capabilities,
            server_info: Arc::new(info.server_info),
        });
    }

    /// Holds `principal`'s presence against per principal demand hooks
    /// (nothing for shared ones) without waiting for its attach: for a
    /// session's own listener, which asks for no key.
    #[cfg(rmcp_session)]
    pub(crate) fn hold_presence(
        &self,
        principal: Option<&crate::audience::Principal>,
    ) -> Option<super::demand::Hold> {
        let keys = self.demand.as_ref()?;
        Some(keys.hold(principal, []).0)
    }

    /// Holds `keys` for `principal` against the demand hooks once each
    /// that no stream held has attached: the hold to keep while they are used (none without
    /// hooks), or the refusal of an attach (the keys then released).
    #[cfg(rmcp_session)]
    pub(crate) async fn hold(
        &self,
        principal: Option<&crate::audience::Principal>,
        keys: impl IntoIterator<Item = crate::filter::InterestKey>,
    ) -> Result<Option<super::demand::Hold>, ErrorData> {
        let Some(demand) = &self.demand else {
            return Ok(None);
        };
        let (hold, attach) = demand.hold(principal, keys);
        if let Some(attach) = attach {
            attach.await?;
        }
        Ok(Some(hold))
    }

    /// What the authorizer grants of `requested`, never more than it; all
    /// of it without one.
    pub(crate) fn authorize(
        &self,
        context: &OpenContext,
        requested: &Filter,
    ) -> Result<Grant, OpenError> {
        match &self.authorizer {
            Some(authorizer) => Ok(authorizer.authorize(context, requested)?.within(requested)),
            None => Ok(Grant::new(requested.clone())),
        }
    }

    /// Runs the admission checks from the extensions on, and opens the
    /// source: the stream, and its lease (see [`lease`](Self::lease)).
    #[cfg(any_transport)]
    pub(crate) fn admit(
        &self,
        context: &mut OpenContext,
        requested: &Filter,
    ) -> Result<(crate::source::Opened<S::Handle>, Lease), OpenError> {
        let (grant, lease) = self.lease(context, requested)?;
        // A refusal from the source drops the lease, freeing its slot.
        let opened = self.source.open(&grant, context)?;
        Ok((opened, lease))
    }

    /// Runs the admission checks from the extensions to the principal's
    /// limit: the filter to open the source with, and the stream's lease
    /// (its principal's slot, its expiry). The labels the authorizer
    /// granted are added to `context`, which the source opens with.
    fn lease(
        &self,
        context: &mut OpenContext,
        requested: &Filter,
    ) -> Result<(Filter, Lease), OpenError> {
        self.source
            .capabilities()
            .check_extensions(requested, |id| context.client_declares_extension(id))?;
        let declared = self.declared.get().map(|declared| {
            requested.narrow(&self.source.capabilities().within(&declared.capabilities))
        });
        let requested = declared.as_ref().unwrap_or(requested);
        let grant = self.authorize(context, requested)?;
        let expires_at = grant.expires_at();
        if expires_at.is_some_and(|at| at <= std::time::Instant::now()) {
            return Err(OpenError::Refused(StreamError::Expired.to_error_data()));
        }
        let slot = match (&self.limits, &context.principal) {
            (Some(limits), Some(principal)) => Some(limits.acquire(principal)?),
            _ => None,
        };
        context.labels.extend_from_slice(grant.labels());
        #[allow(unused_mut, reason = "lifetimes need a transport's runtime")]
        let mut lease = Lease::new(slot, expires_at);
        #[cfg(any_transport)]
        if let Some(lifetime) = self.max_lifetime {
            // Within 10% either side.
            let tenth = lifetime / 10;
            lease.end_lifetime_at(
                std::time::Instant::now() + lifetime - tenth
                    + crate::util::backoff::random_below(tenth * 2),
            );
        }
        Ok((grant.filter().clone(), lease))
    }
}

/// The `opened` lifecycle event: who, over what, granted what (counts, not
/// the URIs themselves, which may be a thousand).
fn trace_opened(context: &OpenContext, granted: &Filter) {
    let extensions: Vec<&str> = granted.extensions().keys().map(String::as_str).collect();
    tracing::info!(
        target: "mcp_subscriptions",
        subscription_id = ?context.subscription_id,
        transport = context.transport.map_or("in-process", |t| t.as_str()),
        principal = context.principal.as_ref().map(|p| p.as_str()),
        tools = granted.tools_list_changed(),
        prompts = granted.prompts_list_changed(),
        resources = granted.resources_list_changed(),
        uris = granted.resource_subscriptions().len(),
        extensions = ?extensions,
        "stream opened"
    );
}

/// The `refused` lifecycle event: the code and the reason.
fn trace_refused(context: &OpenContext, id: &RequestId, error: &ErrorData) {
    tracing::info!(
        target: "mcp_subscriptions",
        subscription_id = ?id,
        transport = context.transport.map_or("in-process", |t| t.as_str()),
        principal = context.principal.as_ref().map(|p| p.as_str()),
        code = error.code.0,
        reason = %error.message,
        "stream refused"
    );
}

impl<S> std::fmt::Debug for ListenService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenService")
            .field("server_info", &self.server_info)
            .field("authorizer", &self.authorizer.is_some())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
