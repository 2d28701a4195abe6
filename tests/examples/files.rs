//! `examples/files.rs`: a folder served as resources, kept live by a
//! directory watcher. A file written, changed and removed there reaches a
//! listen stream as the notifications each change means.
#![cfg(all(
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::example::example;
use crate::support::http::{Answer, listen, post};

/// A folder of its own under the system's temporary directory.
fn folder() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-subscriptions-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

/// The methods that arrive until the stream is quiet for a moment, with
/// runs of the same one (a watcher may report one write twice) counted
/// once.
async fn methods(stream: &mut Answer) -> Vec<String> {
    let mut methods: Vec<String> = Vec::new();
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(700), stream.next()).await
    {
        let method = message["method"].as_str().unwrap().to_owned();
        if methods.last() != Some(&method) {
            methods.push(method);
        }
    }
    methods
}

#[tokio::test]
async fn a_file_written_changed_and_removed_reaches_a_listener_as_its_notifications() {
    let dir = folder();
    let mut child = Command::new(example("files"))
        .arg(&dir)
        .args(["--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the files example starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("it says where it listens")
        .unwrap()
        .unwrap();
    let base = line
        .strip_prefix("listening on ")
        .and_then(|url| url.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();

    let file = dir.join("notes.txt");
    let uri = format!("file://{}", file.display());
    let filter = json!({"resourcesListChanged": true, "resourceSubscriptions": [uri]});
    let mut stream = post(&base, &listen(json!(1), filter, &[]), &[]).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    std::fs::write(&file, "first").unwrap();
    assert_eq!(
        methods(&mut stream).await,
        [
            "notifications/resources/list_changed",
            "notifications/resources/updated"
        ],
        "created: the list and the file changed"
    );
    std::fs::write(&file, "second").unwrap();
    assert_eq!(
        methods(&mut stream).await,
        ["notifications/resources/updated"],
        "changed: the file alone"
    );
    std::fs::write(dir.join("other.txt"), "unwatched").unwrap();
    assert_eq!(
        methods(&mut stream).await,
        ["notifications/resources/list_changed"],
        "another file: the list, not an update of a URI not asked for"
    );
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        methods(&mut stream).await,
        [
            "notifications/resources/list_changed",
            "notifications/resources/updated"
        ],
        "removed: the list and the file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
