//! A hand-written `Source`: a directory watcher that polls file modification
//! times, served by the same generic loop as the `Hub`.
//!
//! Run with `cargo run --example custom_source`. It watches a scratch
//! directory, writes a few files into it, and prints every message its
//! listen stream carries (the acknowledgement, the stamped notifications,
//! and the end), served by the same `ListenService` as the real transports.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::{
    Capabilities, CloseReason, Event, Filter, Hub, ListenService, Next, OpenContext, Opened,
    Source, SourceHandle,
};
use rmcp::model::RequestId;
use serde_json::{Value, json};

/// Reports `notifications/resources/list_changed` when files appear or
/// disappear, and `notifications/resources/updated` for a `file://` URI
/// whose modification time changed.
struct DirectorySource {
    dir: PathBuf,
    interval: Duration,
}

/// One stream's watch: it owns what it needs to scan on its own.
struct Watch {
    dir: PathBuf,
    interval: Duration,
    granted: Filter,
    seen: BTreeMap<String, SystemTime>,
    pending: VecDeque<Event>,
    closed: bool,
}

/// Every file in `dir`, by `file://` URI, with its modification time.
fn scan(dir: &Path) -> BTreeMap<String, SystemTime> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some((format!("file://{}", entry.path().display()), modified))
        })
        .collect()
}

impl Source for DirectorySource {
    type Handle = Watch;

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with_resources_list_changed()
            .with_resources_subscribe()
    }

    fn open(&self, requested: &Filter, _: &OpenContext) -> Result<Opened<Watch>, OpenError> {
        // This source can report resource changes only.
        let granted = requested.narrow(&self.capabilities());
        let watch = Watch {
            dir: self.dir.clone(),
            interval: self.interval,
            granted: granted.clone(),
            seen: scan(&self.dir),
            pending: VecDeque::new(),
            closed: false,
        };
        Ok(Opened::new(granted, watch))
    }
}

impl SourceHandle for Watch {
    async fn next(&mut self) -> Next {
        let watch = self;
        loop {
            if watch.closed {
                return Next::Closed;
            }
            if let Some(event) = watch.pending.pop_front() {
                return Next::Event(event);
            }
            // Cancel-safe: a dropped sleep loses nothing, the next scan
            // finds the same differences.
            tokio::time::sleep(watch.interval).await;
            let now = scan(&watch.dir);
            if now.keys().ne(watch.seen.keys()) {
                watch.pending.push_back(Event::resources_list_changed());
            }
            for (uri, modified) in &now {
                if watch.seen.get(uri).is_some_and(|before| before != modified) {
                    watch
                        .pending
                        .push_back(Event::resource_updated(uri.as_str()));
                }
            }
            watch
                .pending
                .retain(|event| watch.granted.matches(event.kind()));
            watch.seen = now;
        }
    }

    fn close(&mut self, _: CloseReason) {
        self.closed = true;
        self.pending.clear();
    }
}

/// Serves one listen stream from any source to stdout with the crate's
/// serving layer, exactly as the stdio and HTTP transports do: the
/// acknowledgement, each event stamped with the request id, then the end.
/// Cancels after `limit` messages.
async fn serve<S: Source + 'static>(source: S, params: Value, id: RequestId, limit: usize) {
    let service = ListenService::new(source);
    let mut stream = match service.open(id, Some(&params)) {
        Ok(stream) => stream,
        Err(refusal) => return println!("  refused: {refusal}"),
    };
    for _ in 0..limit {
        match stream.next_message().await {
            Some(message) => println!("  {}", String::from_utf8_lossy(&message.to_vec())),
            None => return,
        }
    }
    stream.cancel(CloseReason::Cancelled);
    println!("  cancelled after {limit} messages");
}

fn touch(path: &Path, contents: &str) {
    std::fs::write(path, contents).expect("the scratch directory is writable");
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("mcp-subscriptions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.json");
    touch(&config, "{}");

    let source = DirectorySource {
        dir: dir.clone(),
        interval: Duration::from_millis(50),
    };
    let params = json!({"notifications": {
        "toolsListChanged": true, // not served by the directory source: narrowed away
        "resourcesListChanged": true,
        "resourceSubscriptions": [format!("file://{}", config.display())],
    }});

    let writer = tokio::spawn({
        let (dir, config) = (dir.clone(), config.clone());
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            touch(&dir.join("new.txt"), "hello");
            tokio::time::sleep(Duration::from_millis(200)).await;
            // Some file systems keep whole-second times; make the change visible.
            let later = SystemTime::now() + Duration::from_secs(2);
            std::fs::File::options()
                .write(true)
                .open(&config)
                .and_then(|f| f.set_modified(later))
                .unwrap();
        }
    });

    println!("directory source:");
    serve(
        source,
        params.clone(),
        RequestId::String("listen-1".into()),
        3,
    )
    .await;
    writer.await.unwrap();

    println!("hub, served by the same loop:");
    let hub = Hub::new();
    let publisher = hub.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        publisher.notify_tools_list_changed();
        publisher.complete();
    });
    serve(hub, params, RequestId::Number(2), 10).await;

    std::fs::remove_dir_all(&dir).ok();
}
