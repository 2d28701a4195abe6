//! Audiences against a model: over random listeners (each with a principal
//! or none, some labels, a filter, and queue settings that put it in a
//! lane or in a queue of its own) and random events for everyone, for
//! principals, labels, listener ids or no one (some with a succession,
//! which moves lane members out), interleaved with revocations, every
//! listener reads exactly the events whose audience includes it, in
//! publish order, and nothing else; each publish matches exactly the
//! listeners the model says; a revoked listener reads its error and
//! nothing it held; and the counts add up.

use std::collections::BTreeSet;

use mcp_subscriptions::error::StreamError;
use mcp_subscriptions::queue::Settings;
use mcp_subscriptions::{
    Audience, Event, Filter, Hub, Listener, Next, OpenContext, Overflow, Succession,
    audience::{Label, Principal},
};
use proptest::prelude::*;
use serde_json::json;

const PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];
const LABELS: [&str; 2] = ["tenant:a", "tenant:b"];
const URIS: [&str; 2] = ["file:///a", "file:///b"];

#[derive(Debug, Clone)]
struct Who {
    principal: Option<usize>,
    labels: Vec<usize>,
}

#[derive(Debug, Clone)]
enum Op {
    Open {
        who: Who,
        tools: bool,
        uris: Vec<usize>,
        /// Settings a lane cannot hold: a queue of its own.
        own_queue: bool,
    },
    Publish {
        /// `None` for the tools list, else a URI.
        uri: Option<usize>,
        audience: Option<Who>,
        /// Listener ids, by position among those opened so far.
        listeners: Vec<usize>,
        succession: bool,
    },
    Revoke(Who),
}

fn who() -> impl Strategy<Value = Who> {
    (
        proptest::option::weighted(0.8, 0..PRINCIPALS.len()),
        proptest::collection::vec(0..LABELS.len(), 0..2),
    )
        .prop_map(|(principal, labels)| Who { principal, labels })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (who(), any::<bool>(), proptest::collection::vec(0..URIS.len(), 0..2), proptest::bool::weighted(0.2))
            .prop_map(|(who, tools, uris, own_queue)| Op::Open { who, tools, uris, own_queue }),
        6 => (
            proptest::option::of(0..URIS.len()),
            proptest::option::weighted(0.7, who()),
            proptest::collection::vec(0..16usize, 0..2),
            proptest::bool::weighted(0.1),
        )
            .prop_map(|(uri, audience, listeners, succession)| Op::Publish { uri, audience, listeners, succession }),
        1 => who().prop_map(Op::Revoke),
    ]
}

/// The audience naming `who`'s principal and labels (no one, if neither).
fn audience_of(who: &Who) -> Audience {
    let audience = who
        .principal
        .map(|p| Audience::principal(PRINCIPALS[p]))
        .unwrap_or_else(Audience::nobody);
    who.labels
        .iter()
        .fold(audience, |a, &l| a.with_label(LABELS[l]))
}

struct Modelled {
    listener: Listener,
    who: Who,
    tools: bool,
    uris: BTreeSet<usize>,
    /// What it should read, in order.
    expected: Vec<String>,
    revoked: bool,
}

impl Modelled {
    fn named_by(&self, audience: &Who) -> bool {
        audience.principal.is_some() && audience.principal == self.who.principal
            || self.who.labels.iter().any(|l| audience.labels.contains(l))
    }
}

fn check(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let hub = Hub::builder().capacity(1_024).build();
    let mut listeners: Vec<Modelled> = Vec::new();
    for (n, op) in ops.into_iter().enumerate() {
        match op {
            Op::Open {
                who,
                tools,
                uris,
                own_queue,
            } => {
                let mut filter = Filter::new();
                if tools {
                    filter = filter.with_tools_list_changed();
                }
                for &uri in &uris {
                    filter = filter.with_resource(URIS[uri]);
                }
                let mut context = OpenContext::default();
                if let Some(p) = who.principal {
                    context = context.with_principal(Principal::new(PRINCIPALS[p]));
                }
                for &l in &who.labels {
                    context = context.with_label(Label::new(LABELS[l]));
                }
                if own_queue {
                    context =
                        context.with_queue(Settings::default().with_overflow(Overflow::Disconnect));
                }
                let listener = hub.listen_with(&filter, &context).unwrap();
                listeners.push(Modelled {
                    listener,
                    who,
                    tools,
                    uris: uris.into_iter().collect(),
                    expected: Vec::new(),
                    revoked: false,
                });
            }
            Op::Publish {
                uri,
                audience,
                listeners: by_id,
                succession,
            } => {
                let (method, params) = match uri {
                    None => ("notifications/tools/list_changed", json!({ "n": n })),
                    Some(u) => (
                        "notifications/resources/updated",
                        json!({ "uri": URIS[u], "n": n }),
                    ),
                };
                let mut event = Event::extension(method, params.as_object().unwrap().clone(), None);
                if succession {
                    event = event.with_succession(Succession::new(format!("k{n}"), 0));
                }
                let named: Vec<usize> = by_id
                    .iter()
                    .filter(|&&i| i < listeners.len())
                    .copied()
                    .collect();
                let scoped = audience.is_some() || !named.is_empty();
                if scoped {
                    let base = audience.as_ref().map_or_else(Audience::nobody, audience_of);
                    let audience = named
                        .iter()
                        .fold(base, |a, &i| a.with_listener(listeners[i].listener.id()));
                    event = event.with_audience(audience);
                }
                let text = event.to_plain_json();
                let mut reached = 0;
                for (i, m) in listeners.iter_mut().enumerate() {
                    let matches = match uri {
                        None => m.tools,
                        Some(u) => m.uris.contains(&u),
                    };
                    let included = !scoped
                        || audience.as_ref().is_some_and(|a| m.named_by(a))
                        || named.contains(&i);
                    if matches && included && !m.revoked {
                        m.expected.push(text.clone());
                        reached += 1;
                    }
                }
                let report = hub.publish(event);
                prop_assert_eq!(report.matched, reached, "publish {} matched", n);
            }
            Op::Revoke(who) => {
                let mut ended = 0;
                for m in listeners.iter_mut().filter(|m| !m.revoked) {
                    if m.named_by(&who) {
                        m.revoked = true;
                        m.expected.clear();
                        ended += 1;
                    }
                }
                prop_assert_eq!(hub.revoke(&audience_of(&who)), ended);
            }
        }
    }
    for (i, m) in listeners.iter_mut().enumerate() {
        let mut read = Vec::new();
        let mut end = None;
        while let Some(next) = m.listener.try_next() {
            match next {
                Next::Event(event) => read.push(event.to_plain_json()),
                other => {
                    end = Some(other);
                    break;
                }
            }
        }
        prop_assert_eq!(&read, &m.expected, "listener {} ({:?}) read", i, m.who);
        if m.revoked {
            prop_assert!(
                matches!(end, Some(Next::Failed(StreamError::Revoked))),
                "listener {} ended with {:?}",
                i,
                end
            );
        } else {
            prop_assert!(end.is_none(), "listener {} ended with {:?}", i, end);
        }
    }
    let stats = hub.stats();
    prop_assert!(stats.events.is_balanced(), "{:?}", stats.events);
    let revoked = listeners.iter().filter(|m| m.revoked).count() as u64;
    prop_assert_eq!(stats.listeners_closed.revoked, revoked);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_listener_reads_exactly_what_its_audiences_are_sent(
        ops in proptest::collection::vec(op(), 1..48)
    ) {
        check(ops)?;
    }
}

#[test]
fn listeners_of_different_audiences_never_share_a_lane() {
    let hub = Hub::new();
    let tools = Filter::new().with_tools_list_changed();
    let of = |principal: &str| OpenContext::default().with_principal(Principal::new(principal));
    // Two alike per principal: each pair shares a lane of its own.
    let mut alice: Vec<_> = (0..2)
        .map(|_| hub.listen_with(&tools, &of("alice")).unwrap())
        .collect();
    let mut bob: Vec<_> = (0..2)
        .map(|_| hub.listen_with(&tools, &of("bob")).unwrap())
        .collect();
    let report =
        hub.publish(Event::tools_list_changed().with_audience(Audience::principal("alice")));
    assert_eq!(report.queued, 2);
    for listener in &mut alice {
        assert!(matches!(listener.try_next(), Some(Next::Event(_))));
    }
    for listener in &mut bob {
        assert!(
            listener.try_next().is_none(),
            "bob's lane never held alice's event"
        );
    }
}

#[test]
fn an_event_for_one_listener_in_a_lane_reaches_it_alone() {
    let hub = Hub::new();
    let tools = Filter::new().with_tools_list_changed();
    let mut alike: Vec<_> = (0..3).map(|_| hub.listen(&tools).unwrap()).collect();
    let target = alike[2].id();
    let report = hub.publish(Event::tools_list_changed().with_audience(Audience::listener(target)));
    assert_eq!((report.matched, report.queued), (1, 1));
    // It moved to a queue of its own; its lane keeps the others.
    assert_eq!(hub.notify_tools_list_changed().queued, 3);
    let counts: Vec<usize> = alike
        .iter_mut()
        .map(|l| std::iter::from_fn(|| l.try_next()).count())
        .collect();
    assert_eq!(counts, [1, 1, 2]);
    assert!(hub.stats().events.is_balanced());
}

#[test]
fn revoking_a_label_ends_its_streams_and_no_other() {
    let hub = Hub::new();
    let tools = Filter::new().with_tools_list_changed();
    let tenant = |t: &str| OpenContext::default().with_label(Label::new(t));
    let mut a = hub.listen_with(&tools, &tenant("tenant:a")).unwrap();
    let mut b = hub.listen_with(&tools, &tenant("tenant:b")).unwrap();
    hub.notify_tools_list_changed();
    assert_eq!(hub.revoke(&Audience::label("tenant:a")), 1);
    assert!(matches!(
        a.try_next(),
        Some(Next::Failed(StreamError::Revoked))
    ));
    assert!(matches!(a.try_next(), Some(Next::Closed)));
    assert!(matches!(b.try_next(), Some(Next::Event(_))));
    assert_eq!(
        hub.revoke(&Audience::label("tenant:a")),
        0,
        "nothing left to end"
    );
    let stats = hub.stats();
    assert_eq!(stats.listeners_closed.revoked, 1);
    assert_eq!(stats.events.discarded, 1, "what it held was thrown away");
    assert!(stats.events.is_balanced());
}

#[test]
fn a_revocation_of_many_streams_ends_every_one_of_them_and_no_other() {
    let hub = Hub::new();
    let tools = Filter::new().with_tools_list_changed();
    let of = |p: &str| OpenContext::default().with_principal(Principal::new(p));
    // More than one hold of the registry's lock ends, in lanes and in
    // queues of their own (a listener that coalesces has its own).
    let mut alice: Vec<_> = (0..700)
        .map(|i| {
            hub.listen_with(
                &tools,
                &of("alice").with_queue(Settings::default().with_coalesce(i % 2 == 0)),
            )
            .unwrap()
        })
        .collect();
    let mut bob = hub.listen_with(&tools, &of("bob")).unwrap();
    assert_eq!(hub.revoke(&Audience::principal("alice")), 700);
    for listener in &mut alice {
        assert!(matches!(
            listener.try_next(),
            Some(Next::Failed(StreamError::Revoked))
        ));
    }
    assert_eq!(hub.notify_tools_list_changed().matched, 1);
    assert!(matches!(bob.try_next(), Some(Next::Event(_))));
    let stats = hub.stats();
    assert_eq!(stats.listeners_closed.revoked, 700);
    assert_eq!(stats.listeners_active, 1);
    assert!(stats.events.is_balanced());
}
