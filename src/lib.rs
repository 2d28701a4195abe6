// The tour's examples use every transport; with fewer features the crate
// docs are a pointer to it rather than examples that cannot compile.
#![cfg_attr(
    all(
        feature = "stdio",
        feature = "http",
        feature = "channel",
        feature = "tasks"
    ),
    doc = include_str!("lib.md")
)]
#![cfg_attr(
    not(all(
        feature = "stdio",
        feature = "http",
        feature = "channel",
        feature = "tasks"
    )),
    doc = "The subscription engine for MCP servers; the crate docs with the default features are the tour."
)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The layers, bottom up; a module imports only from its own layer or below
// (see ARCHITECTURE.md, and `tests/hub/layers.rs`, which checks it).
//
// The wire and the vocabulary: no transport, no runtime.
pub mod audience;
mod backoff;
mod counts;
pub mod error;
mod event;
mod filter;
mod holds;
mod hook;
mod overflow;
mod sync;
mod wire;
// The bounded queue under every listener, and the client's buffer.
pub mod queue;
// The interface a stream is served from (and what it learns about the
// request), and the hub that implements it.
mod context;
pub mod hub;
mod source;
// The transport-agnostic driver of one stream.
mod serve;
// Transports, each behind its feature, and what they share.
#[cfg(feature = "channel")]
pub mod channel;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "stdio")]
pub mod stdio;
// Extensions, each behind its feature.
#[cfg(any_relay)]
pub mod relay;
#[cfg(feature = "tasks")]
pub mod tasks;
#[cfg(any_transport)]
mod transport;
// The older revisions' sessions, beside the transports that carry them
// (above what they share).
#[cfg(any(feature = "stdio", feature = "http"))]
mod session;

pub use audience::Audience;
pub use backoff::Backoff;
pub use context::{OpenContext, TransportKind};
pub use event::{Event, EventKind, ListKind, Selector, Succession};
pub use filter::{Capabilities, Extension, Filter};
pub use hub::{Hub, Listener};
pub use overflow::Overflow;
#[cfg(any_transport)]
pub use serve::Demand;
pub use serve::{Authorize, CapPolicy, Grant, ListenService, ListenStream, Teardown};
#[cfg(any(feature = "stdio", feature = "http"))]
pub use session::WithSubscriptions;
pub use source::{CloseReason, Next, Opened, Source, SourceHandle};
pub use sync::block_on_timeout;
#[cfg(any_transport)]
pub use transport::{Drained, Streams};
pub use wire::{Message, SubscriptionId};

/// The README's examples, compiled as doctests.
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
