//! Per-hub options and their defaults.

use crate::error::{ListenParamsError, OpenError};
use crate::filter::{Capabilities, DEFAULT_MAX_URIS, Filter};
use crate::overflow::Overflow;

/// The queue capacity per listener unless configured otherwise.
pub const DEFAULT_CAPACITY: usize = 1_024;

/// The most bytes (the rendered size of the events) one listener's queue
/// holds unless configured otherwise: 16 MiB.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// How many listeners a hub serves at once unless configured otherwise.
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
}

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
