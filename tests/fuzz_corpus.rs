//! The fuzz corpora replayed on stable: every file under
//! `fuzz/corpus/<target>/` through the same function its `cargo fuzz`
//! target calls (`fuzz/src/lib.rs`, included here as a module), so that
//! what the fuzzer once found interesting stays checked on every run.

#![cfg(all(feature = "stdio", feature = "http", feature = "channel"))]

use std::fs;
use std::path::Path;

// The fuzz crate's public functions, private to this test.
#[allow(unreachable_pub)]
#[path = "../fuzz/src/lib.rs"]
mod targets;

/// Runs every file of `fuzz/corpus/<target>/` through `body`, and fails
/// when the corpus is missing or empty (a renamed target would otherwise
/// replay nothing, silently).
fn replay(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no inputs", dir.display());
    for file in files {
        let data = fs::read(&file).expect("a corpus file");
        eprintln!("{target}: {}", file.display());
        body(&data);
    }
}

#[test]
fn smoke_each_target_takes_empty_input() {
    targets::listen_params(b"");
    targets::channel_frame(b"");
    targets::stdio_reader(b"");
    targets::http_body(b"");
    targets::first_request(b"");
}

#[test]
fn listen_params_corpus() {
    replay("listen_params", targets::listen_params);
}

#[test]
fn channel_frame_corpus() {
    replay("channel_frame", targets::channel_frame);
}

#[test]
fn stdio_reader_corpus() {
    replay("stdio_reader", targets::stdio_reader);
}

#[test]
fn http_body_corpus() {
    replay("http_body", targets::http_body);
}

#[test]
fn first_request_corpus() {
    replay("first_request", targets::first_request);
}
