//! The relay's task: one loop that connects, keeps the broker's
//! subscriptions in step with the hub's interest, sends what publishers
//! queued, publishes what other replicas sent into the hub, and watches
//! for lost messages.
//!
//! Everything here runs on the one task, so its state needs no lock; the
//! only state shared with publishers is the outbound queue (see
//! `handle.rs`).

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior, sleep, timeout};

use super::broker::Broker;
use super::channels::{self, Channels};
use super::envelope::{self, Body, Envelope, Stamp};
use super::incoming::{BusMessage, LinkEvent};
use super::link::Link;
use super::options::RelayOptions;
use super::origins::{Heard, Origins};
use super::shared::Inner;
use super::stats::{add, bump};
use super::subscriptions::Subscriptions;
use crate::audience::Audience;
use crate::event::Event;
use crate::hub::{Forward, InterestChange, InterestKey, InterestWatch};
use crate::util::backoff::{Backoff, random_below};

/// How often the task looks at its clocks (heartbeats, grace periods,
/// resyncs, silent origins).
const TICK: Duration = Duration::from_millis(50);

/// Channels named in one subscribe or unsubscribe command, at most.
const BATCH: usize = 1_000;

/// Events sent in one round trip to the broker, at most: enough that a
/// burst costs a few round trips, few enough that a publisher's next event
/// does not wait long behind the batch before it.
const SEND_BATCH: usize = 64;

/// How a connected session ended.
enum Ended {
    /// The connection failed: connect again.
    Lost,
    /// Every handle dropped, or the hub completed: stop.
    Stop,
}

struct Driver {
    inner: Arc<Inner>,
    broker: Broker,
    options: RelayOptions,
    watch: InterestWatch,
    subscriptions: Subscriptions,
    /// This replica's catalog messages so far.
    seq: u64,
    /// This replica's messages so far, on every channel.
    order: u64,
    origins: Origins,
    next_heartbeat: Instant,
    resync_at: Option<Instant>,
    /// A resync was sent to local listeners: ask the others to send again
    /// what a resync does not bring back (see `RelayOptions::with_resend`).
    ask_resend: bool,
    /// NATS reconnects by itself; this is whether it says it is down.
    link_down: bool,
}

pub(crate) async fn run(
    inner: Arc<Inner>,
    broker: Broker,
    options: RelayOptions,
    watch: InterestWatch,
) {
    let channels = if broker.kind.is_sharded() {
        Channels::sharded(&options.prefix, options.shards)
    } else {
        Channels::new(&options.prefix)
    };
    // Whatever ends the task (its end, or its future dropped, aborted),
    // whoever waits in `Relay::close` is told.
    let _ended = EndedGuard(inner.clone());
    let mut driver = Driver {
        subscriptions: Subscriptions::new(channels, options.grace),
        inner,
        broker,
        options,
        watch,
        seq: 0,
        order: 0,
        origins: Origins::default(),
        next_heartbeat: Instant::now(),
        resync_at: None,
        ask_resend: false,
        link_down: false,
    };
    driver.run().await;
}

struct EndedGuard(Arc<Inner>);

impl Drop for EndedGuard {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::Release);
        self.0.ended_notify.notify_waiters();
    }
}

impl Driver {
    async fn run(&mut self) {
        let backoff = Backoff {
            initial: self.options.backoff_min,
            max: self.options.backoff_max,
        };
        // Failed connects in a row.
        let mut failed = 0;
        let mut connected_before = false;
        loop {
            if self.stopping() {
                return;
            }
            let (kind, limit) = (self.broker.kind.clone(), self.options.timeout);
            let connecting = async move { timeout(limit, Link::connect(&kind, limit)).await };
            let Some(link) = self.undisturbed(connecting).await else {
                return;
            };
            let Ok(Ok(mut link)) = link else {
                // Degraded: local delivery goes on; try again after a
                // jittered, growing wait, unless closed meanwhile.
                failed += 1;
                if self
                    .undisturbed(sleep(backoff.delay(failed)))
                    .await
                    .is_none()
                {
                    return;
                }
                continue;
            };
            failed = 0;
            if connected_before {
                bump(&self.inner.counters.reconnects);
                // Whatever was sent while we were away is lost.
                self.schedule_resync();
            } else if self.inner.hub.stats().listeners_active > 0 {
                // Listeners opened before this replica could hear the
                // others may have missed what was sent meanwhile (the
                // keys' catch-up covers their URIs, not the lists). Only
                // this replica's own listeners pay for it.
                self.schedule_resync();
            }
            connected_before = true;
            let ended = self.session(&mut link).await;
            self.inner
                .counters
                .connected
                .store(false, Ordering::Relaxed);
            self.subscriptions.connection_lost();
            self.inner
                .counters
                .subscribed_keys
                .store(0, Ordering::Relaxed);
            if matches!(ended, Ended::Stop) {
                return;
            }
        }
    }

    /// Runs `work` (a connect attempt or a backoff wait) to its end, or
    /// `None` once the relay is to stop. Publishing only queues meanwhile,
    /// so it can neither abort a connect nor hurry a backoff, however
    /// loaded the replica; interest changes are applied afterwards, and
    /// subscribed with the rest once connected.
    async fn undisturbed<T>(&mut self, work: impl Future<Output = T>) -> Option<T> {
        let mut work = pin!(work);
        let mut changes = Vec::new();
        let done = loop {
            tokio::select! {
                done = &mut work => break Some(done),
                change = self.watch.next() => match change {
                    Some(change) => changes.push(change),
                    None => break None,
                },
                () = self.inner.closing.notified() => break None,
            }
        };
        for change in changes {
            self.apply(change);
        }
        done
    }

    /// Every handle dropped, or the hub completed with nothing left to read.
    fn stopping(&self) -> bool {
        self.inner.is_closed() || (self.watch.is_ended() && self.inner.hub.is_complete())
    }

    async fn session(&mut self, link: &mut Link) -> Ended {
        self.drain_interest();
        self.link_down = false;
        self.origins.rejoin(Instant::now());
        if !self.subscribe_all(link).await {
            return Ended::Lost;
        }
        self.inner.counters.connected.store(true, Ordering::Relaxed);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            if self.stopping() {
                self.leave(link).await;
                return Ended::Stop;
            }
            if !self.send_queued(link).await
                || !self.send_resend_ask(link).await
                || !self.flush_subscriptions(link, false).await
            {
                return Ended::Lost;
            }
            tokio::select! {
                () = self.inner.wake.notified() => {}
                change = self.watch.next() => match change {
                    Some(change) => self.apply(change),
                    None => {
                        self.leave(link).await;
                        return Ended::Stop;
                    }
                },
                incoming = link.next() => match incoming {
                    Some(LinkEvent::Messages(batch)) => self.receive(batch),
                    Some(LinkEvent::Down) => {
                        self.link_down = true;
                        self.inner.counters.connected.store(false, Ordering::Relaxed);
                    }
                    Some(LinkEvent::Up) => {
                        if self.link_down {
                            self.link_down = false;
                            self.inner.counters.connected.store(true, Ordering::Relaxed);
                            bump(&self.inner.counters.reconnects);
                            self.origins.rejoin(Instant::now());
                            self.schedule_resync();
                        }
                    }
                    None => return Ended::Lost,
                },
                _ = tick.tick() => {
                    if !self.on_tick(link).await {
                        return Ended::Lost;
                    }
                }
            }
        }
    }

    /// Asks the other replicas to send again what a resync does not bring
    /// back, once a resync went to local listeners.
    async fn send_resend_ask(&mut self, link: &mut Link) -> bool {
        if !self.ask_resend {
            return true;
        }
        let ask = self.on_catalog(envelope::encode_resend);
        if !self.send(link, vec![ask]).await {
            return false;
        }
        self.ask_resend = false;
        true
    }

    /// Stops gracefully on a live connection: sends what is still queued,
    /// then says goodbye, so the others owe this replica no resync. When
    /// the send fails nothing more is said, and its silence resyncs them,
    /// as for a replica that died.
    async fn leave(&mut self, link: &mut Link) {
        if self.link_down || !self.send_queued(link).await {
            return;
        }
        let goodbye = self.on_catalog(envelope::encode_goodbye);
        self.send(link, vec![goodbye]).await;
    }

    /// Takes every interest change already pending, so one flush covers
    /// them all.
    fn drain_interest(&mut self) {
        while let Some(change) = self.watch.try_next() {
            self.apply(change);
        }
    }

    fn apply(&mut self, change: InterestChange) {
        self.subscriptions.apply(change);
    }

    async fn subscribe_all(&mut self, link: &mut Link) -> bool {
        self.flush_subscriptions(link, true).await
    }

    /// Subscribes what is wanted and not subscribed, unsubscribes the
    /// reverse, in batches.
    async fn flush_subscriptions(&mut self, link: &mut Link, always: bool) -> bool {
        self.drain_interest();
        let Some(flush) = self.subscriptions.flush(always) else {
            return true;
        };
        for batch in flush.unsubscribe.chunks(BATCH) {
            let unsubscribing = link.unsubscribe(batch.to_vec());
            if !matches!(
                timeout(self.options.timeout, unsubscribing).await,
                Ok(Ok(()))
            ) {
                return false;
            }
            self.subscriptions.unsubscribed(batch);
        }
        for batch in flush.subscribe.chunks(BATCH) {
            let subscribing = link.subscribe(batch.to_vec());
            if !matches!(timeout(self.options.timeout, subscribing).await, Ok(Ok(()))) {
                return false;
            }
            self.subscriptions.subscribed(batch);
        }
        // Caught up before the count shows the keys subscribed, so that
        // whoever sees the count finds the catch-up already delivered.
        self.catch_up(&flush.subscribe);
        self.inner
            .counters
            .subscribed_keys
            .store(self.subscriptions.subscribed_keys(), Ordering::Relaxed);
        true
    }

    /// Tells the listeners of keys whose channels were just subscribed
    /// that their keys may have changed: they were acknowledged before the
    /// subscription took effect, and a change published on another replica
    /// in between went by unheard. A whole resync already due covers them
    /// instead (after a reconnect). Task statuses are not resent: a new
    /// listener of a task gets its next status.
    fn catch_up(&mut self, subscribed: &[String]) {
        let uris = self.subscriptions.take_fresh(subscribed);
        if self.resync_at.is_some() {
            return;
        }
        // Counted first, as a resync is.
        add(&self.inner.counters.keys_caught_up, uris.len() as u64);
        for uri in uris {
            self.inner.hub.publish_here(Event::resource_updated(uri));
        }
    }

    /// Sends every queued event, up to `SEND_BATCH` at a time in one round
    /// trip, each batch after the revocations queued before it (on the
    /// catalog channel). A batch the broker did not acknowledge is lost,
    /// and counted as dropped whole (part of it may have reached the
    /// broker): the next heartbeat tells the others. Its revocations wait
    /// for the next connection instead, ahead of any revoked since.
    async fn send_queued(&mut self, link: &mut Link) -> bool {
        loop {
            // One short lock per batch, so a publisher never waits behind a
            // send.
            let (revocations, events) = self.inner.outbound.lock().take(SEND_BATCH);
            if revocations.is_empty() && events.is_empty() {
                return true;
            }
            let mut messages: Vec<BusMessage> = revocations
                .iter()
                .map(|audience| self.revocation(audience))
                .collect();
            messages.extend(events.iter().map(|event| self.message(event)));
            let sent = events.len() as u64;
            if !self.send(link, messages).await {
                self.inner.outbound.lock().unsend(revocations);
                add(&self.inner.counters.outbound_dropped, sent);
                return false;
            }
            add(&self.inner.counters.published, sent);
            add(
                &self.inner.counters.revocations_sent,
                revocations.len() as u64,
            );
            bump(&self.inner.counters.batches);
        }
    }

    /// A revocation of `audience`'s streams, on the catalog channel.
    fn revocation(&mut self, audience: &Audience) -> BusMessage {
        self.on_catalog(|origin, stamp| envelope::encode_revoke(origin, stamp, audience))
    }

    /// A message of this replica's on the catalog channel, numbered next.
    fn on_catalog(&mut self, encode: impl FnOnce(&str, Stamp) -> Vec<u8>) -> BusMessage {
        let stamp = self.stamp(true);
        BusMessage {
            channel: self.subscriptions.catalog().to_owned(),
            payload: encode(&self.inner.origin, stamp),
        }
    }

    /// An event as the message that carries it: on its key's channel, or
    /// on the catalog channel when it has no key.
    fn message(&mut self, event: &Event) -> BusMessage {
        let (channel, catalog) = match channels::route(event) {
            Some(key) => (self.subscriptions.channel(&key), false),
            None => (self.subscriptions.catalog().to_owned(), true),
        };
        let stamp = self.stamp(catalog);
        BusMessage {
            channel,
            payload: envelope::encode_event(&self.inner.origin, stamp, event),
        }
    }

    /// The next message's place among this replica's.
    fn stamp(&mut self, catalog: bool) -> Stamp {
        self.order += 1;
        if catalog {
            self.seq += 1;
        }
        Stamp {
            seq: if catalog { self.seq } else { 0 },
            order: self.order,
        }
    }

    async fn send(&self, link: &mut Link, messages: Vec<BusMessage>) -> bool {
        matches!(
            timeout(self.options.timeout, link.publish(messages)).await,
            Ok(Ok(()))
        )
    }

    /// Publishes a batch into the hub, each origin's messages in the order
    /// it sent them (see `LinkEvent::Messages`).
    fn receive(&mut self, batch: Vec<BusMessage>) {
        let mut envelopes: Vec<(String, Envelope)> = batch
            .into_iter()
            .filter_map(|m| Some((m.channel, envelope::decode(&m.payload)?)))
            .collect();
        envelopes
            .sort_by(|(_, a), (_, b)| (&a.origin, a.stamp.order).cmp(&(&b.origin, b.stamp.order)));
        for (channel, envelope) in envelopes {
            self.receive_one(&channel, envelope);
        }
    }

    fn receive_one(&mut self, channel: &str, envelope: Envelope) {
        if envelope.origin == self.inner.origin {
            bump(&self.inner.counters.echo_skipped);
            return;
        }
        if channel == self.subscriptions.catalog() {
            self.heard(&envelope);
        }
        match envelope.body {
            Body::Event(event) => {
                self.inner.hub.publish_here(event);
                bump(&self.inner.counters.received);
            }
            Body::Revoke(audience) => {
                self.inner.hub.revoke_here(&audience);
                bump(&self.inner.counters.revocations_received);
            }
            Body::Resend => {
                if let Some(resend) = &self.options.resend {
                    let events = (resend.0)();
                    add(&self.inner.counters.resent, events.len() as u64);
                    // To the other replicas alone: this one's own listeners
                    // lost nothing.
                    events
                        .into_iter()
                        .for_each(|event| self.inner.forward(event));
                }
            }
            Body::Goodbye => {
                if self.origins.left(&envelope.origin) {
                    bump(&self.inner.counters.replicas_left);
                    self.count_replicas();
                }
            }
            Body::Heartbeat { .. } => {}
        }
    }

    /// Notes a catalog message of another replica, and resyncs when it
    /// shows that messages may have been lost (see `origins.rs`).
    fn heard(&mut self, envelope: &Envelope) {
        let dropped = match envelope.body {
            Body::Heartbeat { dropped } => Some(dropped),
            Body::Event(_) | Body::Revoke(_) | Body::Goodbye | Body::Resend => None,
        };
        let heard = self.origins.heard(
            &envelope.origin,
            envelope.stamp.seq,
            dropped,
            Instant::now(),
        );
        match heard {
            Heard::Known => return,
            Heard::Joined => {
                bump(&self.inner.counters.replicas_joined);
                self.count_replicas();
                return;
            }
            Heard::Rejoined => {
                bump(&self.inner.counters.replicas_joined);
                self.count_replicas();
            }
            Heard::Lost => bump(&self.inner.counters.sequence_gaps),
        }
        self.schedule_resync();
    }

    fn count_replicas(&self) {
        self.inner
            .counters
            .replicas
            .store(self.origins.len() as u64, Ordering::Relaxed);
    }

    async fn on_tick(&mut self, link: &mut Link) -> bool {
        let now = Instant::now();
        self.subscriptions.expire(now.into_std());
        // While the link is down no one can be heard; the clocks start
        // again when it is back.
        let silent = 3 * self.options.heartbeat;
        if !self.link_down && self.origins.forget_silent(now, silent) > 0 {
            // A replica went quiet: it is gone, or its messages are lost.
            // It is forgotten, so that if it speaks again (a partition
            // healed) it is heard as new, and resynced for again.
            bump(&self.inner.counters.sequence_gaps);
            self.count_replicas();
            self.schedule_resync();
        }
        if self.resync_at.is_some_and(|at| at <= now) {
            self.resync_at = None;
            self.resync();
        }
        if now >= self.next_heartbeat && !self.link_down {
            self.next_heartbeat = now + self.options.heartbeat;
            let dropped = self.inner.counters.outbound_dropped.load(Ordering::Relaxed);
            let heartbeat =
                self.on_catalog(|origin, stamp| envelope::encode_heartbeat(origin, stamp, dropped));
            if !self.send(link, vec![heartbeat]).await {
                return false;
            }
        }
        true
    }

    /// A resync after a random delay within the jitter window, unless one
    /// is already due (resyncs coalesce).
    fn schedule_resync(&mut self) {
        if self.resync_at.is_none() {
            let delay = random_below(self.options.resync_jitter);
            self.resync_at = Some(Instant::now() + delay);
        }
    }

    /// Tells local listeners that anything may have changed: a list change
    /// of each kind (reaching only the listeners that asked for it) and an
    /// update of each watched URI; and asks the other replicas to send
    /// again what they keep for a resync (each task's latest status).
    fn resync(&mut self) {
        // Counted first, so that a listener that has the resync finds it
        // counted.
        bump(&self.inner.counters.resyncs);
        self.ask_resend = true;
        let hub = &self.inner.hub;
        hub.publish_here(Event::tools_list_changed());
        hub.publish_here(Event::prompts_list_changed());
        hub.publish_here(Event::resources_list_changed());
        for key in self.subscriptions.watched() {
            if let InterestKey::Resource(uri) = key {
                hub.publish_here(Event::resource_updated(uri.clone()));
            }
        }
    }
}
