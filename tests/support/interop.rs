//! Servers no one here wrote, run as child processes for the client's
//! interop tests: rmcp alone (`examples/rmcp_listen.rs`, built by
//! `cargo test`), the official TypeScript SDK (npm) and the official
//! Python SDK (PyPI), both installed by `.ci/interop-install` under
//! `target/interop`. When they are missing, the first test that needs them
//! runs that script (so the README's test command works on a fresh
//! machine); if it fails, the test fails naming it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

const INSTALL: &str = "run `.ci/interop-install` (npm and python3 with venv)";

/// A server a test can start over HTTP or stdio.
#[derive(Clone, Copy, Debug)]
pub enum Server {
    /// `examples/rmcp_listen.rs`: rmcp 3.11's own listen handler.
    Rmcp,
    /// `tests/interop/typescript_server.cjs`: `@modelcontextprotocol/server`
    /// (the TypeScript SDK's v2 line).
    TypeScript,
    /// `tests/interop/typescript_v1_server.cjs`: `@modelcontextprotocol/sdk`
    /// 1.x, which has no `subscriptions/listen`.
    TypeScriptV1,
    /// `tests/interop/python_server.py`: PyPI `mcp` 2.x.
    Python,
}

/// The workspace's root, above this crate's.
fn root_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn interop_dir() -> PathBuf {
    root_dir().join("target").join("interop")
}

/// Runs `.ci/interop-install` once per test process when the packages are
/// not there yet.
fn ensure_installed() {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(|| {
        let node = interop_dir().join("node/node_modules/@modelcontextprotocol/server");
        let python = interop_dir().join("py/bin/python");
        let python_v1 = interop_dir().join("py1/bin/python");
        if node.exists() && python.exists() && python_v1.exists() {
            return;
        }
        let status = std::process::Command::new(root_dir().join(".ci/interop-install"))
            .status()
            .unwrap_or_else(|err| panic!("{INSTALL}: {err}"));
        assert!(status.success(), "`.ci/interop-install` failed: {INSTALL}");
    });
}

fn node_modules() -> PathBuf {
    ensure_installed();
    let modules = interop_dir().join("node").join("node_modules");
    for package in ["server", "node", "client", "sdk"] {
        let manifest = modules
            .join("@modelcontextprotocol")
            .join(package)
            .join("package.json");
        assert!(
            manifest.exists(),
            "{} is missing: {INSTALL}",
            manifest.display()
        );
    }
    modules
}

fn python() -> PathBuf {
    ensure_installed();
    let python = interop_dir().join("py").join("bin").join("python");
    assert!(
        python.exists(),
        "{} is missing: {INSTALL}",
        python.display()
    );
    let sdk = std::process::Command::new(&python)
        .args(["-c", "import mcp.server.subscriptions"])
        .status()
        .expect("the venv's python runs");
    assert!(
        sdk.success(),
        "the mcp package is missing from {}: {INSTALL}",
        python.display()
    );
    python
}

/// An application on another SDK's 2026-07-28 client that listens to a
/// server and listens again when its stream is lost, as that SDK tells it
/// to (`tests/interop/*_listen_again.*`): it prints `acknowledged N`, and
/// how each stream ended.
#[derive(Clone, Copy, Debug)]
pub enum ListeningApp {
    /// `@modelcontextprotocol/client` 2.x.
    TypeScript,
    /// PyPI `mcp` 2.x.
    Python,
}

impl ListeningApp {
    /// The program and arguments that listen to `url`, and again when a
    /// stream is lost (`tests/interop/*_listen_again.*`).
    pub fn command(self, url: &str) -> (OsString, Vec<OsString>) {
        self.app("listen_again", url)
    }

    /// The program and arguments that make each kind of request a gateway
    /// at `url` forwards, then listen (`tests/interop/*_gateway_client.*`).
    pub fn gateway_client(self, url: &str) -> (OsString, Vec<OsString>) {
        self.app("gateway_client", url)
    }

    /// The program and arguments that run `code`, a program of the docs
    /// in this SDK's language: JavaScript as an ES module beside the
    /// installed packages (so that its imports resolve), Python with the
    /// venv's interpreter. Written to a file named for `name`.
    pub fn program(self, name: &str, code: &str) -> (OsString, Vec<OsString>) {
        let (program, path) = match self {
            Self::TypeScript => {
                let modules = node_modules();
                let dir = modules.parent().expect("node_modules has a parent");
                ("node".into(), dir.join(format!("{name}.mjs")))
            }
            Self::Python => (
                python().into_os_string(),
                std::env::temp_dir().join(format!("{name}-{}.py", std::process::id())),
            ),
        };
        std::fs::write(&path, code).expect("the program is written");
        (program, vec![path.into_os_string()])
    }

    /// `tests/interop/<sdk>_<name>.<ext>` run against `url`.
    fn app(self, name: &str, url: &str) -> (OsString, Vec<OsString>) {
        match self {
            Self::TypeScript => (
                "node".into(),
                vec![
                    script(&format!("typescript_{name}.cjs")),
                    node_modules().into(),
                    url.into(),
                ],
            ),
            Self::Python => (
                python().into_os_string(),
                vec![script(&format!("python_{name}.py")), url.into()],
            ),
        }
    }
}

/// An application of another SDK running, read a line at a time.
pub struct Running {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// Its name in failures.
    name: String,
}

impl Running {
    /// Starts `program` with `args` (a `command` of this module), called
    /// `name` in failures.
    pub fn start((program, args): (OsString, Vec<OsString>), name: impl std::fmt::Debug) -> Self {
        let name = format!("{name:?}");
        let mut child = Command::new(&program)
            .args(&args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("{name} runs ({program:?}): {err}"));
        let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        Self { child, lines, name }
    }

    /// The next line it prints within `within`; `None` once it ends.
    pub async fn line(&mut self, within: Duration) -> Option<String> {
        tokio::time::timeout(within, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{} says something within {within:?}", self.name))
            .expect("its output reads")
    }

    /// Waits at most `within` for it to exit, and says whether it exited
    /// cleanly.
    pub async fn exits_cleanly(mut self, within: Duration) -> bool {
        tokio::time::timeout(within, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("{} exits within {within:?}", self.name))
            .expect("it was started")
            .success()
    }
}

/// A client of an older revision (2025-11-25), which plays one scenario
/// against the example server (`tests/interop/*_v1_client.*`).
#[derive(Clone, Copy, Debug)]
pub enum OlderClient {
    /// `@modelcontextprotocol/sdk` 1.x.
    TypeScriptV1,
    /// PyPI `mcp` 1.x.
    PythonV1,
}

impl OlderClient {
    /// The program and arguments that play the scenario against `server`:
    /// `["http", URL]`, or `["stdio", COMMAND, ARG...]`.
    pub fn command(self, server: &[OsString]) -> (OsString, Vec<OsString>) {
        match self {
            Self::TypeScriptV1 => {
                let mut args = vec![script("typescript_v1_client.cjs"), node_modules().into()];
                args.extend_from_slice(server);
                ("node".into(), args)
            }
            Self::PythonV1 => {
                ensure_installed();
                let python = interop_dir().join("py1").join("bin").join("python");
                let mut args = vec![script("python_v1_client.py")];
                args.extend_from_slice(server);
                (python.into_os_string(), args)
            }
        }
    }
}

/// `target/<profile>/examples/rmcp_listen`, next to this test's own binary.
fn rmcp_example() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from target/<profile>/deps");
    let path = profile_dir.join("examples").join("rmcp_listen");
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds the example",
        path.display()
    );
    path
}

fn script(name: &str) -> OsString {
    root_dir()
        .join("tests")
        .join("interop")
        .join(name)
        .into_os_string()
}

impl Server {
    /// The program and arguments that start it in `mode` (`http` or
    /// `stdio`).
    pub fn command(self, mode: &str) -> (OsString, Vec<OsString>) {
        match self {
            Self::Rmcp => {
                let args = if mode == "http" {
                    vec!["--http".into()]
                } else {
                    vec![]
                };
                (rmcp_example().into_os_string(), args)
            }
            Self::TypeScript | Self::TypeScriptV1 => {
                let name = match self {
                    Self::TypeScript => "typescript_server.cjs",
                    _ => "typescript_v1_server.cjs",
                };
                let modules = node_modules().into_os_string();
                ("node".into(), vec![script(name), mode.into(), modules])
            }
            Self::Python => (
                python().into_os_string(),
                vec![script("python_server.py"), mode.into()],
            ),
        }
    }

    /// Starts it over HTTP on a loopback port of its own.
    pub async fn http(self) -> HttpServer {
        let (program, args) = self.command("http");
        let mut child = Command::new(&program)
            .args(&args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("{self:?} starts ({program:?}): {err}"));
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        // Node and Python take seconds to start on a loaded machine.
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{self:?} says where it listens"))
            .unwrap()
            .unwrap_or_else(|| panic!("{self:?} exited before listening"));
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        // Whatever else it prints is read and dropped, so that it never
        // blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        HttpServer { _child: child, url }
    }
}

/// A server process listening over HTTP; killed when dropped.
pub struct HttpServer {
    _child: Child,
    /// Its MCP endpoint.
    pub url: String,
}
