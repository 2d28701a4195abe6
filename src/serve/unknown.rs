//! Filter fields this server does not know, told to its operator once.
//!
//! The protocol keeps a filter's unknown fields (an extension may add
//! any), so a listen asking for `toolListChanged` (a typo) or `taskIds`
//! (from a server without the tasks extension) is acknowledged without
//! it and never hears of anything. Its client sees that in the
//! acknowledgement; the server's operator sees it here, once per field
//! name, at `warn`.

use std::collections::HashSet;

use crate::filter::{Capabilities, Filter};
use crate::sync::Mutex;

/// The most field names remembered: past it, nothing more is told, so a
/// client that makes names up cannot grow the set or flood the log.
const MOST: usize = 64;

/// The unknown field names already told.
#[derive(Debug, Default)]
pub(crate) struct UnknownFields {
    told: Mutex<HashSet<String>>,
}

impl UnknownFields {
    /// Tells, once each, the fields of `requested` that no extension of
    /// `capabilities` owns.
    pub(crate) fn tell(&self, requested: &Filter, capabilities: &Capabilities) {
        let unknown = requested
            .extensions()
            .keys()
            .filter(|field| capabilities.extension_owning(field).is_none());
        for field in unknown {
            if self.first_time(field) {
                tracing::warn!(
                    target: "mcp_subscriptions",
                    field = %field,
                    "a listen asked for a filter field this server does not know; it is never served"
                );
            }
        }
    }

    fn first_time(&self, field: &str) -> bool {
        let mut told = self.told.lock();
        if told.len() >= MOST || told.contains(field) {
            return false;
        }
        told.insert(field.to_owned())
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_unknown_field_is_told_once_and_known_ones_never() {
        let unknown = UnknownFields::default();
        let capabilities = Capabilities::default()
            .with_extension(crate::Extension::new("example/ext").with_id_list("ids", 10));
        let requested = Filter::new()
            .with_extension("toolListChanged", true.into())
            .with_extension("ids", serde_json::json!(["a"]));
        unknown.tell(&requested, &capabilities);
        assert_eq!(
            *unknown.told.lock(),
            HashSet::from(["toolListChanged".to_owned()])
        );
        assert!(!unknown.first_time("toolListChanged"), "told once");
    }

    #[test]
    fn past_the_most_names_nothing_more_is_remembered() {
        let unknown = UnknownFields::default();
        for n in 0..MOST {
            assert!(unknown.first_time(&format!("field{n}")));
        }
        assert!(!unknown.first_time("one-more"));
        assert_eq!(unknown.told.lock().len(), MOST);
    }
}
