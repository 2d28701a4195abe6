//! How long each measurement runs.

use std::time::Duration;

/// How long each measurement runs.
#[derive(Clone, Copy)]
pub(crate) struct Settings {
    /// The short run: smaller sizes, fewer rounds.
    pub(crate) quick: bool,
    /// The least time one sampled figure is measured for.
    pub(crate) budget: Duration,
}

impl Settings {
    pub(crate) fn new(quick: bool) -> Self {
        Self {
            quick,
            budget: if quick {
                Duration::from_millis(300)
            } else {
                Duration::from_secs(2)
            },
        }
    }
}
