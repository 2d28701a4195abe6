//! Waiting for a transport's streams at shutdown, and cutting those that
//! would not finish.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long cut streams get to notice before `finish_within` returns.
const CUT_GRACE: Duration = Duration::from_secs(1);

/// The streams a transport is serving, to wait for at shutdown.
#[derive(Debug, Clone)]
pub struct Streams {
    tasks: TaskTracker,
    /// Cancelled to cut every stream still open: each transport's streams
    /// watch it.
    cut: CancellationToken,
}

/// What [`Streams::finish_within`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Streams open when the shutdown began.
    pub open: usize,
    /// Streams still open at the deadline, which were cut without their
    /// last message (a client that never reads, say).
    pub cut: usize,
}

impl Streams {
    pub(crate) fn new(tasks: TaskTracker, cut: CancellationToken) -> Self {
        Self { tasks, cut }
    }

    /// Resolves once every stream has written its last message.
    ///
    /// A graceful shutdown completes the source (for example
    /// [`Hub::complete`](crate::Hub::complete)) and then awaits this before
    /// the process exits, so each stream's end reaches its client.
    pub async fn finished(&self) {
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Waits at most `deadline` for every stream to write its last message,
    /// then cuts those still open (their sources closed as disconnected),
    /// counts them and logs a warning. Complete the source first (for
    /// example [`Hub::complete`](crate::Hub::complete)), so each stream has
    /// a last message to write.
    ///
    /// A cut HTTP stream ends the next time hyper polls its body; one whose
    /// client stopped reading ends when its connection is dropped, which an
    /// HTTP server's own shutdown does.
    pub async fn finish_within(&self, deadline: Duration) -> Drained {
        let open = self.len();
        if tokio::time::timeout(deadline, self.finished())
            .await
            .is_ok()
        {
            return Drained { open, cut: 0 };
        }
        let cut = self.len();
        self.cut.cancel();
        tracing::warn!(
            target: "mcp_subscriptions",
            open,
            cut,
            deadline_ms = deadline.as_millis() as u64,
            "streams cut at the shutdown deadline"
        );
        let _ = tokio::time::timeout(CUT_GRACE, self.tasks.wait()).await;
        Drained { open, cut }
    }

    /// How many streams are being served now.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no stream is being served.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}
