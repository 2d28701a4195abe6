#![doc = include_str!("../README.md")]

#[cfg(any(feature = "rmcp", feature = "channel"))]
mod adapters;
#[cfg(feature = "channel")]
mod channel;
mod error;
mod event;
mod filter;
mod hub;
mod serve;
mod source;
mod stats;
mod sync;

#[cfg(feature = "channel")]
pub use adapters::ChannelEndpoint;
#[cfg(any(feature = "rmcp", feature = "channel"))]
pub use adapters::Streams;
#[cfg(feature = "rmcp")]
pub use adapters::{StdioTransport, http_endpoint};
#[cfg(feature = "channel")]
pub use channel::{Ask, ChannelStream, ERROR_TAG, Frame, NOTIFICATION_TAG};
#[cfg(feature = "channel")]
pub use error::FrameError;
pub use error::{
    AdvertiseError, ListenParamsError, OVERFLOW_ERROR_CODE, OpenError, ParseOverflowError, Refusal,
    StreamError,
};
pub use event::{Event, EventKind, Message, SUBSCRIPTION_ID_META_KEY, Selector, SubscriptionId};
pub use filter::{Capabilities, DEFAULT_MAX_URIS, Filter};
pub use hub::{
    DEFAULT_CAPACITY, DEFAULT_MAX_LISTENERS, Hub, HubBuilder, Listener, ListenerId, NextItem,
    Overflow, PublishReport,
};
pub use serve::{Advertise, DEFAULT_KEEPALIVE, ListenOptions, ListenService, ListenStream};
pub use source::{CloseReason, Next, OpenContext, Opened, Source};
pub use stats::{ClosedCounts, HubStats, ListenerStats};
