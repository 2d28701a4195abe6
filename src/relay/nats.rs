//! Core NATS (feature `nats`). The client reconnects and resubscribes by
//! itself; it tells the relay when its connection goes and comes back
//! (`LinkEvent::Down`, `LinkEvent::Up`), so the relay can resync.
//!
//! The client reads every subject from one socket, in the order the server
//! delivers them, but hands each subscription its messages on a queue of
//! its own. Reading those queues one after another would lose the order
//! between subjects, so they are read as one: each subscription's waker
//! records that it has messages, and a read takes batches until no
//! subscription has any. Every message the socket delivered before one in
//! the batch was then taken too, in this batch or an earlier one, and the
//! relay sorts each batch by the origins' order.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::task::AtomicWaker;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::incoming::{BusMessage, LinkEvent, Result};

/// Connection events waiting for the relay's task.
const EVENTS: usize = 16;

pub(crate) struct NatsLink {
    client: async_nats::Client,
    subscriptions: Subscriptions,
    events: mpsc::Receiver<LinkEvent>,
    /// A subject of this connection's own, and its subscription: a
    /// message sent there and received back is a round trip through the
    /// server, which handles a connection's commands in order (`flush`
    /// only writes them to the socket).
    /// Boxed: a subscriber is large, and a link is moved around whole.
    probe: (String, Box<async_nats::Subscriber>),
}

impl NatsLink {
    /// `timeout` bounds connecting and each request, as the relay's
    /// other operations are bounded.
    pub(crate) async fn connect(url: &str, timeout: Duration) -> Result<Self> {
        let (sender, events) = mpsc::channel(EVENTS);
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(timeout)
            .request_timeout(Some(timeout))
            .event_callback(move |event| {
                let sender = sender.clone();
                async move {
                    let incoming = match event {
                        async_nats::Event::Disconnected => LinkEvent::Down,
                        async_nats::Event::Connected => LinkEvent::Up,
                        _ => return,
                    };
                    // The relay may be gone; nothing to tell then.
                    let _ = sender.send(incoming).await;
                }
            })
            .connect(url)
            .await
            .map_err(|e| e.to_string())?;
        let subject = client.new_inbox();
        let probe = client
            .subscribe(subject.clone())
            .await
            .map_err(|e| e.to_string())?;
        Ok(Self {
            client,
            subscriptions: Subscriptions::default(),
            events,
            probe: (subject, Box::new(probe)),
        })
    }

    /// The client writes what it is handed in the background, batching
    /// writes itself: handing each message over is enough.
    pub(crate) async fn publish(&mut self, messages: Vec<BusMessage>) -> Result<()> {
        for BusMessage { channel, payload } in messages {
            self.client
                .publish(channel, payload.into())
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    pub(crate) async fn subscribe(&mut self, subjects: Vec<String>) -> Result<()> {
        for subject in subjects {
            if self.subscriptions.contains(&subject) {
                continue;
            }
            let subscriber = self
                .client
                .subscribe(subject.clone())
                .await
                .map_err(|e| e.to_string())?;
            self.subscriptions.insert(subject, subscriber);
        }
        // A round trip, so that the server has every subscription before
        // this returns (as Redis confirms each one): the relay tells
        // listeners acknowledged before it to catch up from that moment.
        let (subject, probe) = &mut self.probe;
        self.client
            .publish(subject.clone(), bytes::Bytes::new())
            .await
            .map_err(|e| e.to_string())?;
        match probe.next().await {
            Some(_) => Ok(()),
            None => Err("the connection closed".to_owned()),
        }
    }

    /// Dropping a subscriber unsubscribes it.
    pub(crate) fn unsubscribe(&mut self, subjects: Vec<String>) -> Result<()> {
        for subject in subjects {
            self.subscriptions.remove(&subject);
        }
        Ok(())
    }

    /// # Cancel safety
    ///
    /// Cancel-safe: a batch is returned from the poll that takes it.
    pub(crate) async fn next(&mut self) -> Option<LinkEvent> {
        // Unconstrained: tokio's budget could make a queue that holds
        // messages look empty, and a batch would then miss them.
        tokio::task::unconstrained(poll_fn(|cx| {
            if let Poll::Ready(event) = self.events.poll_recv(cx) {
                return Poll::Ready(event);
            }
            self.subscriptions.poll_batch(cx)
        }))
        .await
    }
}

/// Subscriptions read as one stream of batches.
#[derive(Default)]
struct Subscriptions {
    by_subject: HashMap<String, u64>,
    by_id: HashMap<u64, Subscription>,
    next_id: u64,
    ready: Arc<Ready>,
    /// A subscription ended: the client is gone.
    ended: bool,
}

struct Subscription {
    subscriber: async_nats::Subscriber,
    /// Records this subscription in `ready` when its queue gets a message.
    waker: Waker,
}

/// The subscriptions whose queues may hold messages, and the relay's task
/// to wake when one does.
#[derive(Default)]
struct Ready {
    ids: Mutex<Vec<u64>>,
    task: AtomicWaker,
}

struct SubscriptionWaker {
    id: u64,
    ready: Arc<Ready>,
}

impl Wake for SubscriptionWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.ids.lock().push(self.id);
        self.ready.task.wake();
    }
}

impl Subscriptions {
    fn contains(&self, subject: &str) -> bool {
        self.by_subject.contains_key(subject)
    }

    fn insert(&mut self, subject: String, subscriber: async_nats::Subscriber) {
        let id = self.next_id;
        self.next_id += 1;
        let waker = Waker::from(Arc::new(SubscriptionWaker {
            id,
            ready: Arc::clone(&self.ready),
        }));
        // Never polled yet, so nothing would record it: read it once.
        waker.wake_by_ref();
        self.by_subject.insert(subject, id);
        self.by_id.insert(id, Subscription { subscriber, waker });
    }

    fn remove(&mut self, subject: &str) {
        if let Some(id) = self.by_subject.remove(subject) {
            self.by_id.remove(&id);
        }
    }

    /// Every message any subscription holds, taken until none holds one;
    /// `Ready(None)` once a subscription ended (the client is gone).
    fn poll_batch(&mut self, cx: &mut Context<'_>) -> Poll<Option<LinkEvent>> {
        if self.ended {
            return Poll::Ready(None);
        }
        self.ready.task.register(cx.waker());
        let mut batch = Vec::new();
        loop {
            let ids = std::mem::take(&mut *self.ready.ids.lock());
            if ids.is_empty() {
                break;
            }
            for id in ids {
                let Some(subscription) = self.by_id.get_mut(&id) else {
                    continue;
                };
                let mut cx = Context::from_waker(&subscription.waker);
                loop {
                    match subscription.subscriber.poll_next_unpin(&mut cx) {
                        Poll::Ready(Some(message)) => batch.push(BusMessage {
                            channel: message.subject.to_string(),
                            payload: message.payload.to_vec(),
                        }),
                        Poll::Ready(None) => {
                            self.ended = true;
                            break;
                        }
                        Poll::Pending => break,
                    }
                }
            }
        }
        if !batch.is_empty() {
            Poll::Ready(Some(LinkEvent::Messages(batch)))
        } else if self.ended {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }
}
