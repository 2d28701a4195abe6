//! Waiting for a transport's streams at shutdown.

use tokio_util::task::TaskTracker;

/// The streams a transport is serving, to wait for at shutdown.
#[derive(Debug, Clone)]
pub struct Streams {
    tasks: TaskTracker,
}

impl Streams {
    pub(crate) fn new(tasks: TaskTracker) -> Self {
        Self { tasks }
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

    /// How many streams are being served now.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no stream is being served.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}
