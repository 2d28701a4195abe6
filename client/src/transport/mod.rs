//! The transports a subscription listens over, each a [`Connect`](crate::connect::Connect):
//! Streamable HTTP, stdio, the Diverge notification channel, and a
//! [`Source`](mcp_subscriptions::Source) in process.

#[cfg(feature = "channel")]
pub(crate) mod channel;
pub(crate) mod http;
pub(crate) mod source;
pub(crate) mod stdio;
