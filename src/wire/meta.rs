//! The `_meta` keys the crate writes.

/// The `_meta` key every message of a listen stream carries: the listen
/// request's id, verbatim.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The `_meta` key of the server's info in a stream's `complete` result.
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
