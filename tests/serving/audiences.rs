//! Audiences over every transport (Streamable HTTP, stdio, the
//! notification channel), one test body per property run over each:
//!
//! - isolation: streams of several principals, with tenant labels and some
//!   with narrower grants, receive exactly what a model says of a seeded
//!   random run of numbered events for everyone, a principal, a label,
//!   both, no one, or a principal no one is, in order and nothing else;
//! - revocation: revoking a principal ends exactly its streams with
//!   `-32003` `{"reason":"revoked"}` (the last message of the stream, with
//!   the listen request's id), says how many it ended, and the others go
//!   on; revoking a principal no one is ends nothing;
//! - expiry: a grant's expiry ends its stream with `-32003`
//!   `{"reason":"expired"}` at about that instant while others go on, and
//!   an expiry already past is refused before any acknowledgement;
//! - a stream that ends either way frees its principal's slot at once.
//!
//! The authorizer gives `p0`, `p1` the label `tenant:a` and `p2`, `p3`
//! `tenant:b`, and narrows `p1` and `p3`: on the channel, which has no
//! filter of its own, that is the only narrowing there is. Events carry
//! their number, so none is idempotent and none coalesces.

#![cfg(all(
    feature = "http",
    feature = "stdio",
    feature = "channel",
    feature = "tasks"
))]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_subscriptions::channel::ChannelTransport;
use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::{
    Audience, Filter, Grant, Hub, ListenService, OpenContext, audience::Principal,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use crate::support::channel::{Channel, Received};
use crate::support::http::{Answer, app, listen, post, serve, with_user_header};
use crate::support::scoped::{EVERYTHING, Key, Scope, URIS, event, random_key, random_scope, uri};
use crate::support::stdio::Pipe;

const SEED: u64 = 7_2026;
const EVENTS: usize = 300;
/// The JSON-RPC error code of a revoked or expired stream.
const ENDED: i64 = -32003;

/// A principal the authorizer knows: its label, and what it may watch
/// (`None`: whatever it asks for).
struct Person {
    name: &'static str,
    tenant: &'static str,
    watches: Option<&'static [Key]>,
}

const PEOPLE: &[Person] = &[
    Person {
        name: "p0",
        tenant: "tenant:a",
        watches: None,
    },
    Person {
        name: "p1",
        tenant: "tenant:a",
        watches: Some(&[Key::Tools, Key::Uri(0), Key::Uri(2)]),
    },
    Person {
        name: "p2",
        tenant: "tenant:b",
        watches: None,
    },
    Person {
        name: "p3",
        tenant: "tenant:b",
        watches: Some(&[Key::Tools, Key::Uri(3)]),
    },
];

fn person(name: &str) -> Option<&'static Person> {
    PEOPLE.iter().find(|person| person.name == name)
}

/// When each principal's grants expire, as the test sets them.
#[derive(Clone, Default)]
struct Expiries(Arc<Mutex<HashMap<&'static str, Instant>>>);

impl Expiries {
    fn set(&self, principal: &'static str, at: Option<Instant>) {
        let mut expiries = self.0.lock().unwrap();
        match at {
            Some(at) => expiries.insert(principal, at),
            None => expiries.remove(principal),
        };
    }

    fn of(&self, principal: &str) -> Option<Instant> {
        self.0.lock().unwrap().get(principal).copied()
    }
}

/// Labels each known principal with its tenant and narrows it to what it
/// may watch; every grant expires as `expiries` says. Streams without a
/// principal get what they ask for.
fn authorizer(
    expiries: Expiries,
) -> impl Fn(&OpenContext, &Filter) -> Result<Grant, OpenError> + Send + Sync + 'static {
    move |context, requested| {
        let Some(principal) = &context.principal else {
            return Ok(Grant::new(requested.clone()));
        };
        let mut grant = match person(principal.as_str()) {
            Some(Person {
                tenant,
                watches: Some(watches),
                ..
            }) => Grant::new(requested.intersect(&filter(watches))).with_label(*tenant),
            Some(Person { tenant, .. }) => Grant::new(requested.clone()).with_label(*tenant),
            None => Grant::new(requested.clone()),
        };
        if let Some(at) = expiries.of(principal.as_str()) {
            grant = grant.with_expiry(at);
        }
        Ok(grant)
    }
}

fn filter(keys: &[Key]) -> Filter {
    keys.iter().fold(Filter::new(), |filter, key| match key {
        Key::Tools => filter.with_tools_list_changed(),
        Key::Uri(i) => filter.with_resource(uri(*i)),
    })
}

/// The model: whether an event about `key` for `scope` reaches a stream
/// of `principal`.
fn receives(principal: Option<&str>, key: Key, scope: &Scope) -> bool {
    let person = principal.and_then(person);
    let watches = person.and_then(|p| p.watches).unwrap_or(EVERYTHING);
    watches.contains(&key)
        && scope.as_ref().is_none_or(|(principals, labels)| {
            principal.is_some_and(|p| principals.contains(&p))
                || person.is_some_and(|p| labels.contains(&p.tenant))
        })
}

/// The notification the number and key of an event of [`event`] say.
fn note(message: &Value) -> (usize, Key) {
    let n = message["params"]["n"].as_u64().expect("a numbered event") as usize;
    let key = match message["method"].as_str().unwrap() {
        "notifications/tools/list_changed" => Key::Tools,
        "notifications/resources/updated" => {
            let uri = message["params"]["uri"].as_str().unwrap();
            Key::Uri((0..URIS).find(|&i| self::uri(i) == uri).unwrap())
        }
        other => panic!("unexpected {other}"),
    };
    (n, key)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Http,
    Stdio,
    Channel,
}

/// A listen service served over one transport.
struct Server {
    transport: Transport,
    hub: Hub,
    service: ListenService<Hub>,
    /// The base URL, over HTTP and the channel.
    url: String,
}

/// One open stream, and the id of its listen request.
enum Stream {
    Http(Answer, u64),
    Stdio(Pipe, u64),
    Channel(Channel),
}

/// What a stream said next.
#[derive(Debug)]
enum Item {
    /// A notification, as written.
    Note(Value),
    /// The error it ended with: a JSON-RPC error response to the listen
    /// request, or the channel's error frame.
    Failed(Value),
    /// The graceful end.
    Complete,
    /// The connection closed.
    Closed,
}

impl Server {
    async fn start(transport: Transport, service: ListenService<Hub>) -> Self {
        let url = match transport {
            Transport::Http => serve(with_user_header(app(service.clone()))).await,
            Transport::Channel => {
                let channel = ChannelTransport::new(service.clone()).into_method_router();
                let router = axum::Router::new().route("/mcp/notifications/{channel}", channel);
                serve(with_user_header(router)).await
            }
            Transport::Stdio => String::new(),
        };
        Self {
            transport,
            hub: service.source().clone(),
            service,
            url,
        }
    }

    /// Opens a stream as `principal` (the `x-user` header, or the stdio
    /// connection's principal) asking for every key, under listen id `id`;
    /// or the error it was refused with, which the channel does not say
    /// (it closes without any frame: `None`).
    async fn open(&self, principal: Option<&str>, id: u64) -> Result<Stream, Option<Value>> {
        let asks = json!({
            "toolsListChanged": true,
            "resourceSubscriptions": (0..URIS).map(uri).collect::<Vec<_>>(),
        });
        let headers: Vec<(&str, &str)> = principal.map(|p| ("x-user", p)).into_iter().collect();
        match self.transport {
            Transport::Http => {
                let mut answer = post(&self.url, &listen(json!(id), asks, &[]), &headers).await;
                if !answer.is_stream() {
                    let reply = answer.json().await;
                    assert_eq!(reply["id"], id, "the refusal answers the listen request");
                    return Err(Some(reply["error"].clone()));
                }
                acknowledged(&answer.next().await.expect("an acknowledgement"), id);
                Ok(Stream::Http(answer, id))
            }
            Transport::Stdio => {
                let service = self.service.clone();
                let principal = principal.map(Principal::new);
                let (_, mut pipe) = crate::support::stdio::serve(64 * 1024, |input, output| {
                    let transport = StdioTransport::new(service, input, output);
                    match principal {
                        Some(principal) => transport.with_principal(principal),
                        None => transport,
                    }
                });
                pipe.send(&listen(json!(id), asks, &[])).await;
                let first = pipe.read().await;
                if first.get("error").is_some() {
                    assert_eq!(first["id"], id, "the refusal answers the listen request");
                    return Err(Some(first["error"].clone()));
                }
                acknowledged(&first, id);
                Ok(Stream::Stdio(pipe, id))
            }
            Transport::Channel => {
                let opened = self.hub.stats().listeners_opened;
                let url = format!(
                    "{}/mcp/notifications/main",
                    self.url.replacen("http", "ws", 1)
                );
                let mut channel = Channel::connect(&url, &headers).await;
                // There is no acknowledgement: the channel is open once its
                // listener is, and refused when it closes first.
                let deadline = Instant::now() + Duration::from_secs(5);
                loop {
                    if self.hub.stats().listeners_opened > opened {
                        return Ok(Stream::Channel(channel));
                    }
                    let wait = Duration::from_millis(10);
                    match tokio::time::timeout(wait, channel.receive()).await {
                        Ok(Received::Closed) => return Err(None),
                        Ok(frame) => panic!("a frame before the channel opened: {frame:?}"),
                        Err(_) => assert!(Instant::now() < deadline, "the channel never opened"),
                    }
                }
            }
        }
    }
}

/// Checks that `message` acknowledges listen request `id`.
fn acknowledged(message: &Value, id: u64) {
    assert_eq!(
        message["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
}

impl Stream {
    async fn next(&mut self) -> Item {
        let (message, id) = match self {
            Self::Http(answer, id) => match answer.next().await {
                Some(message) => (message, *id),
                None => return Item::Closed,
            },
            Self::Stdio(pipe, id) => (pipe.read().await, *id),
            Self::Channel(channel) => {
                return match channel.receive().await {
                    Received::Notification(message) => Item::Note(message),
                    Received::Error(error) => Item::Failed(error),
                    Received::Closed => Item::Closed,
                };
            }
        };
        if message.get("method").is_some() {
            assert_eq!(
                message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], id,
                "every message carries the listen request's id"
            );
            return Item::Note(message);
        }
        assert_eq!(message["id"], id, "the end answers the listen request");
        match message.get("error") {
            Some(error) => Item::Failed(error.clone()),
            None => Item::Complete,
        }
    }

    /// The notifications it receives up to and including event `last`.
    async fn notes_until(&mut self, last: usize) -> Vec<(usize, Key)> {
        let mut notes = Vec::new();
        loop {
            match self.next().await {
                Item::Note(message) => {
                    let note = note(&message);
                    notes.push(note);
                    if note.0 == last {
                        return notes;
                    }
                }
                other => panic!("the stream ended with {other:?} after {notes:?}"),
            }
        }
    }

    /// Checks that the stream ends now with `-32003` and `reason`, as its
    /// last message: over HTTP and the channel the connection then closes.
    async fn ends_with(&mut self, reason: &str) {
        match self.next().await {
            Item::Failed(error) => {
                assert_eq!(error["code"], ENDED, "{error}");
                assert_eq!(error["data"], json!({ "reason": reason }), "{error}");
            }
            other => panic!("expected the stream to end {reason}, got {other:?}"),
        }
        if !matches!(self, Self::Stdio(..)) {
            let after = self.next().await;
            assert!(matches!(after, Item::Closed), "{after:?} after the error");
        }
    }
}

/// Checks a refusal before any acknowledgement: an error with each field
/// of `expected` over HTTP and stdio, a close without any frame on the
/// channel (which has no way to say why).
fn refused_as(transport: Transport, refusal: Option<Value>, expected: &Value) {
    match refusal {
        Some(error) => {
            for (field, value) in expected.as_object().unwrap() {
                assert_eq!(&error[field], value, "{field} of {error}");
            }
        }
        None => assert_eq!(
            transport,
            Transport::Channel,
            "only the channel says nothing"
        ),
    }
}

/// A server whose service has the test authorizer, with `expiries`.
async fn server(transport: Transport, expiries: &Expiries, per_principal: Option<usize>) -> Server {
    let service = ListenService::new(Hub::new()).with_authorizer(authorizer(expiries.clone()));
    let service = match per_principal {
        Some(limit) => service.with_max_streams_per_principal(limit),
        None => service,
    };
    Server::start(transport, service).await
}

/// Runs a test body over each transport, one test each.
macro_rules! over_each_transport {
    ($($body:ident),* $(,)?) => {$(
        mod $body {
            use super::Transport;

            #[tokio::test]
            async fn over_http() {
                super::$body(Transport::Http).await;
            }

            #[tokio::test]
            async fn over_stdio() {
                super::$body(Transport::Stdio).await;
            }

            #[tokio::test]
            async fn over_the_channel() {
                super::$body(Transport::Channel).await;
            }
        }
    )*};
}

over_each_transport!(
    every_stream_receives_exactly_what_the_model_says,
    revoking_a_principal_ends_exactly_its_streams_and_the_others_go_on,
    an_expiry_ends_its_stream_at_that_instant_and_one_already_past_is_refused,
    a_revoked_stream_frees_its_principals_slot_at_once,
    an_expired_stream_frees_its_principals_slot_at_once,
);

async fn every_stream_receives_exactly_what_the_model_says(transport: Transport) {
    // p0 twice (alike streams share a lane), the narrowed p1 and p3, and
    // one anonymous stream, which only events for everyone reach.
    let cast = [
        Some("p0"),
        Some("p0"),
        Some("p1"),
        Some("p2"),
        Some("p3"),
        None,
    ];
    let server = server(transport, &Expiries::default(), None).await;
    let mut streams = Vec::new();
    for (id, &principal) in (1..).zip(&cast) {
        streams.push(server.open(principal, id).await.expect("opened"));
    }

    let mut rng = StdRng::seed_from_u64(SEED);
    let mut published = Vec::new();
    for n in 0..EVENTS {
        let (key, scope) = (random_key(&mut rng), random_scope(&mut rng));
        let report = server.hub.publish(event(n, key, &scope));
        let expected = cast.iter().filter(|&&p| receives(p, key, &scope)).count();
        assert_eq!(report.matched, expected, "event {n} {key:?} for {scope:?}");
        published.push((n, key, scope));
    }
    // The marker: every stream watches the tools list.
    server.hub.publish(event(EVENTS, Key::Tools, &None));

    for (stream, principal) in streams.iter_mut().zip(cast) {
        let expected: Vec<(usize, Key)> = published
            .iter()
            .filter(|(_, key, scope)| receives(principal, *key, scope))
            .map(|(n, key, _)| (*n, *key))
            .chain([(EVENTS, Key::Tools)])
            .collect();
        assert!(
            expected.len() > 10,
            "the model leaves {principal:?} something"
        );
        let received = stream.notes_until(EVENTS).await;
        assert_eq!(received, expected, "{principal:?} over {transport:?}");
    }
}

async fn revoking_a_principal_ends_exactly_its_streams_and_the_others_go_on(transport: Transport) {
    let cast = [Some("p0"), Some("p1"), Some("p1"), Some("p2"), None];
    let server = server(transport, &Expiries::default(), None).await;
    let mut streams = Vec::new();
    for (id, &principal) in (1..).zip(&cast) {
        streams.push(server.open(principal, id).await.expect("opened"));
    }
    server.hub.publish(event(0, Key::Tools, &None));
    for stream in &mut streams {
        assert_eq!(stream.notes_until(0).await, [(0, Key::Tools)]);
    }

    let hub = &server.hub;
    assert_eq!(
        hub.revoke(&Audience::principal("p9")),
        0,
        "p9 has no stream"
    );
    assert_eq!(
        hub.revoke(&Audience::principal("p1")),
        2,
        "p1's two streams"
    );
    assert_eq!(hub.stats().listeners_closed.revoked, 2);
    let after: [Scope; 4] = [
        None,
        Some((vec![], vec!["tenant:a"])),
        Some((vec!["p1"], vec![])),
        None,
    ];
    for (n, scope) in (1..).zip(&after) {
        hub.publish(event(n, Key::Tools, scope));
    }
    for (stream, principal) in streams.iter_mut().zip(cast) {
        if principal == Some("p1") {
            stream.ends_with("revoked").await;
            continue;
        }
        let expected: Vec<(usize, Key)> = (1..)
            .zip(&after)
            .filter(|(_, scope)| receives(principal, Key::Tools, scope))
            .map(|(n, _)| (n, Key::Tools))
            .collect();
        assert_eq!(stream.notes_until(4).await, expected, "{principal:?}");
    }
    assert_eq!(
        hub.revoke(&Audience::principal("p1")),
        0,
        "p1 has none left"
    );
    assert_eq!(hub.stats().listeners_active, 3);
}

async fn an_expiry_ends_its_stream_at_that_instant_and_one_already_past_is_refused(
    transport: Transport,
) {
    let expiries = Expiries::default();
    let server = server(transport, &expiries, None).await;
    let at = Instant::now() + Duration::from_millis(300);
    expiries.set("p0", Some(at));
    let mut brief = server.open(Some("p0"), 1).await.expect("opened");
    let mut lasting = server.open(Some("p2"), 2).await.expect("opened");
    server.hub.publish(event(0, Key::Tools, &None));
    assert_eq!(brief.notes_until(0).await, [(0, Key::Tools)]);
    assert_eq!(lasting.notes_until(0).await, [(0, Key::Tools)]);

    brief.ends_with("expired").await;
    let ended = Instant::now();
    assert!(ended >= at, "ended {:?} before its expiry", at - ended);
    assert!(
        ended < at + Duration::from_secs(2),
        "ended {:?} after its expiry",
        ended - at
    );
    assert_eq!(server.hub.stats().listeners_closed.expired, 1);
    server.hub.publish(event(1, Key::Tools, &None));
    assert_eq!(lasting.notes_until(1).await, [(1, Key::Tools)]);

    expiries.set("p1", Some(Instant::now()));
    let opened = server.hub.stats().listeners_opened;
    let refusal = server.open(Some("p1"), 3).await.err().expect("refused");
    let expected = json!({"code": ENDED, "data": {"reason": "expired"}});
    refused_as(transport, refusal, &expected);
    assert_eq!(
        server.hub.stats().listeners_opened,
        opened,
        "nothing opened"
    );
}

async fn a_revoked_stream_frees_its_principals_slot_at_once(transport: Transport) {
    frees_its_slot(transport, "revoked").await;
}

async fn an_expired_stream_frees_its_principals_slot_at_once(transport: Transport) {
    frees_its_slot(transport, "expired").await;
}

/// Under one stream per principal, p0's stream ends for `reason`, and p0
/// listens again right after reading the end, with no retry.
async fn frees_its_slot(transport: Transport, reason: &str) {
    let expiries = Expiries::default();
    let server = server(transport, &expiries, Some(1)).await;
    if reason == "expired" {
        expiries.set("p0", Some(Instant::now() + Duration::from_millis(300)));
    }
    let mut first = server.open(Some("p0"), 1).await.expect("opened");
    let refusal = server
        .open(Some("p0"), 2)
        .await
        .err()
        .expect("p0 is at its limit");
    let expected = json!({"code": -32603, "message": "Subscription limit reached"});
    refused_as(transport, refusal, &expected);
    let mut other = server
        .open(Some("p2"), 3)
        .await
        .expect("p2 has its own slot");

    if reason == "revoked" {
        assert_eq!(server.hub.revoke(&Audience::principal("p0")), 1);
    }
    first.ends_with(reason).await;
    expiries.set("p0", None);
    let mut again = server.open(Some("p0"), 4).await.unwrap_or_else(|refusal| {
        panic!("p0 was refused right after its stream ended: {refusal:?}")
    });
    server.hub.publish(event(0, Key::Tools, &None));
    assert_eq!(again.notes_until(0).await, [(0, Key::Tools)]);
    assert_eq!(other.notes_until(0).await, [(0, Key::Tools)]);
}
