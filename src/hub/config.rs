//! Per-hub options and their defaults.

use crate::audience::Audience;
use crate::error::{ListenParamsError, OpenError};
use crate::filter::{Capabilities, DEFAULT_MAX_URIS, Filter};
use crate::hook::Hook;
use crate::overflow::Overflow;

/// The queue capacity per listener unless configured otherwise.
///
/// Why 1,024: a listener watches at most [`DEFAULT_MAX_URIS`] URIs and three
/// lists, so a queue this deep holds one pending signal of every key it can
/// watch (an update of each of its 1,000 URIs, all at once, loses nothing),
/// and a queue grows on demand, so an idle listener pays nothing for the
/// depth. The anchors leave it to the user (`tokio::sync::broadcast` takes
/// a capacity, with no default) or do not bound it at all (the TypeScript
/// and Python SDKs write each notification straight to the transport).
pub const DEFAULT_CAPACITY: usize = 1_024;

/// The most bytes (the rendered size of the events) one listener's queue
/// holds unless configured otherwise: 16 MiB.
///
/// Why: change signals are a hundred bytes or so, so the count bound acts
/// first for them; this bound is for events that carry data (a task's
/// status, an extension's payload), where 1,024 of them at 16 KiB each is
/// as much as one slow listener should hold.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// How many listeners a hub serves at once unless configured otherwise.
///
/// Why 10,000: each HTTP stream is a socket, and a server process commonly
/// runs with an open-file limit of some tens of thousands; past this a
/// listen is refused with `-32603` `Subscription limit reached`, and the
/// server's other requests go on, instead of every accept failing once the
/// process is out of files. Raise it with the limit (and see
/// `--reuse-port` in the README to go past one process).
pub const DEFAULT_MAX_LISTENERS: usize = 10_000;

/// The options a hub is built with.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) max_uris: usize,
    pub(crate) max_listeners: usize,
    pub(crate) capabilities: Capabilities,
    pub(crate) coalesce: bool,
    pub(crate) max_queued_bytes: usize,
    pub(crate) max_hub_queued_bytes: Option<usize>,
    /// Told of each revocation (see
    /// [`HubBuilder::on_revoke`](crate::hub::HubBuilder::on_revoke)).
    pub(crate) on_revoke: Option<OnRevoke>,
}

/// What [`HubBuilder::on_revoke`](crate::hub::HubBuilder::on_revoke) calls.
pub(crate) type OnRevoke = Hook<dyn Fn(&Audience) + Send + Sync>;

impl Default for Config {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_CAPACITY,
            overflow: Overflow::default(),
            max_uris: DEFAULT_MAX_URIS,
            max_listeners: DEFAULT_MAX_LISTENERS,
            capabilities: Capabilities::default(),
            coalesce: false,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
            max_hub_queued_bytes: None,
            on_revoke: None,
        }
    }
}

impl Config {
    /// What a listener asking for `requested` is granted: the request
    /// narrowed by the capabilities, or refused for naming more distinct
    /// URIs than the limit.
    pub(crate) fn grant(&self, requested: &Filter) -> Result<Filter, OpenError> {
        let uris = requested.resource_subscriptions().len();
        if uris > self.max_uris {
            return Err(ListenParamsError::TooManyUris {
                count: uris,
                limit: self.max_uris,
            }
            .into());
        }
        Ok(requested.narrow(&self.capabilities))
    }
}
