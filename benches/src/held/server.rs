//! The server process: one [`Server`] on one address, publishing a
//! tools-list change each time its parent asks on stdin.
//!
//! It prints `listening ADDR` once serving, and `published` each time a
//! publish has returned. It exits when its stdin closes, so it never
//! outlives its parent.

use std::io::BufRead;

use mcp_subscriptions::Hub;

use super::say;
use crate::{Server, serve};

/// What the parent writes to have one tools-list change published.
pub(crate) const PUBLISH: &str = "publish";

/// Serves `server` on `addr` for up to `streams` listen streams, until
/// stdin closes.
pub(crate) fn main(server: Server, addr: &str, streams: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let hub = Hub::builder().max_listeners(streams).build();
    let publisher = runtime.block_on(async {
        let (app, publisher) = server.app(&hub);
        let addr = serve(app, addr).await;
        say(&format!("listening {addr}"));
        publisher
    });
    for line in std::io::stdin().lock().lines() {
        match line {
            Ok(line) if line == PUBLISH => {
                runtime.block_on(publisher.tools_list_changed());
                say("published");
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
}
