//! `https://` (feature `tls`): a live catalog and a subscription of a
//! server behind TLS with a bearer token. A certificate no one trusts and
//! a token the server refuses are permanent errors, returned at once with
//! no retry loop; a credentials hook that gives the right token lets the
//! catalog go on.

#![cfg(all(feature = "tls", feature = "http"))]

use std::time::Duration;

use crate::support::catalog_server::CatalogServer;
use crate::support::tls;
use mcp_subscriptions::{Filter, ListKind};
use mcp_subscriptions_client::catalog::{Catalog, CatalogOptions, ListenState};
use mcp_subscriptions_client::{Credentials, SubscribeError, SubscribeOptions, Subscription};

const WAIT: Duration = Duration::from_secs(10);

async fn https_server() -> (CatalogServer, String) {
    let server = CatalogServer::start(100).await;
    server.require_token("secret");
    server.set_tool("search", "x");
    let port = tls::front(server.port).await;
    (server, format!("https://127.0.0.1:{port}/mcp"))
}

fn trusting() -> CatalogOptions {
    CatalogOptions::default().with_root_certificate(tls::CA)
}

#[tokio::test]
async fn a_catalog_over_https_with_a_bearer_token_follows_changes() {
    let (server, url) = https_server().await;
    let catalog = Catalog::http(
        &url,
        trusting().with_header("authorization", "Bearer secret"),
    )
    .await
    .unwrap();
    assert!(catalog.snapshot().tool("search").is_some());
    assert_eq!(catalog.health().listen, ListenState::Listening);
    server.set_tool("more", "x");
    server.publish(ListKind::Tools);
    tokio::time::timeout(WAIT, async {
        let mut snapshot = catalog.snapshot();
        while snapshot.tool("more").is_none() {
            snapshot = catalog.changed(snapshot.generation()).await;
        }
    })
    .await
    .expect("the change arrives over TLS");

    // The subscription alone, over the same kind of URL.
    let options = SubscribeOptions::default()
        .with_root_certificate(tls::CA)
        .with_header("authorization", "Bearer secret");
    let tools = Filter::new().with_tools_list_changed();
    let subscription = Subscription::http(&url, &tools, options).await.unwrap();
    assert_eq!(subscription.granted(), tools);
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_permanent_error_at_once() {
    let (server, url) = https_server().await;
    // Re-listening is on by default: a transient error would be retried.
    let opened = tokio::time::timeout(WAIT, Catalog::http(&url, CatalogOptions::default()))
        .await
        .expect("no retry loop");
    let Err(SubscribeError::Tls(why)) = &opened else {
        panic!("{opened:?}")
    };
    assert!(why.contains("certificate"), "{why}");
    assert!(!opened.unwrap_err().is_transient());
    assert_eq!(server.requests("server/discover"), 0);
}

#[tokio::test]
async fn a_refused_token_is_permanent_and_a_refreshed_one_goes_on() {
    let (server, url) = https_server().await;
    let wrong = trusting().with_header("authorization", "Bearer wrong");
    let opened = tokio::time::timeout(WAIT, Catalog::http(&url, wrong.clone()))
        .await
        .expect("no retry loop");
    assert!(
        matches!(&opened, Err(SubscribeError::Status { status: 401, .. })),
        "{opened:?}"
    );
    assert!(!opened.unwrap_err().is_transient());

    let hook = Credentials::new(|_| async {
        Some(vec![("authorization".into(), "Bearer secret".into())])
    });
    let catalog = Catalog::http(&url, wrong.with_credentials(hook))
        .await
        .unwrap();
    assert!(catalog.snapshot().tool("search").is_some());
    assert_eq!(catalog.health().listen, ListenState::Listening);
    assert_eq!(server.listeners(), 1, "the listen took the refreshed token");
}
