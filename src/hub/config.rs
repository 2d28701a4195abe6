//! Per-hub options and their defaults.

use crate::audience::Audience;
use crate::error::{ListenParamsError, OpenError};
use crate::filter::{Capabilities, DEFAULT_MAX_URIS, Filter};
use crate::queue::Settings;
use crate::util::hook::Hook;

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
    /// Each listener's queue, unless it asks for its own.
    pub(crate) queue: Settings,
    pub(crate) max_uris: usize,
    pub(crate) max_listeners: usize,
    pub(crate) capabilities: Capabilities,
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
            queue: Settings::default(),
            max_uris: DEFAULT_MAX_URIS,
            max_listeners: DEFAULT_MAX_LISTENERS,
            capabilities: Capabilities::default(),
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
