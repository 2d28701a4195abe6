//! Audiences: who an event is for. A publish scoped to one tenant (a
//! label) of a hub holding many, against the same fan-out unscoped on a
//! hub holding just that tenant's listeners; and revocation, the time from
//! `Hub::revoke` until the last of a principal's streams has read its end,
//! against ending the same streams by completing the hub.

use std::future::{Future, poll_fn};
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::Poll;
use std::time::{Duration, Instant};

use mcp_subscriptions::error::StreamError;
use mcp_subscriptions::{
    Audience, Event, Filter, Hub, Listener, Next, OpenContext, audience::Principal,
};
use tokio::runtime::Runtime;

use super::Scenario;

/// The label of tenant `i`.
fn tenant(i: usize) -> String {
    format!("tenant:{i}")
}

/// Who a tenant's listeners are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// Alike: the tenant's label and nothing else, so a tenant's listeners
    /// share one lane.
    Alike,
    /// Each its own principal as well (a user of the tenant), so no two
    /// share a membership, hence a lane: each has a queue of its own.
    OwnPrincipal,
}

impl Streams {
    /// The context of listener `i` of tenant `t`, labelled with its
    /// tenant or not.
    fn context(self, t: usize, i: usize, labelled: bool) -> OpenContext {
        let mut context = OpenContext::default();
        if self == Self::OwnPrincipal {
            context = context.with_principal(Principal::new(format!("user:{t}:{i}")));
        }
        if labelled {
            context = context.with_label(tenant(t));
        }
        context
    }
}

/// One publish to a tenant's listeners, each then drained with
/// `try_next`: scoped to one tenant among many ([`Scoped::new`]) or
/// unscoped to a hub holding only those listeners ([`Scoped::unscoped`],
/// the anchor). Every listener has the same filter (tools-list changes).
pub struct Scoped {
    hub: Hub,
    /// The listeners the event is for, drained after each publish.
    reached: Vec<Listener>,
    /// Everyone else's, held open.
    others: Vec<Listener>,
    event: Event,
}

impl Scoped {
    /// Listeners per tenant.
    pub const PER_TENANT: usize = 100;

    /// `tenants` tenants of [`PER_TENANT`](Self::PER_TENANT) listeners
    /// each, each listener labelled with its tenant; the event is a
    /// tools-list change for the middle tenant's label.
    pub fn new(tenants: usize, streams: Streams) -> Self {
        let hub = Hub::builder()
            .max_listeners(tenants * Self::PER_TENANT)
            .build();
        let filter = Filter::new().with_tools_list_changed();
        let target = tenants / 2;
        let (mut reached, mut others) = (Vec::new(), Vec::new());
        for t in 0..tenants {
            let listeners = (0..Self::PER_TENANT).map(|i| {
                hub.listen_with(&filter, &streams.context(t, i, true))
                    .unwrap()
            });
            if t == target {
                reached.extend(listeners);
            } else {
                others.extend(listeners);
            }
        }
        let event = Event::tools_list_changed().with_audience(Audience::label(tenant(target)));
        Self::checked(hub, reached, others, event)
    }

    /// The anchor: one tenant's [`PER_TENANT`](Self::PER_TENANT)
    /// listeners, without labels, alone on a hub, and the tools-list change
    /// for everyone.
    pub fn unscoped(streams: Streams) -> Self {
        let hub = Hub::builder().max_listeners(Self::PER_TENANT).build();
        let filter = Filter::new().with_tools_list_changed();
        let reached = (0..Self::PER_TENANT)
            .map(|i| {
                hub.listen_with(&filter, &streams.context(0, i, false))
                    .unwrap()
            })
            .collect();
        Self::checked(hub, reached, Vec::new(), Event::tools_list_changed())
    }

    /// Checks, once and untimed, that the event reaches exactly the
    /// listeners it is for.
    fn checked(hub: Hub, reached: Vec<Listener>, others: Vec<Listener>, event: Event) -> Self {
        let mut scoped = Self {
            hub,
            reached,
            others,
            event,
        };
        let report = scoped.hub.publish(scoped.event.clone());
        assert_eq!(report.matched, Self::PER_TENANT, "{report:?}");
        scoped.drain();
        assert!(
            scoped.others.iter_mut().all(|l| l.try_next().is_none()),
            "an event scoped to one tenant reached another"
        );
        scoped
    }

    /// Takes the one event each listener the event is for holds.
    #[inline]
    fn drain(&mut self) {
        for listener in &mut self.reached {
            let Some(Next::Event(event)) = listener.try_next() else {
                panic!("every listener of the tenant has the event");
            };
            black_box(event);
        }
    }

    /// Publishes and drains `iters` times, untimed: what callgrind counts.
    pub fn repeat(&mut self, iters: u64) {
        for _ in 0..iters {
            self.hub.publish(self.event.clone());
            self.drain();
        }
    }
}

impl Scenario for Scoped {
    fn run(&mut self, iters: u64) -> Duration {
        let start = Instant::now();
        self.repeat(iters);
        start.elapsed()
    }
}

/// How the streams of a [`Revocation`] are ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `hub.revoke(&Audience::principal(..))`: each reads
    /// [`StreamError::Revoked`].
    Revoke,
    /// The anchor: `hub.complete()`, each reading [`Next::Complete`].
    Complete,
}

/// One principal's streams on one hub, each read by a task on a 2-worker
/// tokio runtime (as the fan-out's readers are) waiting for its next item
/// when they are ended.
pub struct Revocation {
    runtime: Runtime,
    streams: usize,
}

impl Revocation {
    /// The principal holding the streams.
    pub const PRINCIPAL: &str = "p";

    /// `streams` streams a round.
    pub fn new(streams: usize) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        Self { runtime, streams }
    }

    /// One round on a fresh hub: opens the streams, waits (untimed) until
    /// every reading task is asleep in `next`, then ends them all by
    /// `ending`; the time from that call until the last task has read its
    /// end.
    pub fn round(&self, ending: Ending) -> Duration {
        let n = self.streams;
        let hub = Hub::builder().max_listeners(n).build();
        let filter = Filter::new().with_tools_list_changed();
        let context = OpenContext::default().with_principal(Principal::new(Self::PRINCIPAL));
        let (waiting, remaining) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(n)));
        let (done_tx, done) = mpsc::sync_channel(1);
        for _ in 0..n {
            let mut listener = hub.listen_with(&filter, &context).unwrap();
            let (waiting, remaining, done_tx) =
                (waiting.clone(), remaining.clone(), done_tx.clone());
            self.runtime.spawn(async move {
                let mut next = pin!(listener.next());
                let mut asleep = false;
                let end = poll_fn(|cx| match next.as_mut().poll(cx) {
                    Poll::Pending if !asleep => {
                        asleep = true;
                        waiting.fetch_add(1, Ordering::Release);
                        Poll::Pending
                    }
                    poll => poll,
                })
                .await;
                let expected = match ending {
                    Ending::Revoke => matches!(end, Next::Failed(StreamError::Revoked)),
                    Ending::Complete => end == Next::Complete,
                };
                assert!(expected, "{ending:?} ended a stream with {end:?}");
                if remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    done_tx.send(()).unwrap();
                }
            });
        }
        while waiting.load(Ordering::Acquire) < n {
            std::thread::sleep(Duration::from_micros(200));
        }
        let start = Instant::now();
        match ending {
            Ending::Revoke => {
                let ended = hub.revoke(&Audience::principal(Self::PRINCIPAL));
                assert_eq!(ended, n, "revoke ends every stream of the principal");
            }
            Ending::Complete => hub.complete(),
        }
        done.recv().unwrap();
        let took = start.elapsed();
        // Untimed: every stream is gone from the hub, counted as it ended.
        let stats = hub.stats();
        let closed = stats.listeners_closed;
        let counted = match ending {
            Ending::Revoke => closed.revoked,
            Ending::Complete => closed.complete,
        };
        assert_eq!(
            (stats.listeners_active, counted, closed.total()),
            (0, n as u64, n as u64),
            "{stats:?}"
        );
        took
    }
}
