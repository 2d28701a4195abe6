//! How a graceful end is said on the wire: two dialects are in use.

/// How a stream says its graceful end (its source completed: a shutdown,
/// [`Hub::complete`](crate::Hub::complete))
/// ([`ListenService::with_teardown`](crate::ListenService::with_teardown)).
///
/// The subscriptions page of the specification, rmcp, and the TypeScript
/// and Python SDKs end a stream with a `complete` result to the listen
/// request, and their clients read it as the graceful end; they read a
/// server's `notifications/cancelled` as a lost stream (the TypeScript
/// client's `closed` settles `"remote"`, the Python client raises
/// `SubscriptionLost`), after which their applications listen again. Some
/// gateways (IBM's ContextForge) expect `notifications/cancelled` naming
/// the listen request instead, as another page of the specification has
/// it. Keep the default unless the peer in front of the server asks for
/// the other. The crate's own client reads both as a graceful end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Teardown {
    /// A `complete` result to the listen request, with the server's info.
    #[default]
    Complete,
    /// `notifications/cancelled` naming the listen request
    /// (`{"requestId": <id>, "reason": "server shutting down"}`), and
    /// nothing more for it.
    Cancelled,
}
