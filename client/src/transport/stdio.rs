//! Listening over stdio: many streams share one connection to a server
//! process, told apart by their subscription ids.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rmcp::model::RequestId;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::connect::Connect;
use crate::error::{ProtocolError, SubscribeError};
use crate::item::End;
use crate::options::SubscribeOptions;
use crate::protocol::Incoming;
use crate::protocol::{Expect, cancelled, listen_request};
use crate::request::{Request, message, outcome};
use crate::subscription::Subscription;
use crate::wire::{Received, Wire, WireStream};
use mcp_subscriptions::Filter;
use mcp_subscriptions::Next;

/// A line from the server for one stream: a message, or the text of a line
/// that was not JSON (every stream learns of it, since none can be named).
type Line = Result<Incoming, String>;

/// Each stream's inbox, by the JSON text of its request id.
type Routes = Mutex<HashMap<String, mpsc::Sender<Line>>>;

/// One connection: a writer task, a reader task routing lines to streams,
/// and the process when the client started it.
struct Connection {
    writes: mpsc::UnboundedSender<Vec<u8>>,
    routes: Arc<Routes>,
    /// Cancelled when the server's output ends.
    closed: CancellationToken,
    /// The server's process id, when the client started it.
    pid: Option<u32>,
    /// Killed when the connection is dropped.
    _child: Option<tokio::process::Child>,
}

impl Connection {
    fn new<R, W>(reader: R, writer: W, child: Option<tokio::process::Child>) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (writes, mut queued) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(line) = queued.recv().await {
                if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
            // Dropping the writer closes the server's stdin: it exits.
        });
        let routes: Arc<Routes> = Arc::default();
        let closed = CancellationToken::new();
        tokio::spawn(read_lines(reader, Arc::clone(&routes), closed.clone()));
        Self {
            writes,
            routes,
            closed,
            pid: child.as_ref().and_then(tokio::process::Child::id),
            _child: child,
        }
    }

    fn send(&self, message: &Value) -> bool {
        let mut line = serde_json::to_vec(message).expect("JSON serializes");
        line.push(b'\n');
        self.writes.send(line).is_ok()
    }
}

/// Routes each line to the stream it names: a response by its id, a
/// notification by its `_meta` subscription id. A stream whose inbox is
/// full holds the whole connection (its buffer's `Wait` policy).
async fn read_lines<R: AsyncRead + Unpin>(
    reader: R,
    routes: Arc<Routes>,
    closed: CancellationToken,
) {
    let mut lines = BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let targets: Vec<mpsc::Sender<Line>> = match serde_json::from_str::<Value>(&line) {
            Ok(message) => {
                let key = match message.get("method").and_then(Value::as_str) {
                    // A server's graceful end in that dialect may name its
                    // stream only by the request it cancels.
                    Some(crate::protocol::CANCELLED) => message.pointer("/params/requestId"),
                    Some(_) => message
                        .pointer("/params/_meta")
                        .and_then(|meta| meta.get(mcp_subscriptions::SubscriptionId::META_KEY)),
                    None => message.get("id"),
                };
                let sender = key.and_then(|key| routes.lock().get(&key.to_string()).cloned());
                if let Some(sender) = sender {
                    // The lock is not held across the send, which may wait.
                    let message = Incoming {
                        text: line,
                        value: message,
                    };
                    let _ = sender.send(Ok(message)).await;
                }
                continue;
            }
            Err(_) => routes.lock().values().cloned().collect(),
        };
        for target in targets {
            let _ = target.send(Err(line.clone())).await;
        }
    }
    closed.cancel();
    // Every inbox closes: each stream sees an abrupt end.
    routes.lock().clear();
}

type Spawn = Box<dyn Fn() -> std::io::Result<Connection> + Send + Sync>;

struct Inner {
    /// How to start the server again when the client started it.
    spawn: Option<Spawn>,
    connection: Mutex<Option<Arc<Connection>>>,
    next_id: AtomicU64,
}

/// A connection to an MCP server over stdio, shared by any number of
/// subscriptions (cheap to clone).
///
/// Started as a child process ([`StdioClient::spawn`]), which the client
/// starts again when a re-listening subscription finds it gone, or built
/// on an existing pair of pipes ([`StdioClient::new`]). Each subscription
/// is ended with `notifications/cancelled`; the others go on.
#[derive(Clone)]
pub struct StdioClient {
    inner: Arc<Inner>,
}

impl StdioClient {
    /// Starts `program` with `args`, speaking MCP on its stdin and stdout
    /// (its stderr is this process's). The process is killed when the last
    /// clone of the client and its last subscription are gone.
    ///
    /// # Errors
    ///
    /// When the process cannot be started.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn spawn<I, A>(program: impl Into<OsString>, args: I) -> std::io::Result<Self>
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        let program = program.into();
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let spawn: Spawn = Box::new(move || {
            let mut child = tokio::process::Command::new(&program)
                .args(&args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()?;
            let stdin = child.stdin.take().expect("piped");
            let stdout = child.stdout.take().expect("piped");
            Ok(Connection::new(stdout, stdin, Some(child)))
        });
        let connection = spawn()?;
        Ok(Self {
            inner: Arc::new(Inner {
                spawn: Some(spawn),
                connection: Mutex::new(Some(Arc::new(connection))),
                next_id: AtomicU64::new(1),
            }),
        })
    }

    /// Speaks MCP over an existing pair of pipes: the server's output to
    /// read, its input to write.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn new<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        Self {
            inner: Arc::new(Inner {
                spawn: None,
                connection: Mutex::new(Some(Arc::new(Connection::new(reader, writer, None)))),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// Listens for `requested` on this connection.
    ///
    /// # Errors
    ///
    /// A [`SubscribeError`]: the connection closed (and could not be
    /// started again), a refusal, a protocol error, or no acknowledgement
    /// within the options' timeout.
    pub async fn subscribe(
        &self,
        requested: &Filter,
        options: SubscribeOptions,
    ) -> Result<Subscription, SubscribeError> {
        Subscription::open(Arc::new(self.clone()), requested, options).await
    }

    /// The id of the server process the client started (the latest one,
    /// after a restart); `None` over pipes it was given.
    pub fn process_id(&self) -> Option<u32> {
        self.inner.connection.lock().as_ref().and_then(|c| c.pid)
    }

    /// Sends any other request on this connection (a `tools/call`, or the
    /// `resources/read` that refetches after [`Item::Resynced`](crate::Item::Resynced))
    /// and waits for its response: the `result`, or the JSON-RPC error.
    /// `_meta` names the protocol version and this crate as the client;
    /// what `params` already has there is kept.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::Refused`] with the error response,
    /// [`SubscribeError::Closed`] when the connection closed first.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, SubscribeError> {
        let params = match params {
            Value::Object(params) => params,
            Value::Null => Map::new(),
            other => {
                return Err(SubscribeError::Invalid(format!(
                    "params must be an object, not {other}"
                )));
            }
        };
        Request::request(self, method, params, &SubscribeOptions::default()).await
    }

    /// The live connection, started again if the server is gone and the
    /// client started it.
    fn connection(&self) -> Result<Arc<Connection>, SubscribeError> {
        let mut current = self.inner.connection.lock();
        if let Some(connection) = &*current
            && !connection.closed.is_cancelled()
        {
            return Ok(Arc::clone(connection));
        }
        let spawn = self
            .inner
            .spawn
            .as_ref()
            .ok_or_else(|| SubscribeError::Connect("the stdio connection is closed".into()))?;
        let connection = Arc::new(spawn().map_err(|err| SubscribeError::Connect(err.to_string()))?);
        *current = Some(Arc::clone(&connection));
        Ok(connection)
    }
}

impl Request for StdioClient {
    async fn request(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &SubscribeOptions,
    ) -> Result<Value, SubscribeError> {
        let connection = self.connection()?;
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("request-{n}").into());
        let key = serde_json::to_string(&id).expect("an id serializes");
        let (sender, mut inbox) = mpsc::channel(1);
        connection.routes.lock().insert(key.clone(), sender);
        let sent = connection.send(&message(&id, method, params, options));
        let answer = if sent { inbox.recv().await } else { None };
        connection.routes.lock().remove(&key);
        match answer {
            Some(Ok(response)) => outcome(response.value),
            Some(Err(line)) => Err(ProtocolError::InvalidJson(format!("{line:.80}")).into()),
            None => Err(SubscribeError::Closed),
        }
    }
}

impl fmt::Debug for StdioClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioClient")
            .field("restartable", &self.inner.spawn.is_some())
            .finish_non_exhaustive()
    }
}

/// One stream's inbox on a connection.
pub(crate) struct Inbox {
    connection: Arc<Connection>,
    id: RequestId,
    key: String,
    lines: mpsc::Receiver<Line>,
}

impl Wire for Inbox {
    async fn recv(&mut self) -> Result<Received, String> {
        match self.lines.recv().await {
            None => Err("the server's output ended".into()),
            Some(line) => {
                Ok(line.map_err(|line| ProtocolError::InvalidJson(format!("{line:.80}"))))
            }
        }
    }

    fn cancel(self) {
        // Nothing more for this id is routed (on drop); the server stops
        // the stream.
        if !self.connection.closed.is_cancelled() {
            self.connection.send(&cancelled(&self.id));
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.connection.routes.lock().remove(&self.key);
    }
}

impl Connect for StdioClient {
    type Stream = WireStream<Inbox>;

    async fn open(
        &self,
        requested: &Filter,
        options: &SubscribeOptions,
    ) -> Result<(Filter, Self::Stream), SubscribeError> {
        let connection = self.connection()?;
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("listen-{n}").into());
        let key = serde_json::to_string(&id).expect("an id serializes");
        // One message in flight per stream: the stream's buffer paces the
        // connection.
        let (sender, lines) = mpsc::channel(1);
        connection.routes.lock().insert(key.clone(), sender);
        let inbox = Inbox {
            connection: Arc::clone(&connection),
            id: id.clone(),
            key,
            lines,
        };
        if !connection.send(&listen_request(&id, requested, options)) {
            return Err(SubscribeError::Closed);
        }
        WireStream::acknowledged(inbox, Expect::new(&id, requested)).await
    }

    fn end(stream: &Self::Stream, last: Next) -> End {
        stream.end(last)
    }
}
