//! The live catalog a host keeps of a server ([`Catalog`]) and of several
//! ([`CatalogSet`]).
//!
//! A host does not want notifications; it wants the current list of tools.
//! [`Catalog`] keeps one server's tools, prompts, resources and
//! templates (and, if asked, watched resources' contents) live: it
//! discovers the server, listens for the list changes it advertises, and
//! fetches each list through its cursors, with one fetch in flight per list
//! and exactly one more for changes during it. An isolated change is fetched
//! after a 20 ms gather; a burst or a storm waits until it pauses for
//! 100 ms, never more than a second, so 1,000 changes in a second make one
//! or two fetches. After a re-listen (a server restarted) each list is
//! fetched once more. Fetches share the listen's connection, headers and
//! credentials hook.
//!
//! ```rust,no_run
//! use mcp_subscriptions_client::StdioClient;
//! use mcp_subscriptions_client::catalog::{Catalog, CatalogOptions, CatalogSet, Change, Endpoint};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let options = CatalogOptions::default().with_header("authorization", "Bearer token");
//! let catalog = Catalog::http("http://127.0.0.1:8808/mcp", options).await?;
//! for tool in catalog.snapshot().tools() {
//!     println!("{}: {:?}", tool.name, tool.description);
//! }
//! let mut changes = catalog.changes();
//! while let Some(change) = changes.next().await {
//!     if let Change::Tools(diff) = change {
//!         for tool in &diff.added {
//!             println!("+ tool {}", tool.name);
//!         }
//!         for edit in &diff.changed {
//!             println!("~ tool {}: {:?}", edit.new.name, edit.new.description);
//!         }
//!     }
//!     println!("tools health: {:?}", catalog.health().list(mcp_subscriptions_client::catalog::CatalogKind::Tools));
//! }
//!
//! // Several servers, HTTP and stdio, each failing alone (one that is
//! // down joins when it comes up), merged as `server/tool`.
//! let set = CatalogSet::open(
//!     [
//!         ("a".to_owned(), Endpoint::http("http://127.0.0.1:8801/mcp")),
//!         ("b".to_owned(), Endpoint::stdio(StdioClient::spawn("b-server", ["--stdio"])?)),
//!     ],
//!     CatalogOptions::default(),
//! )
//! .await;
//! // The servers that are up: one that went down keeps its last lists in
//! // the snapshot, marked not up (`is_up`), until it is back.
//! for (name, _tool) in set.snapshot().up().tools() {
//!     println!("{name}"); // a/search, b/search, ...
//! }
//! # Ok(()) }
//! ```
//!
//! `Catalog::stdio(&StdioClient::spawn(..)?, options)` does the same over
//! one stdio connection; `Catalog::wait_blocking` waits for the next
//! generation from a thread. A list no stream tells of refreshes by its
//! `ttlMs`; a broken page (malformed, a cursor that loops, an endless chain)
//! keeps the last good list, marked stale with the error. `watch --catalog`
//! prints the lists, then each change:
//!
//! ```text
//! $ cargo run --example watch -- --catalog http://127.0.0.1:8808/mcp
//! tools (13): test_add_tool test_edit_tool test_logging_tool ... test_trigger_tool_change
//! prompts (0):
//! resources (0):
//! templates (0):
//! + tool search
//! ~ tool search (description)
//! - tool search
//! health: listening again (attempt 1: ended abruptly: ...)
//! ```

mod connection;
mod diff;
mod endpoint;
mod entry;
mod fetcher;
mod health;
mod keeper;
mod live;
mod merged;
mod namespace;
mod options;
mod schedule;
mod set;
mod set_changes;
mod snapshot;

pub use diff::{Change, Changes, Diff, Edit};
pub use endpoint::Endpoint;
pub use entry::{CatalogKind, Contents, Keyed};
pub use health::{FetchHealth, Health, ListenState};
pub use live::Catalog;
pub use merged::Merged;
pub use namespace::{Namespace, Prefix};
pub use options::{
    CatalogOptions, DEFAULT_DEBOUNCE, DEFAULT_GATHER, DEFAULT_MAX_DELAY, DEFAULT_MAX_PAGES,
    DEFAULT_MIN_REFRESH, DEFAULT_REQUEST_TIMEOUT,
};
pub use set::{CatalogSet, JOIN_EVERY};
pub use set_changes::{ServerHealth, SetChange, SetChanges};
pub use snapshot::Snapshot;
