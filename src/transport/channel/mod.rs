//! The Diverge notification channel (feature `channel`): a provider
//! protocol, multiplexed over one WebSocket, whose notification channel
//! carries every notification a server produces, one binary message per
//! [`Frame`].
//!
//! - [`Frame`] is the codec: tag byte `0` and a notification's JSON, or tag
//!   byte `1` and a JSON-RPC error as the very last frame of a failed
//!   channel. The ask that opens a channel carries an empty payload; a
//!   server ignores whatever bytes a newer peer puts there.
//! - [`ChannelStream`] serves one channel from any
//!   [`Source`](crate::Source), under the same rules as a listen stream.
//! - [`ChannelTransport`] mounts it at `/mcp/notifications/{channel}` as an
//!   axum WebSocket route.
//!
//! There is no filter and no replay: a channel starts from now and carries
//! everything.

mod frame;
mod stream;
mod transport;

pub use crate::error::FrameError;
pub use frame::{ERROR_TAG, Frame, NOTIFICATION_TAG};
pub use stream::ChannelStream;
pub use transport::ChannelTransport;
