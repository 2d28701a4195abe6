//! The older revisions' sessions, served from the same hub as listen
//! streams.
//!
//! Before 2026-07-28 a client learned of changes on its session: it called
//! `initialize`, then `resources/subscribe` for each URI it wanted updates
//! of, and the server sent `notifications/*/list_changed` and
//! `notifications/resources/updated` on the session itself (stdio's one
//! connection; on Streamable HTTP, the session that `Mcp-Session-Id` names
//! and its GET stream). Much of the installed base of hosts still speaks
//! 2025-06-18 or 2025-11-25.
//!
//! [`WithSubscriptions`] wraps a server's handler and serves them from the
//! hub (its docs tell how); `state` holds one session: its listener and the
//! task that sends its events.

mod handler;
mod state;

pub use handler::WithSubscriptions;
