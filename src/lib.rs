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
pub mod error;
mod event;
mod filter;
mod sync;
// What several layers use: one backoff, one callback wrapper, one
// bookkeeping of who holds a key.
mod util;
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
// Extensions, each behind its feature.
#[cfg(any_relay)]
pub mod relay;
#[cfg(feature = "tasks")]
pub mod tasks;
// The transports, each behind its feature, and what they share.
#[cfg(any_transport)]
mod transport;
#[cfg(feature = "channel")]
pub use transport::channel;
#[cfg(feature = "http")]
pub use transport::http;
#[cfg(feature = "stdio")]
pub use transport::stdio;

pub use audience::Audience;
pub use context::{OpenContext, TransportKind};
pub use event::{Event, EventKind, ListKind, Selector, Succession};
pub use filter::{Capabilities, Extension, Filter};
pub use hub::{Hub, Listener};
pub use queue::Overflow;
pub use serve::{Authorize, CapPolicy, Grant, ListenService, ListenStream, Teardown};
#[cfg(any_transport)]
pub use serve::{Demand, Presence};
pub use source::{CloseReason, Next, Opened, Source, SourceHandle};
pub use sync::block_on_timeout;
#[cfg(rmcp_session)]
pub use transport::session::WithSubscriptions;
#[cfg(any_transport)]
pub use transport::streams::{Drained, Streams};
pub use util::backoff::Backoff;
pub use wire::{Message, SubscriptionId};

/// The README's examples, compiled as doctests.
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
