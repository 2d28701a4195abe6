//! One server's catalog, kept live: how it is opened and read.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::connection::Connection;
use super::diff::Changes;
use super::fetcher::Fetcher;
use super::health::Health;
use super::keeper::{Keeper, State, listen_filter};
use super::options::CatalogOptions;
use super::snapshot::Snapshot;
use crate::connect::Connect;
use crate::error::SubscribeError;
use crate::pump::retrying;
use crate::request::Request;
use crate::subscription::Subscription;
use crate::transport::http::Http;
use crate::transport::stdio::StdioClient;
use mcp_subscriptions::Filter;

/// The live catalog: a host's always-fresh view of one MCP server's tools,
/// prompts, resources and templates ([`Catalog`]), and of several at once
/// ([`CatalogSet`](super::CatalogSet)).
///
/// A catalog discovers the server (`server/discover`), listens
/// (`subscriptions/listen`) for the list changes it advertises with
/// `listChanged`, and then fetches each list with the protocol's own
/// requests, paged through `nextCursor`: `tools/list`, `prompts/list`,
/// `resources/list`, `resources/templates/list`, and `resources/read` for
/// the resources it [watches](CatalogOptions::with_watched). It listens
/// before it fetches, so no change falls between the two.
///
/// ## Refetch discipline
///
/// - Per list, at most one fetch is in flight. A change during a fetch
///   schedules exactly one more, however many arrive.
/// - A first change after a quiet spell is fetched after a short
///   [gather](super::DEFAULT_GATHER) (20 ms), so an isolated change is seen at
///   once. Changes that keep coming wait until they pause for the
///   [debounce](super::DEFAULT_DEBOUNCE) (100 ms), but no longer than the
///   [bound](super::DEFAULT_MAX_DELAY) (1 s): a burst makes one fetch, and a
///   storm one a second ([`CatalogOptions::with_timing`]).
/// - After a re-listen ([`Item::Resynced`](crate::Item::Resynced): nothing
///   in between was replayed), each list the new stream grants is fetched
///   exactly once, and discovery again. A server restart is survived this
///   way: the stream ends (gracefully or not), the catalog listens again
///   with backoff, and refetches.
/// - A failed fetch is retried with the re-listen backoff when it may pass
///   ([`SubscribeError::is_transient`]); a permanent failure (a 401 no
///   [`Credentials`](crate::Credentials) hook cured, a `-32601`) waits for
///   the next change. [`Catalog::health`] says which.
/// - Cache hints (SEP-2549): a list the listen stream tells of is fresh
///   until it says otherwise. A list no stream tells of (the server
///   advertises no `listChanged` for it, or the stream ended for good) is
///   refetched when its `ttlMs` runs out, but never more often than
///   [`min_refresh`](CatalogOptions::with_min_refresh); without a `ttlMs`
///   it is fetched once. Each list's `cacheScope` is in its health, for a
///   gateway deciding whether a list may be shared across users.
///
/// ## Reading
///
/// [`Catalog::snapshot`] is the current [`Snapshot`], shared cheaply, with
/// a generation that rises on every change. [`Catalog::changed`] waits for
/// a later generation ([`Catalog::wait_blocking`] from a thread), and
/// [`Catalog::changes`] yields typed diffs: tools, prompts, resources,
/// templates and watched contents added, removed and changed, by key, with
/// old and new definitions.
///
/// ## Why not rmcp's client for the fetches
///
/// The lists are rmcp's model types ([`Tool`](rmcp::model::Tool),
/// [`ListToolsResult`](rmcp::model::ListToolsResult), ...), decoded from
/// the wire as rmcp decodes them. The requests are sent by this crate's
/// client, over the connection its listen stream uses, because rmcp's
/// client would be a second configuration of the same server (its own
/// HTTP client, headers and token, or on stdio a second owner of the one
/// pipe), and its response cache answers a refetch after a change with
/// the list from before it until the cache is cleared by hand.
///
/// Dropping it stops the task that keeps it and cancels its listen
/// streams; snapshots already taken stay valid.
pub struct Catalog {
    state: Arc<State>,
    connection: Arc<dyn Connection>,
    keeper: JoinHandle<()>,
}

impl Catalog {
    /// Keeps the catalog of the server at `url` (its Streamable HTTP
    /// endpoint, such as `http://127.0.0.1:8808/mcp`). Returns once every
    /// list was fetched once (or failed to be: see [`health`](Self::health)).
    ///
    /// # Errors
    ///
    /// A [`SubscribeError`] when the server cannot be discovered or listened
    /// to: a permanent failure at once, a transient one after the re-listen
    /// policy's attempts (none by default: bound the wait with
    /// `tokio::time::timeout`).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn http(
        url: impl Into<String>,
        options: CatalogOptions,
    ) -> Result<Self, SubscribeError> {
        let http = Http::new(url.into(), &options.subscribe)?;
        Self::open(Arc::new(http), options).await
    }

    /// Keeps the catalog of the server on the other end of `client`, over
    /// that one connection: its list requests and its listen streams share
    /// the pipe. A client that started its server starts it again when it
    /// is gone.
    ///
    /// # Errors
    ///
    /// As [`http`](Self::http).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn stdio(
        client: &StdioClient,
        options: CatalogOptions,
    ) -> Result<Self, SubscribeError> {
        Self::open(Arc::new(client.clone()), options).await
    }

    async fn open<R: Request + Connect>(
        server: Arc<R>,
        options: CatalogOptions,
    ) -> Result<Self, SubscribeError> {
        let fetcher = Arc::new(Fetcher::new(server, options));
        let discovered = retrying(&fetcher.options.subscribe, || fetcher.discover()).await?;
        // After discovery, which may have refreshed the credentials.
        let listen = fetcher.listen_options();
        let filter = listen_filter(&discovered.capabilities, &fetcher.options.watch);
        let subscription = match filter {
            Some(filter) => {
                Some(Subscription::open(Arc::clone(&fetcher.server), &filter, listen).await?)
            }
            None => None,
        };
        let (settled, first_round) = oneshot::channel();
        let connection: Arc<dyn Connection> = Arc::clone(&fetcher) as _;
        let (keeper, state) = Keeper::new(fetcher, discovered, subscription, settled);
        let keeper = tokio::spawn(keeper.run());
        let catalog = Self {
            state,
            connection,
            keeper,
        };
        let _ = first_round.await;
        Ok(catalog)
    }

    /// The catalog now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.state.snapshot.borrow())
    }

    /// Waits for a generation later than `after`, and returns it (at once
    /// when the catalog is already past it).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe.
    pub async fn changed(&self, after: u64) -> Arc<Snapshot> {
        let mut current = self.state.snapshot.subscribe();
        let snapshot = current
            .wait_for(|snapshot| snapshot.generation > after)
            .await
            .expect("the catalog holds the sender");
        Arc::clone(&snapshot)
    }

    /// [`changed`](Self::changed) for a thread: blocks until a generation
    /// later than `after`, or `None` after `timeout`.
    ///
    /// # Blocking
    ///
    /// Parks the calling thread; do not call it on an async runtime's
    /// thread.
    pub fn wait_blocking(&self, after: u64, timeout: Duration) -> Option<Arc<Snapshot>> {
        mcp_subscriptions::block_on_timeout(self.changed(after), timeout)
    }

    /// The changes from now on, as typed diffs.
    pub fn changes(&self) -> Changes {
        Changes::new(self.state.snapshot.subscribe())
    }

    /// How the listen stream and each list's fetches are doing.
    pub fn health(&self) -> Health {
        self.state.health.lock().clone()
    }

    /// Rises with every change of [`health`](Self::health).
    pub(super) fn health_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.state.health_changes.subscribe()
    }

    /// Sends any other request (`tools/call`, `prompts/get`,
    /// `resources/read`, ...) over the catalog's connection, with its
    /// headers, and returns the response's `result`. A refusal for the
    /// authorization asks the [`Credentials`](crate::Credentials)
    /// hook, and the request is sent once more with what it gave; the
    /// listen stream and the fetches then use those too. No timeout is
    /// set: a tool may take long.
    ///
    /// # Errors
    ///
    /// The server's JSON-RPC error as [`SubscribeError::Refused`], or the
    /// transport's failure.
    pub async fn request(
        &self,
        method: &str,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, SubscribeError> {
        self.connection.request(method.to_owned(), params).await
    }

    /// Opens another subscription over the catalog's connection, with its
    /// headers, credentials hook and re-listen policy: watching resources
    /// on demand beside the lists the catalog keeps.
    ///
    /// # Errors
    ///
    /// As [`Subscription::http`].
    pub async fn subscribe(&self, filter: &Filter) -> Result<Subscription, SubscribeError> {
        self.connection.subscribe(filter.clone()).await
    }
}

impl Drop for Catalog {
    fn drop(&mut self) {
        self.keeper.abort();
    }
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snapshot = self.snapshot();
        f.debug_struct("Catalog")
            .field("generation", &snapshot.generation)
            .field("tools", &snapshot.tools.len())
            .field("prompts", &snapshot.prompts.len())
            .field("resources", &snapshot.resources.len())
            .field("templates", &snapshot.templates.len())
            .finish_non_exhaustive()
    }
}
