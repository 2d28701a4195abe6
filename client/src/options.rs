//! What a subscription is opened with: its buffer, its patience, and
//! whether it listens again.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, Implementation};

use crate::item::{End, Relistening};
use mcp_subscriptions::Backoff;
use mcp_subscriptions::Overflow;
use mcp_subscriptions::queue::Settings;

/// The default buffer capacity: events held between the transport and the
/// reader.
pub const DEFAULT_BUFFER_CAPACITY: usize = 256;

/// The default time a server has to acknowledge a listen request.
pub const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// The default time an old stream is still read after a filter change's
/// new one was acknowledged: what was in flight on it arrives.
pub const DEFAULT_OVERLAP: Duration = Duration::from_millis(500);

/// What the buffer between the transport and the reader does when it is
/// full and the server has more to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum BufferPolicy {
    /// Stop reading the transport until the reader makes room, so a slow
    /// reader pushes back on the server (whose own queue and policy then
    /// take the excess) rather than growing memory. On stdio, where every
    /// subscription shares one pipe, this pauses the whole connection.
    #[default]
    Wait,
    /// Keep reading; evict the oldest buffered event. The reader learns the
    /// exact number lost through [`Item::Lagged`](crate::Item::Lagged).
    DropOldest,
    /// Keep reading; end the subscription with
    /// [`End::Overflowed`](crate::End::Overflowed), discarding what it held.
    Disconnect,
}

impl BufferPolicy {
    /// The buffer's overflow policy of the same name; `None` for
    /// [`Wait`](Self::Wait), which never overflows.
    fn overflow(self) -> Option<Overflow> {
        match self {
            Self::Wait => None,
            Self::DropOldest => Some(Overflow::DropOldest),
            Self::Disconnect => Some(Overflow::Disconnect),
        }
    }
}

impl From<Overflow> for BufferPolicy {
    /// The hub's policy of the same name.
    fn from(overflow: Overflow) -> Self {
        match overflow {
            Overflow::DropOldest => Self::DropOldest,
            // A policy of a later engine: the one that loses nothing
            // silently.
            _ => Self::Disconnect,
        }
    }
}

/// When and how often to listen again after a stream ended: lost (a
/// dropped connection, a server killed), dropped for overflow, at its
/// lifetime's end, or completed by the server (a graceful restart, unless
/// [`with_after_complete(false)`](Self::with_after_complete)). Exponential
/// backoff with jitter, from `initial` doubling up to `max`.
///
/// A stream that ends within `max` of its acknowledgement counts as one
/// more failed attempt in a row, so a server that completes or drops
/// every listen at once is listened to at most once per `max`, not in a
/// loop; and a stream granted nothing, which a server completes at once,
/// is not listened to again at all.
///
/// The defaults (100 ms doubling to 10 s, no limit) come from the herd:
/// a replica of six killed with 13,000-15,600 of these clients, on two
/// cores, had them all acknowledged again by the survivors within 6.2 s,
/// the survivors accepting 3,900-5,500 connections a second at their
/// peak. A lone client is back within 50-100 ms; a crowd's first attempts
/// spread over 50 ms, and what paces it is how fast the survivors accept,
/// which a later or wider first window would not change. A client turned
/// away by a full replica backs off doubling, so none of them hammers it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Relisten {
    /// The delay bound of the first attempt.
    pub initial: Duration,
    /// The largest delay bound.
    pub max: Duration,
    /// Attempts in a row before giving up; `None` for no limit.
    pub max_attempts: Option<u32>,
    /// Whether a graceful end (the server's `complete` result, as at a
    /// server's restart for a deploy) is also followed by a new listen; on
    /// by default.
    pub after_complete: bool,
}

impl Default for Relisten {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
            max_attempts: None,
            after_complete: true,
        }
    }
}

impl Relisten {
    /// Backoff from `initial` doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            ..Self::default()
        }
    }

    /// Gives up after `attempts` failed attempts in a row.
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// Whether to listen again after a graceful end too (the default);
    /// `false` ends the subscription with [`End::Complete`](crate::End::Complete)
    /// there, for an application that takes a server's graceful end as
    /// "stop listening".
    pub fn with_after_complete(mut self, after_complete: bool) -> Self {
        self.after_complete = after_complete;
        self
    }

    /// The delay before attempt `attempt` (1-based): uniformly random
    /// between half the bound and the bound, the bound doubling per attempt
    /// from `initial` up to `max`. Half the bound at least, so a crowd of
    /// clients spreads out without any of them hammering the server.
    pub fn delay(&self, attempt: u32) -> Duration {
        Backoff {
            initial: self.initial,
            max: self.max,
        }
        .delay(attempt)
    }
}

/// Headers a [`Credentials`] hook gives: name and value, such as
/// `("authorization", "Bearer …")`.
pub type Headers = Vec<(String, String)>;

type Refresh = dyn Fn(&End) -> Pin<Box<dyn Future<Output = Option<Headers>> + Send>> + Send + Sync;

/// A hook called before each re-listen, with the end that started
/// re-listening, for fresh credentials: an OAuth token refreshed after
/// [`End::Expired`], say. The headers it gives replace those of the same
/// name (ASCII case aside) for that attempt and every later one; `None`
/// keeps the current ones.
///
/// After [`End::Revoked`] or [`End::Expired`] a subscription listens again
/// only with credentials that differ from those the server ended: a hook
/// that gives none (or the same) ends the subscription there, and without
/// a hook it ends at once.
#[derive(Clone)]
pub struct Credentials(Arc<Refresh>);

impl Credentials {
    /// Calls `refresh` before each re-listen.
    pub fn new<F, Fut>(refresh: F) -> Self
    where
        F: Fn(&End) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Headers>> + Send + 'static,
    {
        Self(Arc::new(move |end| Box::pin(refresh(end))))
    }

    /// Asks the hook, and puts what it gives into `headers`.
    pub(super) async fn refresh(&self, end: &End, headers: &mut Headers) {
        merge(headers, self.ask(end).await.unwrap_or_default());
    }

    /// What the hook gives after `end`.
    pub(super) fn ask(&self, end: &End) -> Pin<Box<dyn Future<Output = Option<Headers>> + Send>> {
        (self.0)(end)
    }
}

/// Puts `fresh` into `headers`, each replacing those of its name (ASCII
/// case aside).
pub(super) fn merge(headers: &mut Headers, fresh: Headers) {
    for (name, value) in fresh {
        headers.retain(|(old, _)| !old.eq_ignore_ascii_case(&name));
        headers.push((name, value));
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(..)")
    }
}

/// How a [`Subscription`](crate::Subscription) is opened.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SubscribeOptions {
    /// The buffer between the transport and the reader: the most events
    /// and rendered bytes it holds, whether a duplicate of a pending
    /// idempotent signal (a list changed, one URI updated) is absorbed
    /// instead of buffered again, and, unless [`wait_for_room`](Self::wait_for_room),
    /// what a full buffer does (default: [`DEFAULT_BUFFER_CAPACITY`] events).
    pub buffer: Settings,
    /// Whether a full buffer stops the reading of the transport until the
    /// reader makes room ([`BufferPolicy::Wait`], the default) rather than
    /// apply the buffer's overflow policy.
    pub wait_for_room: bool,
    /// How long the server has to acknowledge, connecting included.
    pub ack_timeout: Duration,
    /// Listen again after an abrupt end, and try a first open that failed
    /// transiently again; off by default.
    pub relisten: Option<Relisten>,
    /// The client's name and version, sent in `_meta`.
    pub client_info: Implementation,
    /// The client's capabilities, sent in `_meta` (declare an extension
    /// there to use its filter fields, such as the tasks extension's
    /// `taskIds`).
    pub client_capabilities: ClientCapabilities,
    /// Extra HTTP headers for Streamable HTTP and the notification channel
    /// (an `authorization` header, for one).
    pub headers: Headers,
    /// Called before each re-listen for fresh credentials; none by default.
    pub credentials: Option<Credentials>,
    /// Certificates (PEM) trusted for `https://` besides the system's
    /// roots: a private certificate authority's.
    #[cfg(feature = "tls")]
    pub root_certificates: Vec<Vec<u8>>,
    /// The most URIs one listen request carries; a filter with more is
    /// listened to as several streams, read as one (default
    /// [`DEFAULT_MAX_URIS`](mcp_subscriptions::hub::DEFAULT_MAX_URIS), what servers
    /// accept).
    pub max_uris_per_stream: usize,
    /// How long the old streams are still read after a filter change's new
    /// ones were acknowledged (default [`DEFAULT_OVERLAP`]).
    pub overlap: Duration,
    /// The local address Streamable HTTP connections are made from (the
    /// system's choice by default): one of several on a multi-homed host,
    /// or a loopback address of its own per client process, so that a
    /// load past one address's ports can be made.
    pub local_address: Option<std::net::IpAddr>,
    /// The Unix domain socket Streamable HTTP connections are made to,
    /// whatever host the URL names (see
    /// [`with_unix_socket`](Self::with_unix_socket)).
    #[cfg(unix)]
    pub unix_socket: Option<std::path::PathBuf>,
    /// Told of each failed attempt at a first request before it is tried
    /// again (see [`with_on_retry`](Self::with_on_retry)).
    pub(crate) on_retry: Option<OnRetry>,
}

/// What [`SubscribeOptions::with_on_retry`] calls.
#[derive(Clone)]
pub(crate) struct OnRetry(pub(crate) Arc<dyn Fn(&Relistening) + Send + Sync>);

impl fmt::Debug for OnRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OnRetry(..)")
    }
}

impl Default for SubscribeOptions {
    fn default() -> Self {
        Self {
            buffer: Settings::new(DEFAULT_BUFFER_CAPACITY),
            wait_for_room: true,
            ack_timeout: DEFAULT_ACK_TIMEOUT,
            relisten: None,
            client_info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            client_capabilities: ClientCapabilities::default(),
            headers: Vec::new(),
            credentials: None,
            #[cfg(feature = "tls")]
            root_certificates: Vec::new(),
            max_uris_per_stream: mcp_subscriptions::hub::DEFAULT_MAX_URIS,
            overlap: DEFAULT_OVERLAP,
            local_address: None,
            #[cfg(unix)]
            unix_socket: None,
            on_retry: None,
        }
    }
}

impl SubscribeOptions {
    /// Sets the buffer's bounds and policy: a full buffer applies its
    /// overflow policy ([`with_policy(BufferPolicy::Wait)`](Self::with_policy)
    /// after this waits for room instead).
    pub fn with_buffer(mut self, buffer: Settings) -> Self {
        self.buffer = buffer;
        self.wait_for_room = false;
        self
    }

    /// Buffers at most `capacity` events.
    ///
    /// # Panics
    ///
    /// When `capacity` is zero.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.buffer = self.buffer.with_capacity(capacity);
        self
    }

    /// Sets what a full buffer does.
    pub fn with_policy(mut self, policy: impl Into<BufferPolicy>) -> Self {
        let policy = policy.into();
        self.wait_for_room = policy == BufferPolicy::Wait;
        if let Some(overflow) = policy.overflow() {
            self.buffer = self.buffer.with_overflow(overflow);
        }
        self
    }

    /// Absorbs duplicates of pending idempotent signals.
    pub fn with_coalesce(mut self, coalesce: bool) -> Self {
        self.buffer = self.buffer.with_coalesce(coalesce);
        self
    }

    /// Gives the server `timeout` to acknowledge.
    pub fn with_ack_timeout(mut self, timeout: Duration) -> Self {
        self.ack_timeout = timeout;
        self
    }

    /// Listens again after an abrupt end, with this backoff; a first open
    /// that fails transiently (a server not up yet) is tried again too.
    pub fn with_relisten(mut self, relisten: Relisten) -> Self {
        self.relisten = Some(relisten);
        self
    }

    /// Names the client in `_meta`.
    pub fn with_client_info(mut self, info: Implementation) -> Self {
        self.client_info = info;
        self
    }

    /// Declares the client's capabilities in `_meta`.
    pub fn with_client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.client_capabilities = capabilities;
        self
    }

    /// Calls `hook` each time a first request (the open, or a filter
    /// change's new streams) failed transiently and is about to be tried
    /// again under [`with_relisten`](Self::with_relisten): the attempt, the
    /// wait before it, and why the last one failed (no acknowledgement
    /// within the timeout, an answer that is not an event stream, a
    /// refusal). The subscription does not exist yet, so it cannot say so
    /// itself; once it does, each re-listen arrives as
    /// [`Item::Relistening`](crate::Item::Relistening). Without a hook a
    /// first open that keeps failing is silent until it gives up.
    pub fn with_on_retry(mut self, hook: impl Fn(&Relistening) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(OnRetry(Arc::new(hook)));
        self
    }

    /// Asks `credentials` for fresh headers before each re-listen (it takes
    /// effect with [`with_relisten`](Self::with_relisten)).
    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Trusts the certificate (PEM) for `https://`, besides the system's
    /// roots; a certificate that does not parse fails the open with
    /// [`SubscribeError::Invalid`](crate::SubscribeError::Invalid).
    #[cfg(feature = "tls")]
    pub fn with_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(pem.into());
        self
    }

    /// Listens to at most `max` URIs a stream (at least 1).
    pub fn with_max_uris_per_stream(mut self, max: usize) -> Self {
        self.max_uris_per_stream = max.max(1);
        self
    }

    /// Reads the old streams for `overlap` after a filter change.
    pub fn with_overlap(mut self, overlap: Duration) -> Self {
        self.overlap = overlap;
        self
    }

    /// Connects over Streamable HTTP from `address`.
    pub fn with_local_address(mut self, address: std::net::IpAddr) -> Self {
        self.local_address = Some(address);
        self
    }

    /// Makes Streamable HTTP connections to the Unix domain socket at
    /// `path`, as a local host reaches a server that serves HTTP there
    /// (the example server's `--bind unix:PATH`): the URL still names the
    /// endpoint's path and the `Host` header (`http://localhost/mcp`), and
    /// no name is resolved. The notification channel is not served over
    /// one.
    #[cfg(unix)]
    pub fn with_unix_socket(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.unix_socket = Some(path.into());
        self
    }

    /// Adds an HTTP header to every request (Streamable HTTP and the
    /// notification channel).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}
