//! The live catalog against a server whose every request it counts
//! (`support/catalog_server.rs`): lists fetched whole through their
//! cursors, one fetch per burst, exactly one more for changes during a
//! fetch, one per kind after a restart, typed diffs, health, credentials
//! shared by fetches and listens, watched contents, and a set of servers
//! whose failures stay their own. Then the crate's example server, over
//! Streamable HTTP and over one stdio connection.

#![cfg(all(feature = "client", feature = "http"))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::catalog_server::{CatalogServer, Paging};
use crate::support::example::binary;
use mcp_subscriptions::ListKind;
use mcp_subscriptions_client::catalog::{
    Catalog, CatalogKind, CatalogOptions, CatalogSet, Change, Endpoint, ListenState, Namespace,
    ServerHealth, SetChange, Snapshot,
};
use mcp_subscriptions_client::{Credentials, StdioClient, SubscribeError};

const WAIT: Duration = Duration::from_secs(10);

/// Long enough after the last change for any fetch it caused to be over.
const QUIET: Duration = Duration::from_millis(400);

async fn open(server: &CatalogServer, options: CatalogOptions) -> Catalog {
    tokio::time::timeout(WAIT, Catalog::http(server.url(), options))
        .await
        .expect("the catalog opens in time")
        .expect("the catalog opens")
}

/// The first snapshot past `after` in which `done` holds.
async fn until(catalog: &Catalog, done: impl Fn(&Snapshot) -> bool) -> Arc<Snapshot> {
    tokio::time::timeout(WAIT, async {
        let mut snapshot = catalog.snapshot();
        while !done(&snapshot) {
            snapshot = catalog.changed(snapshot.generation()).await;
        }
        snapshot
    })
    .await
    .expect("the catalog gets there")
}

fn names(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .tools()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

#[tokio::test]
async fn every_list_is_fetched_whole_through_its_cursors() {
    let server = CatalogServer::start(2).await;
    for n in 0..7 {
        server.set_tool(&format!("t{n}"), "a tool");
    }
    server.add_prompt("greet");
    server.add_resource("file:///a");
    server.add_template("file:///{path}");
    let catalog = open(&server, CatalogOptions::default()).await;

    let snapshot = catalog.snapshot();
    assert_eq!(names(&snapshot), ["t0", "t1", "t2", "t3", "t4", "t5", "t6"]);
    assert_eq!(snapshot.prompts()[0].name, "greet");
    assert_eq!(snapshot.resources()[0].uri, "file:///a");
    assert_eq!(snapshot.templates()[0].uri_template, "file:///{path}");
    assert_eq!(server.fetches("tools/list"), 1);
    assert_eq!(server.requests("tools/list"), 4, "four pages of two");

    let health = catalog.health();
    assert_eq!(health.listen, ListenState::Listening);
    let tools = health.list(CatalogKind::Tools).unwrap();
    assert!(tools.live && tools.last_success.is_some() && tools.last_error.is_none());
    assert_eq!(
        tools.ttl,
        Some(Duration::from_secs(60)),
        "the server's ttlMs"
    );
    assert_eq!(server.listeners(), 1, "one listen stream for every list");
}

#[tokio::test]
async fn a_burst_of_changes_makes_one_fetch() {
    let server = CatalogServer::start(100).await;
    let catalog = open(&server, CatalogOptions::default()).await;
    assert_eq!(server.fetches("tools/list"), 1);

    for n in 0..200 {
        server.set_tool(&format!("t{n}"), "new");
        server.publish(ListKind::Tools);
    }
    until(&catalog, |s| s.tools().len() == 200).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(server.fetches("tools/list"), 2, "200 changes, one fetch");
    // Only the list that changed was fetched again.
    assert_eq!(server.fetches("prompts/list"), 1);
    assert_eq!(server.fetches("resources/list"), 1);
}

#[tokio::test]
async fn a_storm_of_a_thousand_changes_in_a_second_makes_at_most_two_fetches() {
    let server = CatalogServer::start(100).await;
    let catalog = open(&server, CatalogOptions::default()).await;
    let start = tokio::time::Instant::now();
    for n in 0..1_000u32 {
        // Paced over one second, as a busy server's changes come.
        tokio::time::sleep_until(start + Duration::from_millis(u64::from(n))).await;
        server.set_tool(&format!("t{}", n % 150), &format!("version {n}"));
        server.publish(ListKind::Tools);
    }
    let last = |s: &Snapshot| {
        s.tool("t99")
            .is_some_and(|t| t.description.as_deref() == Some("version 999"))
    };
    let snapshot = until(&catalog, last).await;
    assert_eq!(snapshot.tools().len(), 150, "the server's final list");
    tokio::time::sleep(QUIET).await;
    let storm = server.fetches("tools/list") - 1;
    assert!((1..=2).contains(&storm), "{storm} fetches");
}

#[tokio::test]
async fn changes_during_a_fetch_make_exactly_one_more() {
    let server = CatalogServer::start(100).await;
    let catalog = open(&server, CatalogOptions::default()).await;
    server.set_delay(Duration::from_millis(500));

    server.set_tool("first", "x");
    server.publish(ListKind::Tools);
    // The fetch starts after the debounce and is then held by the server;
    // every change while it is held rides on one more fetch.
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(server.fetches("tools/list"), 2, "the fetch is under way");
    for n in 0..30 {
        server.set_tool(&format!("during{n}"), "x");
        server.publish(ListKind::Tools);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    until(&catalog, |s| s.tools().len() == 31).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(server.fetches("tools/list"), 3);
}

#[tokio::test]
async fn a_restart_is_survived_with_one_fetch_of_each_kind() {
    let server = CatalogServer::start(100).await;
    server.set_tool("before", "x");
    let catalog = open(&server, CatalogOptions::default()).await;
    assert_eq!(server.fetches("server/discover"), 1);

    // A graceful shutdown completes the stream; the catalog listens again
    // until the server is back, then refetches.
    server.stop().await;
    server.set_tool("after", "x");
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.restart().await;
    let snapshot = until(&catalog, |s| s.tool("after").is_some()).await;
    assert_eq!(names(&snapshot), ["before", "after"]);
    tokio::time::sleep(QUIET).await;
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "server/discover",
    ] {
        assert_eq!(
            server.fetches(method),
            2,
            "{method}: once more after the restart"
        );
    }
    assert_eq!(catalog.health().listen, ListenState::Listening);
    assert_eq!(server.listeners(), 1);

    // And it still follows changes.
    server.set_tool("later", "x");
    server.publish(ListKind::Tools);
    until(&catalog, |s| s.tool("later").is_some()).await;
}

#[tokio::test]
async fn changes_are_typed_diffs_by_name_with_old_and_new() {
    let server = CatalogServer::start(100).await;
    server.set_tool("keep", "same");
    server.set_tool("edit", "old");
    server.set_tool("drop", "x");
    let catalog = open(&server, CatalogOptions::default()).await;
    let mut changes = catalog.changes();

    // The server says its lists stay fresh for a minute (`ttlMs` 60,000):
    // the change still yields the new list at once.
    server.set_tool("edit", "new");
    server.remove_tool("drop");
    server.set_tool("add", "x");
    server.publish(ListKind::Tools);
    let change = tokio::time::timeout(WAIT, changes.next())
        .await
        .unwrap()
        .unwrap();
    let Change::Tools(diff) = change else {
        panic!("{change:?}")
    };
    assert_eq!(diff.added.len(), 1);
    assert_eq!(diff.added[0].name, "add");
    assert_eq!(diff.removed[0].name, "drop");
    assert_eq!(diff.changed.len(), 1);
    assert_eq!(diff.changed[0].old.description.as_deref(), Some("old"));
    assert_eq!(diff.changed[0].new.description.as_deref(), Some("new"));
    assert_eq!(diff.generation, catalog.snapshot().generation());

    // A refetch that finds nothing new is no change.
    server.publish(ListKind::Tools);
    server.add_prompt("p");
    server.publish(ListKind::Prompts);
    let change = tokio::time::timeout(WAIT, changes.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&change, Change::Prompts(diff) if diff.added[0].name == "p"),
        "{change:?}"
    );
}

#[tokio::test]
async fn a_reader_that_falls_behind_gets_the_net_change() {
    let server = CatalogServer::start(100).await;
    let catalog = open(&server, CatalogOptions::default()).await;
    let mut changes = catalog.changes();
    let start = changes.generation();
    server.set_tool("brief", "x");
    server.publish(ListKind::Tools);
    until(&catalog, |s| s.tool("brief").is_some()).await;
    server.remove_tool("brief");
    server.set_tool("stays", "x");
    server.publish(ListKind::Tools);
    let snapshot = until(&catalog, |s| s.tool("stays").is_some()).await;
    assert!(snapshot.generation() >= start + 2);

    let Some(Change::Tools(diff)) = changes.next().await else {
        panic!()
    };
    assert_eq!(diff.added.len(), 1, "brief came and went: {diff:?}");
    assert_eq!(diff.added[0].name, "stays");
    assert!(diff.removed.is_empty());
}

#[tokio::test]
async fn a_failing_fetch_is_retried_and_its_health_says_so() {
    let server = CatalogServer::start(100).await;
    let catalog = open(&server, CatalogOptions::default()).await;
    server.set_failing(Some(503));
    server.set_tool("t", "x");
    server.publish(ListKind::Tools);

    let tools = stale_tools(&catalog).await;
    assert!(tools.retrying, "a 503 may pass: {tools:?}");
    assert!(
        catalog.snapshot().tools().is_empty(),
        "the last good list stays"
    );

    server.set_failing(None);
    until(&catalog, |s| s.tool("t").is_some()).await;
    let health = catalog.health();
    let tools = health.list(CatalogKind::Tools).unwrap();
    assert!(tools.last_error.is_none() && !tools.retrying);
}

#[tokio::test]
async fn a_refused_fetch_waits_for_the_next_change() {
    let server = CatalogServer::start(100).await;
    let catalog = open(&server, CatalogOptions::default()).await;
    server.set_failing(Some(404));
    server.publish(ListKind::Tools);
    stale_tools(&catalog).await;
    let failed = server.fetches("tools/list");
    tokio::time::sleep(QUIET * 2).await;
    assert_eq!(server.fetches("tools/list"), failed, "no retry of a 404");
    assert!(!catalog.health().list(CatalogKind::Tools).unwrap().retrying);

    server.set_failing(None);
    server.set_tool("t", "x");
    server.publish(ListKind::Tools);
    until(&catalog, |s| s.tool("t").is_some()).await;
}

/// Waits until the tools list's last fetch failed; its health then.
async fn stale_tools(catalog: &Catalog) -> mcp_subscriptions_client::catalog::FetchHealth {
    tokio::time::timeout(WAIT, async {
        loop {
            let health = catalog.health().list(CatalogKind::Tools).unwrap().clone();
            if health.is_stale() {
                return health;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the fetch fails in time")
}

/// Each way a server can page badly ends in its documented state: the
/// last good list kept, marked stale with the error, and the fetch not
/// retried (the same request would get the same answer) until the next
/// change, after which an honest server is followed again.
#[tokio::test]
async fn a_broken_page_keeps_the_last_good_list_marked_stale() {
    for (paging, says) in [
        (Paging::Malformed, "tools/list: invalid type"),
        (Paging::SameCursor, "again: its pages loop"),
        (Paging::Endless, "more than 20 pages"),
    ] {
        let server = CatalogServer::start(1).await;
        server.set_tool("good", "x");
        let catalog = open(&server, CatalogOptions::default().with_max_pages(20)).await;
        server.set_paging(paging);
        server.set_tool("unseen", "x");
        server.publish(ListKind::Tools);
        let health = stale_tools(&catalog).await;
        let error = health.last_error.as_ref().unwrap();
        assert!(error.to_string().contains(says), "{paging:?}: {error}");
        assert!(!error.is_transient() && !health.retrying, "{paging:?}");
        assert_eq!(names(&catalog.snapshot()), ["good"], "{paging:?}");
        let requests = server.requests("tools/list");
        assert!(
            requests <= 1 + 20 + 21,
            "{paging:?}: bounded, {requests} requests"
        );
        tokio::time::sleep(QUIET).await;
        assert_eq!(
            server.requests("tools/list"),
            requests,
            "{paging:?}: no retry loop"
        );

        server.set_paging(Paging::Honest);
        server.publish(ListKind::Tools);
        until(&catalog, |s| s.tool("unseen").is_some()).await;
        assert!(
            !catalog
                .health()
                .list(CatalogKind::Tools)
                .unwrap()
                .is_stale()
        );
    }
}

#[tokio::test]
async fn a_fetch_that_hangs_times_out_and_is_retried_with_backoff() {
    let server = CatalogServer::start(100).await;
    let options = CatalogOptions::default().with_request_timeout(Duration::from_millis(200));
    let catalog = open(&server, options).await;
    server.set_delay(Duration::from_secs(30));
    server.set_tool("t", "x");
    server.publish(ListKind::Tools);
    let health = stale_tools(&catalog).await;
    assert!(health.retrying, "{health:?}");
    assert!(
        health
            .last_error
            .unwrap()
            .to_string()
            .contains("no answer within 200ms")
    );
    server.set_delay(Duration::ZERO);
    until(&catalog, |s| s.tool("t").is_some()).await;
}

#[tokio::test]
async fn a_token_refreshed_for_a_fetch_is_the_one_the_listen_uses_too() {
    let server = CatalogServer::start(100).await;
    server.require_token("one");
    let asked = Arc::new(AtomicUsize::new(0));
    let hook = {
        let asked = Arc::clone(&asked);
        Credentials::new(move |_| {
            asked.fetch_add(1, Ordering::SeqCst);
            async { Some(vec![("authorization".into(), "Bearer two".into())]) }
        })
    };
    let options = CatalogOptions::default()
        .with_header("authorization", "Bearer one")
        .with_credentials(hook);
    let catalog = open(&server, options).await;

    // The token rotates: the next fetch gets a 401, asks the hook once,
    // and goes on with the new token.
    server.require_token("two");
    server.set_tool("t", "x");
    server.publish(ListKind::Tools);
    until(&catalog, |s| s.tool("t").is_some()).await;
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // A restart ends the stream: it listens again with the token the
    // fetch got, without asking again for one that works.
    server.stop().await;
    server.restart().await;
    tokio::time::timeout(WAIT, async {
        while server.listeners() == 0 || catalog.health().listen != ListenState::Listening {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("listening again with the new token");
}

#[tokio::test]
async fn watched_contents_follow_their_updates() {
    let server = CatalogServer::start(100).await;
    server.set_contents("file:///a", "one");
    server.set_contents("file:///b", "unwatched");
    let catalog = open(&server, CatalogOptions::default().with_watched("file:///a")).await;
    let text = |snapshot: &Snapshot| {
        let contents = snapshot.contents("file:///a")?;
        Some(format!("{:?}", contents.contents[0]))
    };
    assert!(text(&catalog.snapshot()).unwrap().contains("one"));

    server.set_contents("file:///a", "two");
    server.publish_updated("file:///a");
    server.publish_updated("file:///b");
    until(&catalog, |s| text(s).is_some_and(|t| t.contains("two"))).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        server.fetches("resources/read"),
        2,
        "the watched one, twice"
    );
}

#[tokio::test]
async fn past_a_thousand_watched_uris_the_catalog_holds_several_streams() {
    let server = CatalogServer::start(100).await;
    let uris: Vec<String> = (0..1_500).map(|n| format!("file:///{n}")).collect();
    for uri in &uris {
        server.set_contents(uri, "x");
    }
    let mut options = CatalogOptions::default();
    options.watch = uris.clone();
    let catalog = open(&server, options).await;
    assert_eq!(server.listeners(), 2, "1,000 URIs a stream");
    assert_eq!(catalog.health().contents.len(), 1_500);

    server.set_contents("file:///1234", "changed");
    server.publish_updated("file:///1234");
    until(&catalog, |s| {
        format!("{:?}", s.contents("file:///1234").unwrap()).contains("changed")
    })
    .await;
}

#[tokio::test]
async fn a_set_merges_names_and_keeps_each_servers_failure_its_own() {
    let a = CatalogServer::start(100).await;
    let b = CatalogServer::start(100).await;
    let c = CatalogServer::start(100).await;
    a.set_tool("search", "a's");
    b.set_tool("search", "b's");
    c.set_tool("search", "c's");
    let set = CatalogSet::open(
        [
            ("a".to_owned(), Endpoint::http(a.url())),
            ("b".to_owned(), Endpoint::http(b.url())),
            ("c".to_owned(), Endpoint::http(c.url())),
            ("gone".to_owned(), Endpoint::http("http://127.0.0.1:9/mcp")),
        ],
        CatalogOptions::default(),
    )
    .await;
    // The one that is down is tried again, and said to be.
    let gone = set.health().into_iter().find(|(name, _)| name == "gone");
    assert!(
        matches!(
            gone,
            Some((_, ServerHealth::Joining { attempts, last_error: Some(_) })) if attempts >= 1
        ),
        "{gone:?}"
    );

    let merged = set.snapshot();
    let tools: Vec<String> = merged.tools().map(|(name, _)| name).collect();
    assert_eq!(tools, ["a/search", "b/search", "c/search"]);
    let (server, tool) = merged.tool("b/search").unwrap();
    assert_eq!((server, tool.description.as_deref()), ("b", Some("b's")));
    assert!(merged.tool("d/search").is_none() && merged.tool("search").is_none());

    // One server of three down: the others' changes still arrive, and the
    // merged view keeps the last list of the one that is down.
    a.stop().await;
    b.set_tool("more", "x");
    b.publish(ListKind::Tools);
    c.remove_tool("search");
    c.publish(ListKind::Tools);
    let merged = tokio::time::timeout(WAIT, async {
        let mut seen = merged;
        loop {
            seen = set.changed(&seen).await;
            if seen.tool("b/more").is_some() && seen.tool("c/search").is_none() {
                return seen;
            }
        }
    })
    .await
    .unwrap();
    assert!(merged.tool("a/search").is_some());
    assert!(matches!(
        set.get("a").unwrap().health().listen,
        ListenState::Relistening { .. }
    ));
}

#[tokio::test]
async fn a_server_that_goes_down_is_marked_not_up_until_it_is_back() {
    let a = CatalogServer::start(100).await;
    let b = CatalogServer::start(100).await;
    a.set_tool("search", "a's");
    b.set_tool("fetch", "b's");
    let set = CatalogSet::open(
        [
            ("a".to_owned(), Endpoint::http(a.url())),
            ("b".to_owned(), Endpoint::http(b.url())),
        ],
        CatalogOptions::default(),
    )
    .await;
    let merged = set.snapshot();
    assert!(merged.is_up("a") && merged.is_up("b"));
    let mut changes = set.changes();
    let until_up = async |up: bool| {
        let mut seen = set.snapshot();
        tokio::time::timeout(WAIT, async {
            while seen.is_up("a") != up {
                seen = set.changed(&seen).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("a is up: {up}, within {WAIT:?}"));
        seen
    };

    // Killed: its last list stays, marked; the view of the servers that
    // are up leaves it out.
    a.stop().await;
    let down = until_up(false).await;
    assert!(down.tool("a/search").is_some() && !down.is_up("a"));
    assert!(down.is_up("b"));
    let tools: Vec<String> = down.up().tools().map(|(name, _)| name).collect();
    assert_eq!(tools, ["b/fetch"]);
    // Down for several attempts of its re-listen: still one health change.
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    a.restart().await;
    let back = until_up(true).await;
    let tools: Vec<String> = back.up().tools().map(|(name, _)| name).collect();
    assert_eq!(tools, ["a/search", "b/fetch"]);

    let mut told = Vec::new();
    while let Ok(Some(change)) =
        tokio::time::timeout(Duration::from_millis(200), changes.next()).await
    {
        if let SetChange::Health(..) = &change {
            let line = change.to_string();
            assert!(!line.contains('\n') && line.len() < 200, "{line}");
            told.push(line);
        }
    }
    assert_eq!(told.len(), 2, "one change down, one back: {told:#?}");
    assert!(
        told[0].starts_with("a: re-listening (attempt 1"),
        "{told:?}"
    );
    assert_eq!(told[1], "a: listening");
}

/// Keeps a server's names and URIs as they are (a set of one server, or
/// servers that never overlap).
struct AsTheyAre;

impl Namespace for AsTheyAre {
    fn name_down(&self, name: &str) -> String {
        name.to_owned()
    }
    fn name_up(&self, name: &str) -> Option<String> {
        Some(name.to_owned())
    }
    fn uri_down(&self, uri: &str) -> String {
        uri.to_owned()
    }
    fn uri_up(&self, uri: &str) -> Option<String> {
        Some(uri.to_owned())
    }
}

#[tokio::test]
async fn a_set_names_each_servers_entries_and_uris_by_its_namespace() {
    let a = CatalogServer::start(100).await;
    let b = CatalogServer::start(100).await;
    a.set_tool("search", "a's");
    a.add_resource("file:///a.md");
    a.add_template("file:///{name}");
    b.set_tool("fetch", "b's");
    b.add_resource("file:///b.md");
    let set = CatalogSet::open(
        [
            ("a".to_owned(), Endpoint::http(a.url())),
            // A name the prefix cannot carry fails alone, without a panic.
            ("not/a name".to_owned(), Endpoint::http(a.url())),
        ],
        CatalogOptions::default(),
    )
    .await;
    let health = set.health();
    assert!(
        matches!(&health[1], (name, ServerHealth::Failed(SubscribeError::Invalid(_))) if name == "not/a name"),
        "{health:?}"
    );
    let b_catalog = Catalog::http(b.url(), CatalogOptions::default())
        .await
        .unwrap();
    let again = Catalog::http(b.url(), CatalogOptions::default())
        .await
        .unwrap();
    assert!(matches!(
        set.insert("b/x", again),
        Err(SubscribeError::Invalid(_))
    ));
    set.insert_with("b", b_catalog, AsTheyAre);

    let merged = set.snapshot();
    let tools: Vec<String> = merged.tools().map(|(name, _)| name).collect();
    assert_eq!(
        tools,
        ["a/search", "fetch"],
        "in the order added, each by its namespace"
    );
    let resources: Vec<String> = merged.resources().map(|(uri, _)| uri).collect();
    assert_eq!(resources, ["a+file:///a.md", "file:///b.md"]);
    let templates: Vec<String> = merged.templates().map(|(uri, _)| uri).collect();
    assert_eq!(templates, ["a+file:///{name}"]);
    assert_eq!(merged.tool("fetch").map(|(server, _)| server), Some("b"));

    // A merged name or URI finds its server, the first whose namespace
    // claims it.
    assert_eq!(
        set.claim_name("a/search"),
        Some(("a".to_owned(), "search".to_owned()))
    );
    assert_eq!(
        set.claim_uri("a+file:///a.md"),
        Some(("a".to_owned(), "file:///a.md".to_owned()))
    );
    assert_eq!(
        set.claim_uri("file:///b.md"),
        Some(("b".to_owned(), "file:///b.md".to_owned()))
    );
    assert!(set.namespace("b").is_some() && set.namespace("c").is_none());
}

#[tokio::test]
async fn a_server_down_at_open_joins_when_it_comes_up_beside_a_stdio_one() {
    let down = CatalogServer::start(100).await;
    down.set_tool("late", "joins");
    down.stop().await;
    let stdio = StdioClient::spawn(binary(), ["--stdio"]).unwrap();
    let set = CatalogSet::open(
        [
            ("down".to_owned(), Endpoint::http(down.url())),
            ("local".to_owned(), Endpoint::stdio(stdio)),
        ],
        CatalogOptions::default(),
    )
    .await;
    // The stdio server is served at once; the one that is down is not
    // in the merged view, and the set says it is joining.
    let merged = set.snapshot();
    assert!(
        merged
            .tools()
            .any(|(name, _)| name == "local/test_add_tool")
    );
    assert!(merged.server("down").is_none());
    assert!(set.get("down").is_none());
    let joining = set.health().into_iter().find(|(name, _)| name == "down");
    assert!(
        matches!(joining, Some((_, ServerHealth::Joining { .. }))),
        "{joining:?}"
    );

    let mut changes = set.changes();
    let came_up = std::time::Instant::now();
    down.restart().await;
    tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(change) = changes.next().await {
            if change == SetChange::Joined("down".to_owned()) {
                return;
            }
        }
    })
    .await
    .expect("the server joins within 5 s of coming up");
    println!("joined {:?} after coming up", came_up.elapsed());
    assert!(set.snapshot().tool("down/late").is_some());
    assert!(matches!(
        set.health().into_iter().find(|(name, _)| name == "down"),
        Some((_, ServerHealth::Live(_)))
    ));

    // Its changes come on the set's one stream, by server, with its health;
    // a server removed leaves it.
    down.set_tool("later", "x");
    down.publish(ListKind::Tools);
    tokio::time::timeout(WAIT, async {
        while let Some(change) = changes.next().await {
            if matches!(&change, SetChange::Changed(server, Change::Tools(_)) if server == "down") {
                return;
            }
        }
    })
    .await
    .expect("the change comes on the set's stream");
    // Its health comes on the stream too: stopped, it is re-listened to.
    down.stop().await;
    tokio::time::timeout(WAIT, async {
        while let Some(change) = changes.next().await {
            if let SetChange::Health(server, health) = &change
                && server == "down"
                && matches!(health.listen, ListenState::Relistening { .. })
            {
                return;
            }
        }
    })
    .await
    .expect("the set tells that its listen is re-listening");
    assert!(set.remove("down"));
    let left = tokio::time::timeout(WAIT, async {
        loop {
            match changes.next().await {
                Some(SetChange::Left(server)) => return server,
                Some(_) => {}
                None => panic!("the stream ended"),
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(left, "down");
    assert!(set.snapshot().server("down").is_none());
}

#[tokio::test]
async fn a_thread_waits_for_the_next_generation() {
    let server = CatalogServer::start(100).await;
    let catalog = Arc::new(open(&server, CatalogOptions::default()).await);
    let start = catalog.snapshot().generation();
    let waiter = {
        let catalog = Arc::clone(&catalog);
        std::thread::spawn(move || catalog.wait_blocking(start, WAIT).map(|s| names(&s)))
    };
    server.set_tool("t", "x");
    server.publish(ListKind::Tools);
    let seen = tokio::task::spawn_blocking(move || waiter.join().unwrap())
        .await
        .unwrap();
    assert_eq!(seen.unwrap(), ["t"]);
    assert!(
        catalog
            .wait_blocking(u64::MAX - 1, Duration::from_millis(50))
            .is_none()
    );
}

#[cfg(not(feature = "tls"))]
#[tokio::test]
async fn an_https_url_without_the_tls_feature_is_refused_at_once_as_permanent() {
    let err = Catalog::http("https://127.0.0.1:1/mcp", CatalogOptions::default())
        .await
        .unwrap_err();
    assert!(!err.is_transient(), "{err}");
}
