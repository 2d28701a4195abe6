//! The programs of `examples/README.md` ("Listening from the official
//! SDKs' clients"), run as they are written there against the example
//! server, its address put in: each prints a tool change, and ends at
//! the server's Ctrl-C. So the docs stay true.

#![cfg(feature = "client")]

use std::time::Duration;

use serde_json::json;

use crate::support::example::{HttpServer, call};
use crate::support::interop::{ListeningApp, Running};

const WAIT: Duration = Duration::from_secs(30);

/// The address the recipes are written for.
const WRITTEN_FOR: &str = "http://127.0.0.1:8808/mcp";

/// The code block of `language` in the README's section on the SDKs.
fn recipe(language: &str) -> String {
    let readme = include_str!("../../examples/README.md");
    let section = readme
        .split("## Listening from the official SDKs' clients")
        .nth(1)
        .expect("the section is there");
    let fence = format!("```{language}\n");
    let start = section.find(&fence).expect("a code block") + fence.len();
    let end = start + section[start..].find("```").expect("its end");
    section[start..end].to_owned()
}

#[tokio::test]
async fn the_readmes_typescript_and_python_programs_listen_as_written() {
    for (app, language, event, end) in [
        (ListeningApp::TypeScript, "js", "tools changed", "graceful"),
        (
            ListeningApp::Python,
            "python",
            "ToolsListChanged",
            "complete",
        ),
    ] {
        let server = HttpServer::start(&[]).await;
        let code = recipe(language);
        assert!(code.contains(WRITTEN_FOR), "{language}: {code}");
        let code = code.replace(WRITTEN_FOR, &server.mcp_url());
        let mut running = Running::start(app.program("sdk-recipe", &code), app);
        server.wait_for_active(1, WAIT).await;
        call(
            &server.client().await,
            "test_trigger_tool_change",
            json!({}),
        )
        .await;
        assert_eq!(running.line(WAIT).await.as_deref(), Some(event), "{app:?}");
        server.interrupt();
        assert_eq!(running.line(WAIT).await.as_deref(), Some(end), "{app:?}");
        assert!(running.exits_cleanly(WAIT).await, "{app:?}");
    }
}
