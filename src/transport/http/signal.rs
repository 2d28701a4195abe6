//! The usual shutdown signal: Ctrl-C or SIGTERM, then the hub completed.

use std::future::Future;
use std::time::Duration;

use crate::hub::Hub;

/// How long [`serve_until_drained`](super::serve_until_drained)'s streams
/// are usually given to write their last message: 5 s, long enough for a
/// reading client to get its `complete` result, short enough that one that
/// stopped reading does not hold a deploy up.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(5);

/// Resolves once the process is asked to stop (Ctrl-C, or SIGTERM on Unix,
/// which is how a container is stopped) and it has completed `hub`, so
/// that every listen stream has its `complete` result to write: the
/// `shutdown` that [`serve_until_drained`](super::serve_until_drained)
/// takes.
///
/// Where the signal cannot be listened to, it completes the hub at once
/// rather than never.
pub fn shutdown_signal(hub: &Hub) -> impl Future<Output = ()> + Send + 'static {
    let hub = hub.clone();
    async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut terminate) => {
                    tokio::select! {
                        () = ctrl_c => {}
                        _ = terminate.recv() => {}
                    }
                }
                Err(_) => ctrl_c.await,
            }
        }
        #[cfg(not(unix))]
        ctrl_c.await;
        hub.complete();
    }
}
