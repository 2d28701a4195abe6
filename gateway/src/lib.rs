//! A gateway's subscription engine: many downstream listen streams fed
//! by one upstream listen per upstream server, opened, widened, narrowed
//! and closed as downstream demand comes and goes.
//!
//! A gateway fronts several MCP servers for many clients. Opening one
//! upstream listen for each downstream one (N clients over M servers, N x
//! M held streams on servers that did not ask for them) is what a gateway
//! without a hub does. A [`Gateway`] holds, per upstream and per
//! credential scope (its own, or each caller's; see
//! [per caller](#per-caller)):
//!
//! - a live [`Catalog`](mcp_subscriptions_client::catalog::Catalog): its lists, fetched once
//!   per change and served merged and namespaced
//!   ([`View::tools`], ...), with its own listen for list changes. A
//!   list change reaches downstream listeners only when the merged list
//!   really changed: the catalog's diff decides, so a restarted upstream
//!   whose lists came back the same is no change;
//! - at most one URI listen (a group of streams past 1,000 URIs) over the
//!   catalog's connection, asking for exactly the upstream URIs (and
//!   [task ids](#tasks)) that downstream listeners hold. Demand drives it: a URI's first
//!   downstream listener widens it before that listen is acknowledged, its
//!   last one lets it narrow after the [grace](GatewayBuilder::grace), and
//!   with no URI left it is closed. A change of filter never opens a gap:
//!   the new streams are acknowledged before the old ones close, and the
//!   copies the overlap brings are dropped and counted.
//!
//! Every upstream event, named downstream by the upstream's
//! [`Namespace`], is published into the gateway's [`Hub`](mcp_subscriptions::Hub),
//! which gives each downstream listener exactly what it asked for, through
//! its own bounded queue.
//!
//! [`Gateway::serve`] serves it all as one MCP server over Streamable
//! HTTP: the merged lists, every request forwarded (the [`GatewayServer`]
//! handler), and the listen streams.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_subscriptions::http::shutdown_signal;
//! use mcp_subscriptions_gateway::{Gateway, Upstream};
//!
//! let gateway = Gateway::builder()
//!     .upstream(Upstream::http("docs", "http://127.0.0.1:8801/mcp"))
//!     .upstream(Upstream::http("code", "http://127.0.0.1:8802/mcp"))
//!     .open()
//!     .await?;
//! // `docs/search` is `search` of upstream `docs`; `docs+file:///a.md`
//! // its `file:///a.md`.
//! let tools = gateway.view(None).await?.tools();
//! # let _ = tools;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8800").await?;
//! gateway.serve(listener, shutdown_signal(gateway.hub())).await;
//! # Ok(()) }
//! ```
//!
//! [`Gateway::endpoint`] is the same endpoint to mount in an application's
//! own router (behind its authentication, beside its routes).
//!
//! # Namespaces
//!
//! Each upstream's tool and prompt names and its resource URIs and
//! templates are mapped to downstream ones by a [`Namespace`]: by default
//! [`Prefix`], the upstream's name before each (`docs/search`,
//! `docs+file:///a.md`). `resources/updated` for an upstream URI reaches
//! the downstream listeners of its downstream URI; calls, prompt gets and
//! reads go back to the upstream whose namespace claims the name or URI.
//!
//! # Per caller
//!
//! MCP servers answer each client with what is "currently available to
//! the requesting client", and scope events to principals and tenants. A
//! gateway that speaks to them as itself shows every caller what the
//! gateway's own credential sees. With
//! [`GatewayBuilder::per_caller`], it speaks as each caller: an
//! [`UpstreamIdentity`] gives, for a downstream principal (what the
//! serving layer's authentication put in the request; see
//! [`OpenContext::of_request`](mcp_subscriptions::OpenContext::of_request))
//! and an upstream, the bearer token to send there, from a table, a token
//! exchange or the caller's own token passed through.
//!
//! Each principal then has a *scope* (principals whose credentials are
//! the same at every upstream share one: a [credential
//! scope](UpstreamIdentity#credential-scopes)): its own catalog of each
//! upstream, fetched with its credential, and its own URI listen per
//! upstream, shared by every stream of that principal. Its first stream (the
//! [demand](Gateway::demand) hooks are [per
//! principal](mcp_subscriptions::Demand::per_principal)) or request
//! ([`Gateway::view`]) opens it; a [grace](GatewayBuilder::grace) after
//! its last, it is released. An event heard in a scope is published for
//! its principals alone ([`Audience::principal`](mcp_subscriptions::Audience::principal)),
//! so an upstream event scoped to alice reaches alice's downstream
//! streams and no one else's, an unscoped one each principal's streams
//! once (through its own scope), and a list change only the principals
//! whose list changed. A caller without a principal is refused (`-32600`).
//! 1,000 downstream listeners of 10 principals over 2 upstreams hold at
//! most 2 x 10 upstream listen streams per upstream.
//!
//! # Tasks
//!
//! A `tools/call` from a caller that declares the tasks extension is
//! forwarded declaring it too (and one from a caller that does not, not),
//! so an upstream may answer with a task: its id comes downstream named
//! as the upstream's tools are (`a/task-1`), and the caller follows it
//! with [`View::get_task`] (and `update_task`, `cancel_task`) or a listen
//! for its `taskIds`, which the upstream's listen in the caller's scope
//! then asks for (its `notifications/tasks` renamed on their way down).
//! Per caller, the upstream sees the caller's own credential, so a task
//! stays its owner's: another caller's `tasks/get` or listen of it is
//! refused upstream. When that listen may have missed a status (it
//! re-listened, lagged), each task's status is fetched (`tasks/get`) and
//! published.
//!
//! # Capabilities
//!
//! The gateway's hub advertises every list's changes, resource
//! subscriptions and the tasks extension from the start: an upstream may gain a list later (a
//! restart with more, a late join, a caller whose credential sees more),
//! and what it brings then reaches the downstream listeners without a
//! restart of the gateway. A listen for a URI or task id that no upstream
//! serves now is refused (`-32602`), over HTTP as a JSON-RPC error before
//! any stream starts.
//!
//! # Upstream failures
//!
//! An upstream that is down when the gateway opens joins when it comes up
//! (it is tried again at least every few seconds): meanwhile the others
//! are served, its URIs are refused as not up, and once it joins its lists
//! are merged in and a list change of each kind tells downstream.
//!
//! An upstream listen that ends abruptly is re-listened with backoff (the
//! client's [`Relisten`](mcp_subscriptions_client::Relisten) policy, from the
//! upstream's options). When it is back, its downstream listeners get a
//! resync: each URI it covers is published as updated, and its lists are
//! refetched (a list change follows if they changed). Downstream streams
//! never end because an upstream failed, and the other upstreams are not
//! touched. An upstream that refuses a filter, or leaves a URI out of its
//! grant, refuses only the downstream listens that need that URI, with
//! the upstream's own error; a URI no upstream's namespace claims is
//! refused with `-32602`.
//!
//! # Replicas
//!
//! Each gateway replica listens upstream for its own downstream demand
//! alone, and publishes into its own hub; upstream events are not relayed
//! between replicas. A relay would only bring each replica a second copy
//! of what its own upstream listen already brought: every replica with a
//! downstream listener of a URI holds that URI upstream itself. The cost
//! is one upstream listen per upstream per replica (a handful), not per
//! client; the gain is that no replica depends on another: a replica that
//! dies takes only its own upstream listens with it, its clients re-listen
//! to another replica (which widens its own upstream listen before it
//! acknowledges them) and get a resync from their client, and there is no
//! owner to elect or hand over. A relay may still be attached to the hub
//! for the application's own events (a revocation reaches every replica).

mod error;
mod forward;
mod handle;
mod identity;
mod link;
mod lists;
mod members;
mod scope;
mod scopes;
mod server;
mod stats;
mod upstream;
mod view;
mod watch;

pub use error::GatewayError;
pub use handle::{Gateway, GatewayBuilder};
pub use identity::UpstreamIdentity;
pub use mcp_subscriptions_client::catalog::{Namespace, Prefix};
pub use server::{GatewayEndpoint, GatewayServer};
pub use stats::{CacheHint, UpstreamStats};
pub use upstream::Upstream;
pub use view::View;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
