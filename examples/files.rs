//! A folder served as MCP resources, kept live by a directory watcher.
//!
//! ```sh
//! cargo run --example files -- ./notes              # Streamable HTTP on 127.0.0.1:8809
//! cargo run --example files -- ./notes --bind 127.0.0.1:0
//! ```
//!
//! `resources/list` lists the folder's files, `resources/read` reads one,
//! and the tool `write_file {name, text}` writes one. A `notify` watcher
//! publishes what changes, gathering its reports for 50 ms so that one
//! write is one notification: a file created, removed or renamed is
//! `notifications/resources/list_changed`, and each file whose content
//! changed (or that came or went) is `notifications/resources/updated`
//! for its URI. Listen streams (2026-07-28) and older clients' sessions
//! (`resources/subscribe`) both get them, from one hub.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_subscriptions::{Hub, ListenService, WithSubscriptions, http};
use notify::event::{EventKind, ModifyKind};
use notify::{RecursiveMode, Watcher};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    ErrorData, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::Deserialize;

/// The server: the folder, and its one tool.
#[derive(Clone)]
struct Files {
    dir: PathBuf,
    tool_router: ToolRouter<Self>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct WriteArgs {
    /// The file's name in the folder (no path).
    name: String,
    /// What to write into it.
    text: String,
}

#[tool_router]
impl Files {
    fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Write a file in the served folder")]
    fn write_file(&self, Parameters(args): Parameters<WriteArgs>) -> Result<String, ErrorData> {
        if args.name.contains(['/', '\\']) || args.name.starts_with('.') {
            return Err(ErrorData::invalid_params("a plain file name", None));
        }
        std::fs::write(self.dir.join(&args.name), args.text)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        Ok(format!("wrote {}", args.name))
    }

    /// The path a URI of this folder names, if it does.
    fn path_of(&self, uri: &str) -> Option<PathBuf> {
        let path = Path::new(uri.strip_prefix("file://")?);
        (path.parent() == Some(self.dir.as_path())).then(|| path.to_owned())
    }
}

fn uri_of(path: &Path) -> String {
    format!("file://{}", path.display())
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Files {
    fn get_info(&self) -> ServerConfig {
        // What the server has; `WithSubscriptions` sets listChanged and
        // subscribe under it.
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_tools()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let mut resources: Vec<Resource> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                Resource::new(uri_of(&entry.path()), name)
            })
            .collect();
        resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let not_found = || ErrorData::resource_not_found(format!("no {}", request.uri), None);
        let path = self.path_of(&request.uri).ok_or_else(not_found)?;
        let text = std::fs::read_to_string(&path).map_err(|_| not_found())?;
        let contents = ResourceContents::text(text, request.uri.clone());
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Watches `dir` and publishes what changes into `hub`, a burst at a time:
/// one write is several reports (created, written, closed), and its
/// listeners are told once.
fn watch(hub: Hub, dir: &Path) -> notify::Result<notify::RecommendedWatcher> {
    let (seen, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            let _ = seen.send(event);
        }
    })?;
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    tokio::spawn(async move {
        while let Some(first) = reports.recv().await {
            let mut burst = Burst::default();
            burst.add(first);
            tokio::time::sleep(Duration::from_millis(50)).await;
            while let Ok(report) = reports.try_recv() {
                burst.add(report);
            }
            burst.publish(&hub);
        }
    });
    Ok(watcher)
}

/// What the watcher reported in one burst.
#[derive(Default)]
struct Burst {
    /// A file was created, removed or renamed.
    listed: bool,
    /// The files whose content changed, or that came or went.
    changed: BTreeSet<PathBuf>,
}

impl Burst {
    fn add(&mut self, event: notify::Event) {
        let listed = matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        );
        self.listed |= listed;
        if listed || matches!(event.kind, EventKind::Modify(ModifyKind::Data(_))) {
            self.changed.extend(event.paths);
        }
    }

    fn publish(self, hub: &Hub) {
        if self.listed {
            hub.notify_resources_list_changed();
        }
        for path in self.changed {
            hub.notify_resource_updated(uri_of(&path));
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut bind) = (None, "127.0.0.1:8809".to_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bind" => bind = args.next().ok_or("--bind takes an address")?,
            _ => dir = Some(PathBuf::from(arg)),
        }
    }
    let dir = std::fs::canonicalize(dir.ok_or("usage: files DIR [--bind ADDR]")?)?;

    // The subscription part: a hub, served over HTTP to every revision's
    // clients, and the watcher publishing into it.
    let hub = Hub::new();
    let listen = ListenService::new(hub.clone());
    let server = Files::new(dir.clone());
    let sessions = WithSubscriptions::factory(&listen, move || server.clone());
    let mcp = http::endpoint(listen, sessions, Default::default());
    let _watcher = watch(hub.clone(), &dir)?;

    let tcp = tokio::net::TcpListener::bind(&bind).await?;
    println!("listening on http://{}/mcp", tcp.local_addr()?);
    let streams = mcp.streams();
    let app = axum::Router::new().route("/mcp", mcp.into_method_router());
    let shutdown = http::shutdown_signal(&hub);
    http::serve_until_drained(tcp, app, shutdown, streams, http::DEFAULT_DEADLINE).await;
    Ok(())
}
