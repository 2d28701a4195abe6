//! A stdio transport on in-memory pipes, its receive loop running on a
//! task, and the client's ends of the pipes.

use std::time::Duration;

use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::{Source, Streams};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// The client's ends: what it writes to the server, and the server's
/// lines.
pub struct Pipe {
    out: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
}

/// Builds a transport with `make` from the server's ends of two pipes (its
/// output `width` bytes wide), runs its receive loop, and hands back its
/// streams and the client's ends.
pub fn serve<S>(
    width: usize,
    make: impl FnOnce(DuplexStream, DuplexStream) -> StdioTransport<S>,
) -> (Streams, Pipe)
where
    S: Source + 'static,
    S::Handle: 'static,
{
    let (out, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, client_in) = tokio::io::duplex(width);
    let mut transport = make(server_in, server_out);
    let streams = transport.streams();
    tokio::spawn(async move {
        use rmcp::transport::Transport;
        while Transport::<rmcp::RoleServer>::receive(&mut transport)
            .await
            .is_some()
        {}
    });
    let lines = BufReader::new(client_in).lines();
    (streams, Pipe { out, lines })
}

impl Pipe {
    /// Writes `message` as one line.
    pub async fn send(&mut self, message: &Value) {
        self.out
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The server's next line, parsed; panics after 5 s of silence.
    pub async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("a line within 5 s")
            .unwrap()
            .expect("the pipe is open");
        serde_json::from_str(&line).unwrap()
    }
}
