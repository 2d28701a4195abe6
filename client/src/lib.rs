//! The client half of `mcp-subscriptions`: listen to any MCP server's
//! `subscriptions/listen` streams over Streamable HTTP, stdio, the
//! notification channel, or in process, and keep a live [catalog] of its
//! tools, prompts and resources.
//!
//! ```rust,no_run
//! use mcp_subscriptions_client::{Item, Relisten, StdioClient, SubscribeOptions, Subscription};
//! use mcp_subscriptions::{Filter, Hub};
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = Filter::new().with_tools_list_changed();
//! let options = SubscribeOptions::default()
//!     .with_capacity(256)
//!     .with_relisten(Relisten::new(Duration::from_millis(100), Duration::from_secs(10)));
//!
//! // Streamable HTTP.
//! let mut over_http = Subscription::http("http://127.0.0.1:8808/mcp", &tools, options.clone()).await?;
//! println!("granted {:?}", over_http.granted());
//!
//! // stdio: a server the client starts; many subscriptions share its pipes.
//! let server = StdioClient::spawn("my-mcp-server", ["--stdio"])?;
//! let over_stdio = server.subscribe(&tools, options.clone()).await?;
//!
//! // The notification channel of a provider proxy.
//! let url = "ws://127.0.0.1:8808/mcp/notifications/main";
//! let over_channel = Subscription::channel(url, &tools, options.clone()).await?;
//!
//! // In process, from any source.
//! let in_process = Subscription::source(Hub::new(), &tools, options).await?;
//!
//! while let Some(item) = over_http.next().await {
//!     match item {
//!         Item::Event(event) => println!("{}", event.method()),
//!         Item::Resynced(filter) => println!("refetch what {filter:?} names"),
//!         Item::End(end) => println!("ended: {end:?}"),
//!         _ => {}
//!     }
//! }
//! // A thread can `select!` over subscriptions through crossbeam channels.
//! let receiver = over_stdio.into_receiver();
//! # drop((receiver, over_channel, in_process));
//! # Ok(()) }
//! ```
//!
//! A [`Subscription`] is the mirror image of a served stream. Opening one
//! sends the listen request and returns once the acknowledgement arrived,
//! with the filter the server granted ([`Subscription::granted`]). From
//! then on a task reads the transport into a bounded buffer, and the
//! application reads the buffer on demand: [`Subscription::next`]
//! (cancel-safe), [`Subscription::try_next`], the [`Stream`](futures_core::Stream)
//! impl, or a [`crossbeam_channel::Receiver`] for threads
//! ([`Subscription::into_receiver`]).
//!
//! | transport | opened with | cancelled by |
//! | --- | --- | --- |
//! | Streamable HTTP | [`Subscription::http`] | closing the SSE response |
//! | stdio | [`StdioClient::spawn`] or [`StdioClient::new`], then [`StdioClient::subscribe`] | `notifications/cancelled` |
//! | notification channel | `Subscription::channel` (with the `channel` feature) | closing the WebSocket |
//! | in process | [`Subscription::source`] | closing the source's handle |
//!
//! ## The buffer
//!
//! Between the transport and the reader sits a buffer of
//! [`capacity`](SubscribeOptions::with_capacity) events with a
//! [`BufferPolicy`]. Under [`BufferPolicy::Wait`] (the default) the task
//! reads the transport only while the buffer has room, so a slow reader
//! pushes back on the server, whose own queue and policy then take the
//! excess, instead of growing memory here. [`BufferPolicy::DropOldest`]
//! and [`BufferPolicy::Disconnect`] are the hub's policies: keep reading,
//! and evict the oldest event (the reader sees the exact loss as
//! [`Item::Lagged`]) or end with [`End::Overflowed`]. With
//! [coalescing](SubscribeOptions::with_coalesce), a duplicate of a pending
//! idempotent signal (a list changed, one URI updated) takes no slot.
//! [`Subscription::stats`] accounts for every event.
//!
//! ## Ends
//!
//! The last item is always one [`End`]: the server's graceful completion,
//! its JSON-RPC error (an overflow of the server's queue is
//! [`End::is_server_overflow`]; a revoked or expired authorization,
//! `-32003`, is [`End::Revoked`] or [`End::Expired`]), an abrupt close of
//! the transport, an
//! unserved channel, our own cancel, our own buffer's overflow, or a
//! protocol error. A server that acknowledges more than was asked, sends a
//! notification before its acknowledgement or stamped with another
//! subscription's id, sends a core kind it did not grant, or sends
//! garbage, ends the stream with [`End::Protocol`] (before the
//! acknowledgement, opening fails with [`SubscribeError::Protocol`]); one
//! that never acknowledges fails within
//! [`ack_timeout`](SubscribeOptions::with_ack_timeout). Nothing panics and
//! nothing hangs.
//!
//! ## Listening again
//!
//! Nothing is replayed in this protocol: a new listen starts from now.
//! With [`SubscribeOptions::with_relisten`], an abrupt end, a server
//! overflow or a graceful end (a server restarting for a deploy completes
//! its streams) is followed by new listen requests with exponential
//! backoff and jitter, each reported as [`Item::Relistening`]; once one is
//! acknowledged, [`Item::Resynced`] names what to refetch (the granted
//! list kinds and URIs), and events flow again. A stream that ends soon
//! after its acknowledgement counts as a failed attempt, so a server that
//! ends every listen at once is not listened to in a loop; see
//! [`Relisten`]. [`Relisten::with_after_complete(false)`](Relisten::with_after_complete)
//! makes a graceful end final. A stdio client that started its server
//! starts it again if it is gone.
//!
//! A revoked or expired stream is never listened to again with the
//! credentials the server ended: only when a [`Credentials`] hook
//! ([`SubscribeOptions::with_credentials`]), asked before each re-listen,
//! gives headers that differ from them (a refreshed token); otherwise the
//! end is final.
//!
//! A graceful end is final by default because a server that completes
//! its streams may mean it (it is going away for good); a catalog asks
//! otherwise, since for it a completion is a restart.
//!
//! Re-listening also covers the first open: a server not up yet, or any
//! failure [`SubscribeError::is_transient`] calls transient, is tried again
//! after the same backoff before the open returns (up to
//! [`Relisten::max_attempts`]; bound it with `tokio::time::timeout`
//! otherwise). A listen refused for good while re-listening (a 401, a
//! filter the server will never grant) ends the subscription with
//! [`End::Refused`], unless the credentials hook gives new headers.
//!
//! ## Changing the filter
//!
//! [`Subscription::set_filter`] changes what a subscription listens to in
//! place: the new streams are acknowledged before the old ones close, the
//! old ones are read until they catch up (or the
//! [overlap](SubscribeOptions::with_overlap) ends), and a copy of an event
//! that came on both is dropped ([`BufferStats::duplicates`]). A filter
//! past [`max_uris_per_stream`](SubscribeOptions::with_max_uris_per_stream)
//! (1,000) URIs is listened to as several streams, read as one.
//!
//! ## The live catalog
//!
//! For a host that wants a server's lists rather than its notifications:
//! [`Catalog`](catalog::Catalog) keeps one server's tools, prompts,
//! resources and templates fresh (one fetch per change, however many),
//! with snapshots, typed diffs and health;
//! [`CatalogSet`](catalog::CatalogSet) keeps several, merged (the
//! [`catalog`] module).
//!
//! ## Interop
//!
//! The client ([`Subscription`]) is tested against
//! servers no one here wrote, each serving `subscriptions/listen` with its own
//! SDK's handler (the workspace's `tests/client/interop.rs`; `.ci/interop-install` puts the npm and
//! PyPI packages under `target/interop`):
//!
//! | server | Streamable HTTP | stdio |
//! | --- | --- | --- |
//! | rmcp 3.11 alone (`examples/rmcp_listen.rs`) | yes | yes |
//! | TypeScript SDK v2, `@modelcontextprotocol/server` 2.4.0 | yes | yes |
//! | Python SDK, `mcp` 2.3.0 | yes | yes |
//! | TypeScript SDK v1, `@modelcontextprotocol/sdk` 1.32.2 | no listen: HTTP 400, `-32000` `Unsupported protocol version: 2026-07-28` | no listen: `-32601` `Method not found` |
//!
//! "yes": the grant is the request, notifications of both kinds arrive and
//! only for the URI asked for, and on stdio a cancelled subscription leaves
//! another on the same connection running. The live catalog
//! ([`Catalog`](catalog::Catalog)) of each of the first three, over both transports,
//! discovers it, lists its tools and keeps them with one fetch a second
//! while the server announces a change every 50 ms; the TypeScript and
//! Python servers also change their own tool lists at runtime (a tool added,
//! described anew, removed), and the catalog converges after each, over HTTP
//! and stdio, and across a killed stdio server started again. The v1 line predates the
//! 2026-07-28 revision; the client reports its answer as
//! `SubscribeError::Refused`.
//!
//! ## Why not rmcp's `Peer::listen`
//!
//! rmcp 3.11 has a listen client, but its buffer ends the subscription at
//! the first overflow (`SubscriptionEnd::Lagged`), its filter type drops
//! extension fields such as `taskIds`, it has no in-process form, and it
//! never listens again. This client speaks the wire itself (through the
//! crate's own filter and event types, `reqwest` and `sse-stream` for
//! HTTP, `tokio-tungstenite` and the crate's channel `Frame` codec for the
//! channel) so that none of those is lost.

mod buffer;
pub mod catalog;
mod connect;
mod error;
mod group;
mod item;
mod options;
mod overlap;
mod protocol;
mod pump;
mod request;
mod subscription;
mod transport;
mod wire;

pub use buffer::BufferStats;
pub use error::{ProtocolError, SubscribeError};
pub use item::{End, Item, Relistening};
pub use options::{
    BufferPolicy, Credentials, DEFAULT_ACK_TIMEOUT, DEFAULT_BUFFER_CAPACITY, DEFAULT_OVERLAP,
    Headers, Relisten, SubscribeOptions,
};
pub use subscription::{FilterHandle, Subscription};
pub use transport::stdio::StdioClient;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
