//! Per-hub options and their defaults.

use crate::filter::{Capabilities, DEFAULT_MAX_URIS};
use crate::overflow::Overflow;

/// The queue capacity per listener unless configured otherwise.
pub const DEFAULT_CAPACITY: usize = 1_024;

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
        }
    }
}
