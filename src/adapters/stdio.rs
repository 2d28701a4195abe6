//! stdio: one connection, many listen streams told apart by request id.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::RequestId;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex as AsyncMutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Streams, listen_request};
use crate::serve::{ListenService, ListenStream};
use crate::source::{CloseReason, Source};

type Writer = Arc<AsyncMutex<Pin<Box<dyn AsyncWrite + Send>>>>;
type Cancels = Arc<parking_lot::Mutex<HashMap<RequestId, CancellationToken>>>;

/// A newline-delimited JSON-RPC transport for rmcp (stdin/stdout or any
/// byte pipe) that serves `subscriptions/listen` itself.
///
/// Each listen request is validated (refusals come as JSON-RPC errors before
/// any acknowledgement) and served by its own task, which writes one message
/// and flushes it before pulling the next event, so the pipe paces the
/// source. `notifications/cancelled` for a listen request ends exactly that
/// stream and nothing more is written for it; the others go on. Every other
/// message passes to and from the rmcp service unchanged. When the input
/// ends, every stream's source is closed as disconnected.
///
/// ```no_run
/// use mcp_subscriptions::{Hub, ListenService, StdioTransport};
/// use rmcp::ServiceExt;
/// # #[derive(Clone)] struct MyServer;
/// # impl rmcp::ServerHandler for MyServer {}
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let hub = Hub::new();
/// let transport = StdioTransport::stdio(ListenService::new(hub.clone()));
/// MyServer.serve(transport).await?.waiting().await?;
/// # Ok(()) }
/// ```
pub struct StdioTransport<S: Source> {
    input: BufReader<Pin<Box<dyn AsyncRead + Send>>>,
    writer: Writer,
    listen: ListenService<S>,
    cancels: Cancels,
    /// Cancelled when the input ends or the transport closes; every stream's
    /// token is a child of it.
    closing: CancellationToken,
    tasks: TaskTracker,
}

impl<S> StdioTransport<S>
where
    S: Source + 'static,
    S::Handle: 'static,
{
    /// Serves over the process's stdin and stdout.
    pub fn stdio(listen: ListenService<S>) -> Self {
        Self::new(listen, tokio::io::stdin(), tokio::io::stdout())
    }

    /// Serves over any pair of byte streams (a pipe, a socket, an in-memory
    /// duplex in tests).
    pub fn new(
        listen: ListenService<S>,
        input: impl AsyncRead + Send + 'static,
        output: impl AsyncWrite + Send + 'static,
    ) -> Self {
        let input: Pin<Box<dyn AsyncRead + Send>> = Box::pin(input);
        let output: Pin<Box<dyn AsyncWrite + Send>> = Box::pin(output);
        Self {
            input: BufReader::new(input),
            writer: Arc::new(AsyncMutex::new(output)),
            listen,
            cancels: Arc::default(),
            closing: CancellationToken::new(),
            tasks: TaskTracker::new(),
        }
    }

    /// A handle on this transport's listen streams, for a graceful shutdown
    /// to wait on.
    pub fn streams(&self) -> Streams {
        Streams::new(self.tasks.clone())
    }

    /// Opens and spawns a listen stream, or returns its refusal to write.
    fn start(&self, id: RequestId, params: Option<&Value>) -> Option<Vec<u8>> {
        match self.listen.open(id.clone(), params) {
            Ok(stream) => {
                let token = self.closing.child_token();
                self.cancels.lock().insert(id.clone(), token.clone());
                self.tasks.spawn(serve(
                    stream,
                    token,
                    self.closing.clone(),
                    self.writer.clone(),
                    self.cancels.clone(),
                ));
                None
            }
            Err(refusal) => Some(refusal.to_message()),
        }
    }

    /// Ends the listen stream `message` cancels, if it is one of ours.
    fn cancel(&self, message: &Value) -> bool {
        let is_cancel =
            message.get("method").and_then(Value::as_str) == Some("notifications/cancelled");
        let id = message
            .pointer("/params/requestId")
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
        match (is_cancel, id) {
            (true, Some(id)) => match self.cancels.lock().remove(&id) {
                Some(token) => {
                    token.cancel();
                    true
                }
                None => false,
            },
            _ => false,
        }
    }
}

/// Writes one stream's messages until it ends or is cancelled.
async fn serve<S: Source>(
    mut stream: ListenStream<S>,
    token: CancellationToken,
    closing: CancellationToken,
    writer: Writer,
    cancels: Cancels,
) {
    loop {
        let message = tokio::select! {
            // Cancellation first: once asked to stop, nothing more is written.
            biased;
            () = token.cancelled() => {
                let reason = if closing.is_cancelled() {
                    CloseReason::Disconnected
                } else {
                    CloseReason::Cancelled
                };
                stream.cancel(reason);
                break;
            }
            message = stream.next_message() => message,
        };
        let Some(message) = message else { break };
        if write_line(&writer, &message).await.is_err() {
            stream.cancel(CloseReason::Disconnected);
            break;
        }
    }
    cancels.lock().remove(stream.id());
}

/// Writes one message and its newline, and flushes: the write completing
/// is what lets the stream pull again.
async fn write_line(writer: &Writer, message: &[u8]) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(message).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}

impl<S> Transport<RoleServer> for StdioTransport<S>
where
    S: Source + 'static,
    S::Handle: 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let bytes = serde_json::to_vec(&item)?;
            write_line(&writer, &bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut line = String::new();
        loop {
            line.clear();
            match self.input.read_line(&mut line).await {
                Ok(0) | Err(_) => {
                    self.closing.cancel();
                    return None;
                }
                Ok(_) => {}
            }
            let Ok(message) = serde_json::from_str::<Value>(line.trim()) else {
                // Not JSON: let rmcp's own parsing decide (it skips blanks).
                match serde_json::from_str(line.trim()) {
                    Ok(message) => return Some(message),
                    Err(_) => continue,
                }
            };
            if let Some(id) = listen_request(&message) {
                if let Some(refusal) = self.start(id, message.get("params")) {
                    // The pipe is gone if this fails; the input ends too.
                    let writer = self.writer.clone();
                    drop(write_line(&writer, &refusal).await);
                }
                continue;
            }
            if self.cancel(&message) {
                continue;
            }
            match serde_json::from_value(message) {
                Ok(message) => return Some(message),
                // Not a message rmcp knows; it would have skipped it too.
                Err(_) => continue,
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.closing.cancel();
        Ok(())
    }
}
