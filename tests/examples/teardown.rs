//! The two dialects of a graceful end (`--teardown complete|cancelled`)
//! as applications on the TypeScript and Python SDKs' clients read them:
//! the `complete` result as the graceful end, a server's
//! `notifications/cancelled` as a lost stream (TypeScript: `closed`
//! settles `remote`; Python: `SubscriptionLost` with no error), which
//! their applications answer with a new listen. Both end their listen
//! cleanly: nothing hangs or crashes.

#![cfg(feature = "client")]

use std::time::Duration;

use crate::support::example::HttpServer;
use crate::support::interop::{ListeningApp, Running};

#[tokio::test]
async fn the_typescript_and_python_clients_end_their_listen_cleanly_in_either_dialect() {
    for (teardown, app, ended) in [
        ("complete", ListeningApp::TypeScript, "closed 1 graceful"),
        ("cancelled", ListeningApp::TypeScript, "closed 1 remote"),
        ("complete", ListeningApp::Python, "complete 1"),
        ("cancelled", ListeningApp::Python, "lost 1 None"),
    ] {
        let server = HttpServer::start(&["--teardown", teardown]).await;
        let mut running = Running::start(app.command(&server.mcp_url()), app);
        let wait = Duration::from_secs(30);
        let acknowledged = running.line(wait).await;
        assert_eq!(
            acknowledged.as_deref(),
            Some("acknowledged 1"),
            "{app:?}, {teardown}"
        );
        // A graceful shutdown, in the server's dialect.
        server.interrupt();
        assert_eq!(
            running.line(wait).await.as_deref(),
            Some(ended),
            "{app:?}, {teardown}"
        );
    }
}
