//! `examples/files.rs`: a folder served as resources, kept live by a
//! directory watcher. A file written, changed and removed there reaches a
//! listen stream as the notifications each change means.

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

/// The methods that arrive until the stream is quiet for a moment, each
/// as often as it came: the example gathers the watcher's reports of one
/// write into one notification.
async fn methods(stream: &mut Answer) -> Vec<String> {
    let mut methods: Vec<String> = Vec::new();
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(700), stream.next()).await
    {
        methods.push(message["method"].as_str().unwrap().to_owned());
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
    let renamed = dir.join("renamed.txt");
    std::fs::rename(&file, &renamed).unwrap();
    assert_eq!(
        methods(&mut stream).await,
        [
            "notifications/resources/list_changed",
            "notifications/resources/updated"
        ],
        "renamed away: the list and the file that went"
    );
    std::fs::rename(&renamed, &file).unwrap();
    assert_eq!(
        methods(&mut stream).await,
        [
            "notifications/resources/list_changed",
            "notifications/resources/updated"
        ],
        "renamed back: the list and the file that came"
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

#[test]
fn the_readmes_watcher_is_the_examples() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../../examples/files.rs");
    let block = readme
        .split("```rust,ignore\n")
        .map(|rest| rest.split("```").next().unwrap())
        .find(|block| block.contains("fn watch("))
        .expect("the README shows the watcher");
    let shown: String = block
        .lines()
        .filter(|line| !line.starts_with("# "))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(
        example.contains(&shown),
        "the README's watcher is not examples/files.rs's:\n{shown}"
    );
}
