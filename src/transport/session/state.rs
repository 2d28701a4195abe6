//! One older revision's session as the hub serves it: its listener, whose
//! filter is what the session subscribed, and the task that sends its
//! events on the session.
//!
//! A session revoked ([`Hub::revoke`]) or past its grant's expiry gets no
//! notification after (an older revision has no way to say why), and its
//! later `resources/subscribe` calls are refused with the error a listen
//! stream would have ended with: `-32003`, `{"reason":"revoked"}` or
//! `{"reason":"expired"}`. Its principal's slot and its URIs' holds on the
//! demand hooks are given back then.

use std::collections::HashMap;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_core::Stream;
use parking_lot::Mutex;
use rmcp::RoleServer;
use rmcp::model::{
    ConstString, ErrorData, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ServerNotification, SubscribeRequestMethod, UnsubscribeRequestMethod,
};
use rmcp::service::Peer;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::context::OpenContext;
use crate::error::{OpenError, StreamError};
use crate::event::{EventKind, ListKind};
use crate::filter::{Capabilities, Filter, InterestKey};
use crate::hub::{Hub, Listener};
use crate::serve::ListenService;
use crate::serve::demand::Hold;
use crate::serve::pull::Lease;
use crate::source::{CloseReason, Next};

/// A session's listener and the task sending its events; dropping it (rmcp
/// drops the session's handler) ends the task and closes the listener.
pub(super) struct Session {
    shared: Arc<Shared>,
    started: AtomicBool,
    stop: CancellationToken,
    _stopped_on_drop: DropGuard,
}

/// What the session and its sending task share.
struct Shared {
    listen: ListenService<Hub>,
    context: OpenContext,
    /// What the server advertised to the session: what it may subscribe.
    advertised: Capabilities,
    /// Locked only to pull, or to change the filter: never across an await.
    listener: Mutex<Listener>,
    /// The principal's slot, held while the session is authorized.
    lease: Mutex<Lease>,
    /// Each subscribed URI's hold on the service's demand hooks.
    holds: Mutex<HashMap<String, Hold>>,
    /// Why the session's authorization ended, once it did.
    ended: Mutex<Option<StreamError>>,
}

impl Session {
    /// Opens the session's listener for the lists whose changes the server
    /// `advertised` to it, through the listen service's admission.
    pub(super) fn open(
        listen: &ListenService<Hub>,
        mut context: OpenContext,
        advertised: Capabilities,
    ) -> Result<Self, OpenError> {
        let lists = ListKind::ALL
            .into_iter()
            .fold(Filter::new(), Filter::with_list_changed)
            .narrow(&advertised);
        let (opened, mut lease) = listen.admit(&mut context, &lists)?;
        // Per principal demand hooks learn of the session's principal.
        lease.demand = listen.hold_presence(context.principal.as_ref());
        let stop = CancellationToken::new();
        Ok(Self {
            shared: Arc::new(Shared {
                listen: listen.clone(),
                context,
                advertised,
                listener: Mutex::new(opened.handle),
                lease: Mutex::new(lease),
                holds: Mutex::new(HashMap::new()),
                ended: Mutex::new(None),
            }),
            started: AtomicBool::new(false),
            _stopped_on_drop: stop.clone().drop_guard(),
            stop,
        })
    }

    /// Starts sending the session's events to `peer`: once the client said
    /// it is initialized, since nothing may reach it before.
    pub(super) fn start(&self, peer: Peer<RoleServer>) {
        // A client that says so twice still gets one sender.
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let (shared, stop) = (self.shared.clone(), self.stop.clone());
        // A session has no lifetime: its lease ends only when it expires.
        let expires_at = self.shared.lease.lock().ends.map(|ends| ends.at);
        tokio::spawn(async move {
            let expiry = async {
                match expires_at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = stop.cancelled() => {}
                () = shared.send_to(&peer) => {}
                () = expiry => shared.end(StreamError::Expired),
            }
        });
    }

    /// `resources/subscribe`: `uri`'s updates reach the session from now on,
    /// if the authorizer grants them, once the demand hooks attached it.
    pub(super) async fn subscribe(&self, uri: String) -> Result<(), ErrorData> {
        self.may_subscribe::<SubscribeRequestMethod>()?;
        // Nothing is attached for a URI the session may not have.
        self.shared.granted_with(&uri)?;
        let key = InterestKey::Resource(uri.clone());
        let principal = self.shared.context.principal.as_ref();
        let hold = self.shared.listen.hold(principal, [key]).await?;
        // Granted again: the filter may have changed while the hook ran.
        let granted = self.shared.granted_with(&uri)?;
        self.shared
            .listener
            .lock()
            .refilter(&granted)
            .map_err(|err| err.to_error_data())?;
        if let Some(hold) = hold {
            self.shared.holds.lock().insert(uri, hold);
        }
        Ok(())
    }

    /// `resources/unsubscribe`: `uri`'s updates stop reaching the session
    /// (unsubscribing from a URI not subscribed does nothing).
    pub(super) fn unsubscribe(&self, uri: &str) -> Result<(), ErrorData> {
        self.may_subscribe::<UnsubscribeRequestMethod>()?;
        let mut listener = self.shared.listener.lock();
        let remaining = listener.filter().clone().without_resource(uri);
        listener
            .refilter(&remaining)
            .map_err(|err| err.to_error_data())?;
        drop(listener);
        self.shared.holds.lock().remove(uri);
        Ok(())
    }

    /// `-32601` for `M` where the server did not advertise
    /// `resources.subscribe`, as rmcp answers it.
    fn may_subscribe<M: ConstString>(&self) -> Result<(), ErrorData> {
        if self.shared.advertised.resources_subscribe {
            Ok(())
        } else {
            Err(ErrorData::method_not_found::<M>())
        }
    }
}

impl Shared {
    /// The session's filter with `uri` added, as the authorizer grants it:
    /// refused when the session's authorization ended, or when `uri` is
    /// not granted.
    fn granted_with(&self, uri: &str) -> Result<Filter, ErrorData> {
        if let Some(why) = &*self.ended.lock() {
            return Err(why.to_error_data());
        }
        let requested = self.listener.lock().filter().clone().with_resource(uri);
        let granted = self
            .listen
            .authorize(&self.context, &requested)
            .map_err(|err| err.to_error_data())?
            .filter()
            .clone();
        if !granted
            .resource_subscriptions()
            .any(|granted| granted == uri)
        {
            return Err(ErrorData::invalid_params(
                format!("subscribing to {uri} is not permitted"),
                None,
            ));
        }
        Ok(granted)
    }

    /// The session's authorization ended: its listener is closed (a
    /// revoked one already is), and what it held is given back.
    fn end(&self, why: StreamError) {
        let reason = match why {
            StreamError::Expired => CloseReason::Expired,
            _ => CloseReason::Error,
        };
        self.listener.lock().close(reason);
        self.holds.lock().clear();
        *self.lease.lock() = Lease::default();
        *self.ended.lock() = Some(why);
    }

    /// Sends the session's events to `peer`, one at a time, each once the
    /// previous one was handed to the transport, until the listener ends or
    /// the transport closes.
    async fn send_to(&self, peer: &Peer<RoleServer>) {
        loop {
            // The lock is taken for one poll at a time, so a subscribe
            // between polls changes what the next one finds.
            let next = poll_fn(|cx| Pin::new(&mut *self.listener.lock()).poll_next(cx)).await;
            let notifications = match next {
                Some(Next::Event(event)) => {
                    // An event queued before an unsubscribe is not sent
                    // after it.
                    let listener = self.listener.lock();
                    let granted = listener.filter().matches(event.kind());
                    granted
                        .then(|| notification(event.kind()))
                        .flatten()
                        .into_iter()
                        .collect()
                }
                Some(Next::Lagged(_)) => self.resync(),
                Some(Next::Failed(why @ (StreamError::Revoked | StreamError::Expired))) => {
                    return self.end(why);
                }
                // Otherwise only a disconnect policy fails a hub listener:
                // a new one takes its place, and the session refetches.
                Some(Next::Failed(_)) => match self.reopen() {
                    Ok(()) => self.resync(),
                    Err(_) => return,
                },
                Some(Next::Complete | Next::Closed) | None => return,
            };
            for notification in notifications {
                if peer.send_notification(notification).await.is_err() {
                    return;
                }
            }
        }
    }

    /// What tells the session it may have missed something: a change of
    /// every list it gets, an update of every URI it subscribed.
    fn resync(&self) -> Vec<ServerNotification> {
        let listener = self.listener.lock();
        let filter = listener.filter();
        let lists = filter.lists_changed().map(EventKind::ListChanged);
        let uris = filter
            .resource_subscriptions()
            .map(|uri| EventKind::ResourceUpdated {
                uri: uri.to_owned(),
            });
        lists
            .chain(uris)
            .filter_map(|kind| notification(&kind))
            .collect()
    }

    /// A new listener, for what the failed one was granted.
    fn reopen(&self) -> Result<(), OpenError> {
        let mut listener = self.listener.lock();
        let granted = listener.filter().clone();
        *listener = self.listen.source().listen_with(&granted, &self.context)?;
        Ok(())
    }
}

/// The notification an older revision's session is sent for `kind`: the
/// same method, with no subscription id. Extension events have no form
/// there.
fn notification(kind: &EventKind) -> Option<ServerNotification> {
    Some(match kind {
        EventKind::ListChanged(ListKind::Tools) => {
            ServerNotification::ToolListChangedNotification(Default::default())
        }
        EventKind::ListChanged(ListKind::Prompts) => {
            ServerNotification::PromptListChangedNotification(Default::default())
        }
        EventKind::ListChanged(ListKind::Resources) => {
            ServerNotification::ResourceListChangedNotification(Default::default())
        }
        EventKind::ResourceUpdated { uri } => ServerNotification::ResourceUpdatedNotification(
            ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri.clone())),
        ),
        EventKind::Extension { .. } => return None,
    })
}
