//! Serving listen streams over stdio (feature `stdio`): one connection,
//! many listen streams told apart by request id, everything else passed to
//! rmcp.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use bytes::BufMut;
use rmcp::RoleServer;
use rmcp::model::{ErrorData, GetExtensions, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex as AsyncMutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

// The classification every line goes through, the same as over HTTP.
// Hidden, as `http`'s is (the fuzz crate drives it); re-exported here too
// so that a build with `stdio` alone still has a public path to the types
// it names.
#[doc(hidden)]
pub use crate::transport::incoming::{Incoming, classify};

use crate::audience::Principal;
use crate::context::{OpenContext, TransportKind};
use crate::serve::{ListenService, ListenStream};
use crate::source::{CloseReason, Source, SourceHandle};
use crate::sync::Mutex;
use crate::transport::incoming::reply_id;
use crate::transport::request::listen_request;
use crate::transport::streams::Streams;
use crate::wire::response::{error_reply, error_response};
use crate::wire::{Message, request_id_json};

type Writer = Arc<AsyncMutex<Pin<Box<dyn AsyncWrite + Send>>>>;
/// Open streams by request id, each with a serial number that tells a
/// stream's own entry from a later one under the same id.
type Cancels = Arc<Mutex<HashMap<RequestId, (u64, CancellationToken)>>>;

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
/// use mcp_subscriptions::stdio::StdioTransport;
/// use mcp_subscriptions::{Hub, ListenService};
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
    /// The input line read so far, kept across cancelled reads.
    line: Vec<u8>,
    writer: Writer,
    listen: ListenService<S>,
    cancels: Cancels,
    serial: u64,
    /// Cancelled when the input ends or the transport closes; every stream's
    /// token is a child of it.
    closing: CancellationToken,
    tasks: TaskTracker,
    /// Who every stream of this connection is served as.
    principal: Option<Principal>,
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
            line: Vec::new(),
            writer: Arc::new(AsyncMutex::new(output)),
            listen,
            cancels: Arc::default(),
            serial: 0,
            closing: CancellationToken::new(),
            principal: None,
            tasks: TaskTracker::new(),
        }
    }

    /// Serves every stream of this connection as `principal`: a stdio
    /// server runs for one client, which the process that started it knows.
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// A handle on this transport's listen streams, for a graceful shutdown
    /// to wait on.
    pub fn streams(&self) -> Streams {
        Streams::new(self.tasks.clone(), self.closing.clone())
    }

    /// Opens and spawns a listen stream, or returns the error response to
    /// write instead.
    fn start(&mut self, id: RequestId, params: Option<&Value>) -> Option<Vec<u8>> {
        // A second stream under an id still open could not be cancelled
        // apart from the first: refuse it, as JSON-RPC ids must be unique.
        if self.cancels.lock().contains_key(&id) {
            let error =
                ErrorData::invalid_request("a listen request with this id is still open", None);
            return Some(error_response(&request_id_json(&id), &error));
        }
        let mut context = OpenContext::default().with_transport(TransportKind::Stdio);
        context.principal = self.principal.clone();
        let stream = match self.listen.open_with(context, id.clone(), params) {
            Ok(stream) => stream,
            Err(refusal) => return Some(refusal.to_message()),
        };
        let token = self.closing.child_token();
        self.serial += 1;
        self.cancels.lock().insert(id, (self.serial, token.clone()));
        let span = tracing::info_span!(
            target: "mcp_subscriptions",
            "listen stream",
            transport = "stdio",
            subscription_id = ?stream.id(),
        );
        let served = serve(
            stream,
            self.serial,
            token,
            self.closing.clone(),
            self.writer.clone(),
            self.cancels.clone(),
        );
        self.tasks.spawn(served.instrument(span));
        None
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
                Some((_, token)) => {
                    token.cancel();
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// Writes `message` from a task of its own, so that `receive` never
    /// awaits a write (rmcp drops its future whenever it sends).
    fn reply(&self, message: Vec<u8>) {
        let writer = self.writer.clone();
        self.tasks.spawn(async move {
            // The pipe is gone if this fails; the input ends too.
            let _ = write_line(&mut *writer.lock().await, message).await;
        });
    }

    /// Handles one complete input line: a listen request or its cancel is
    /// ours; anything rmcp can read is returned for it.
    fn handle(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Only JSON's own whitespace is trimmed, and the bytes go to the
        // parser as they are: a line that is not UTF-8 is a parse error,
        // not silence.
        let text = line.trim_ascii();
        if text.is_empty() {
            return None;
        }
        // Garbage gets `-32700` or `-32600` here, as over HTTP.
        let message = match classify(text) {
            Ok(incoming) => incoming.into_message(),
            Err(err) => {
                self.reply(error_reply(&reply_id(text), &err.to_error_data()));
                return None;
            }
        };
        if let Some(id) = listen_request(&message) {
            if let Some(refusal) = self.start(id, message.get("params")) {
                self.reply(refusal);
            }
            return None;
        }
        if self.cancel(&message) {
            return None;
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(message) {
            Ok(mut message) => {
                // The connection's principal reaches rmcp's handler too (an
                // older revision's session is opened there), as a layer's
                // does over HTTP.
                if let (Some(principal), JsonRpcMessage::Request(request)) =
                    (&self.principal, &mut message)
                {
                    request.request.extensions_mut().insert(principal.clone());
                }
                Some(message)
            }
            Err(_) => {
                let error = ErrorData::invalid_request("Invalid request", None);
                self.reply(error_reply(&id, &error));
                None
            }
        }
    }
}

/// Writes one stream's messages until it ends or is cancelled.
async fn serve<H: SourceHandle>(
    mut stream: ListenStream<H>,
    serial: u64,
    token: CancellationToken,
    closing: CancellationToken,
    writer: Writer,
    cancels: Cancels,
) {
    let cancelled = |stream: &mut ListenStream<H>| {
        let reason = if closing.is_cancelled() {
            CloseReason::Disconnected
        } else {
            CloseReason::Cancelled
        };
        stream.cancel(reason);
    };
    loop {
        let message = tokio::select! {
            // Cancellation first: once asked to stop, nothing more is written.
            biased;
            () = token.cancelled() => break cancelled(&mut stream),
            message = stream.next_message() => message,
        };
        let Some(message) = message else { break };
        // Another stream may hold the pipe for a while (a client slow to
        // read); a cancel that comes meanwhile still stops this message.
        let mut out = tokio::select! {
            biased;
            () = token.cancelled() => break cancelled(&mut stream),
            out = writer.lock() => out,
        };
        if token.is_cancelled() {
            break cancelled(&mut stream);
        }
        // A write the client never reads ends only when the transport is
        // closing (its shutdown deadline passed): a half-written line
        // matters no more then. A client's own cancel never cuts a write,
        // which would leave the other streams a broken line.
        let written = tokio::select! {
            biased;
            () = closing.cancelled() => break cancelled(&mut stream),
            written = write_line(&mut *out, message) => written,
        };
        if written.is_err() {
            stream.cancel(CloseReason::Disconnected);
            break;
        }
    }
    let mut cancels = cancels.lock();
    // Only our own entry: the id may already serve a newer stream.
    if cancels.get(stream.id()).is_some_and(|(s, _)| *s == serial) {
        cancels.remove(stream.id());
    }
}

/// Writes one message and its newline in one write, and flushes: the write
/// completing is what lets the stream pull again.
async fn write_line(
    out: &mut (dyn AsyncWrite + Send + Unpin),
    message: impl Into<Message>,
) -> io::Result<()> {
    let message = message.into();
    let mut line = Vec::with_capacity(message.len() + 1);
    line.put(message);
    line.put_u8(b'\n');
    out.write_all(&line).await?;
    out.flush().await
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
            write_line(&mut *writer.lock().await, bytes).await
        }
    }

    /// Cancel-safe, as rmcp needs (it drops this future whenever it sends):
    /// a partly read line stays in `self.line` for the next call.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.input.read_until(b'\n', &mut self.line).await {
                Ok(0) | Err(_) => {
                    self.closing.cancel();
                    return None;
                }
                Ok(_) => {}
            }
            // A whole line is in: nothing below awaits, so no cancel can
            // strike between taking it and handling it.
            let line = std::mem::take(&mut self.line);
            if let Some(message) = self.handle(&line) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.closing.cancel();
        Ok(())
    }
}
