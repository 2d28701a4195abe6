//! The example server (`examples/server.rs`, built by `cargo test`) run as a
//! child process, and rmcp clients for it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, Command};

pub type Client = RunningService<RoleClient, ClientConfig>;

/// `target/<profile>/examples/server`, next to this test's own binary.
pub fn binary() -> PathBuf {
    example("server")
}

/// `target/<profile>/examples/<name>`, next to this test's own binary.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds the examples",
        path.display()
    );
    path
}

/// The example server on a loopback port of its own.
pub struct HttpServer {
    pub child: Child,
    pub base: String,
}

impl HttpServer {
    pub async fn start(args: &[&str]) -> Self {
        Self::start_on("127.0.0.1:0", args).await
    }

    /// The example server bound to `addr`.
    pub async fn start_on(addr: &str, args: &[&str]) -> Self {
        Self::spawn(addr, args, Stdio::inherit()).await
    }

    /// The example server bound to `addr`, its log (stderr) discarded:
    /// for runs whose every stream it would log.
    pub async fn start_quiet_on(addr: &str, args: &[&str]) -> Self {
        Self::spawn(addr, args, Stdio::null()).await
    }

    /// The example server, and the lines of its log (stderr).
    pub async fn start_logged(args: &[&str]) -> (Self, Lines<BufReader<ChildStderr>>) {
        let mut server = Self::spawn("127.0.0.1:0", args, Stdio::piped()).await;
        let stderr = server.child.stderr.take().expect("piped");
        (server, BufReader::new(stderr).lines())
    }

    /// The example server allowed at most `open_files` open files (`ulimit
    /// -n`, through `sh`).
    pub async fn start_with_open_files(open_files: u32, args: &[&str]) -> Self {
        let mut command = Command::new("sh");
        command
            .args(["-c", r#"ulimit -n "$0" && exec "$@""#])
            .arg(open_files.to_string())
            .arg(binary());
        Self::spawn_from(command, "127.0.0.1:0", args, Stdio::inherit()).await
    }

    async fn spawn(addr: &str, args: &[&str], stderr: Stdio) -> Self {
        Self::spawn_from(Command::new(binary()), addr, args, stderr).await
    }

    async fn spawn_from(mut command: Command, addr: &str, args: &[&str], stderr: Stdio) -> Self {
        let mut child = command
            .args(["--bind", addr])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("the example server starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server says where it listens")
            .unwrap()
            .expect("a line on stdout");
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        let base = url.trim_end_matches("/mcp").to_owned();
        Self { child, base }
    }

    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn addr(&self) -> String {
        self.base.trim_start_matches("http://").to_owned()
    }

    /// An rmcp client speaking 2026-07-28 over Streamable HTTP.
    pub async fn client(&self) -> Client {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.mcp_url()),
        );
        modern(transport).await
    }

    /// Calls one of the server's tools as the bearer of `token`, as a
    /// 2026-07-28 client does without a session; the text it answers.
    pub async fn call_as(&self, token: &str, tool: &str, arguments: Value) -> String {
        let request = json!({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": request_meta(),
        }});
        let authorization = format!("Bearer {token}");
        let headers = [("authorization", authorization.as_str())];
        let reply = super::http::post(&self.base, &request, &headers)
            .await
            .reply()
            .await;
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool} failed: {reply}"))
            .to_owned()
    }

    /// `GET /stats` as JSON.
    pub async fn stats(&self) -> Value {
        let (_, body) = raw_http(&self.addr(), "GET", "/stats", None).await;
        serde_json::from_str(&body).expect("stats are JSON")
    }

    /// Waits until `/stats` says `listeners_active == n`.
    pub async fn wait_for_active(&self, n: u64, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let active = self.stats().await["listeners_active"].as_u64().unwrap();
            if active == n {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "listeners_active stayed {active}, expected {n}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends SIGINT, as Ctrl-C would.
    pub fn interrupt(&self) {
        self.signal("-INT");
    }

    /// Sends SIGTERM, as a deployment stopping the process would.
    pub fn terminate(&self) {
        self.signal("-TERM");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("running") as i32;
        // SAFETY-free: kill(1) with the pid, no libc needed.
        let status = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// The example gateway started with `args`, and the URL it says it
/// listens on.
pub async fn start_gateway(args: &[String]) -> (Child, String) {
    let mut child = Command::new(example("gateway"))
        .args(args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example gateway starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the gateway says where it listens")
        .unwrap()
        .expect("the gateway exited before listening");
    let url = line.strip_prefix("listening on ").unwrap().to_owned();
    (child, url)
}

/// rmcp's own Streamable HTTP client over the Unix domain socket at
/// `path`, speaking 2026-07-28 to `http://localhost/mcp` there.
pub async fn unix_client(path: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_unix_socket(path, "http://localhost/mcp");
    modern(transport).await
}

/// The example server speaking over its stdin and stdout.
pub async fn stdio_client(args: &[&str]) -> (Child, Client) {
    let mut child = Command::new(binary())
        .arg("--stdio")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example server starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let client = modern((stdout, stdin)).await;
    (child, client)
}

async fn modern<T, E, A>(transport: T) -> Client
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    ClientConfig::default()
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the client connects")
}

/// Calls one of the example server's tools.
pub async fn call(client: &Client, tool: &'static str, arguments: Value) {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|err| panic!("{tool} failed: {err}"));
}

/// The `_meta` every 2026-07-28 request carries.
pub fn request_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A `subscriptions/listen` request with id `id` for `notifications`.
pub fn listen_request(id: Value, notifications: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"_meta": request_meta(), "notifications": notifications}})
}

/// The text of one HTTP/1.1 request as an MCP client sends it; `headers`
/// are extra lines, each ending in CRLF.
pub fn http_request(method: &str, path: &str, host: &str, headers: &str, body: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends `request` on a fresh connection to `addr` and hands the socket
/// back, unread.
pub async fn send_raw(addr: &str, request: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// One HTTP/1.1 request over a fresh connection; the status line and body
/// (the whole response, for streams that end).
pub async fn raw_http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = http_request(method, path, addr, "Connection: close\r\n", &body);
    let mut stream = send_raw(addr, &request).await;
    let mut response = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("the response ends")
    .unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_owned(), body.to_owned())
}
