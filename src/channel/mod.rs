//! The Diverge notification channel: the frame codec and the driver that
//! serves one channel from any [`Source`](crate::Source).

mod codec;
mod stream;

pub use codec::{Ask, ERROR_TAG, Frame, NOTIFICATION_TAG};
pub use stream::ChannelStream;
