//! The wrapper forwards every method of rmcp's `ServerHandler`.

use std::collections::BTreeSet;
use std::path::PathBuf;

/// Every method of rmcp's `ServerHandler` has a default, so one the
/// wrapper did not forward would be answered by rmcp's default instead
/// of the wrapped handler, silently. rmcp's HTTP service takes only a
/// `ServerHandler`, so the wrapper must be one and forward by hand:
/// this fails when rmcp gains a method the wrapper does not implement.
///
/// Where rmcp's source cannot be read (no cargo to ask, a source
/// without its files), it says why and checks nothing: CI builds from
/// the registry, where the source is always there, so every change is
/// checked there.
#[test]
fn the_wrapper_implements_every_method_of_rmcps_server_handler() {
    let read = rmcp_source("src/handler/server.rs").and_then(|path| {
        std::fs::read_to_string(&path).map_err(|err| format!("{}: {err}", path.display()))
    });
    let rmcp = match read {
        Ok(rmcp) => rmcp,
        Err(why) => {
            println!("skipped: rmcp's source cannot be read ({why})");
            return;
        }
    };
    let theirs = fn_names(block_after(&rmcp, "macro_rules! server_handler_methods"));
    let ours = fn_names(block_after(
        include_str!("../handler.rs"),
        "ServerHandler for WithSubscriptions<H>",
    ));
    assert!(
        theirs.contains("call_tool") && theirs.contains("initialize"),
        "rmcp's methods were read: {theirs:?}"
    );
    let missing: Vec<&String> = theirs.difference(&ours).collect();
    assert!(
        missing.is_empty(),
        "rmcp's ServerHandler has methods WithSubscriptions does not forward: {missing:?}"
    );
}

/// A file of the rmcp this crate is built with, wherever cargo keeps it
/// (the registry, a vendored copy, a git checkout or a path): as
/// `cargo metadata` says, offline.
fn rmcp_source(file: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .map_err(|err| format!("cargo metadata: {err}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("cargo metadata failed: {stderr}"));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|err| format!("cargo metadata's JSON: {err}"))?;
    let manifest = metadata["packages"]
        .as_array()
        .and_then(|packages| packages.iter().find(|package| package["name"] == "rmcp"))
        .and_then(|rmcp| rmcp["manifest_path"].as_str())
        .ok_or("cargo metadata names no rmcp")?;
    let folder = std::path::Path::new(manifest)
        .parent()
        .ok_or("rmcp's manifest has no folder")?;
    Ok(folder.join(file))
}

/// The text of the braced block that follows `marker`.
fn block_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let start = text.find(marker).expect("the marker is in the text");
    let open = start + text[start..].find('{').expect("a block follows");
    let mut depth = 0;
    for (at, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => return &text[open..=open + at],
            '}' => depth -= 1,
            _ => {}
        }
    }
    panic!("the block after {marker:?} does not end")
}

/// The names of the functions declared in `block`.
fn fn_names(block: &str) -> BTreeSet<String> {
    block
        .split("fn ")
        .skip(1)
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}
