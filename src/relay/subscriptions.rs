//! The broker channels the relay wants subscribed, kept in step with the
//! hub's interest: the catalog channel always; a key's channel while some
//! local listener watches the key (two keys may share a hashed channel);
//! and a channel no key needs any more for a grace after, so that a
//! listener that leaves and comes back costs no unsubscribe and subscribe.
//!
//! What the current connection has subscribed is kept beside it, so that a
//! flush sends only the difference; and the keys watched since the last
//! flush, so that once their channels are subscribed their listeners are
//! caught up (see `Driver::catch_up`).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::channels::Channels;
use crate::hub::{InterestChange, InterestKey};
use crate::util::holds::{Arrival, Holds, Leaving};

pub(super) struct Subscriptions {
    channels: Channels,
    catalog: String,
    grace: Duration,
    /// The keys local listeners watch.
    watched: HashSet<InterestKey>,
    /// Keys watched since the last flush and still watched (so never more
    /// than `watched`), to catch up once their channels are subscribed.
    fresh: HashSet<InterestKey>,
    /// The channels of watched keys, each held by its keys; one no key
    /// needs any more lingers until its grace ends.
    wanted: Holds<String>,
    /// The channels subscribed on the current connection.
    subscribed: HashSet<String>,
    /// Whether `subscribed` may differ from what is wanted.
    dirty: bool,
}

/// What a flush sends the broker.
pub(super) struct Flush {
    pub(super) unsubscribe: Vec<String>,
    pub(super) subscribe: Vec<String>,
}

impl Subscriptions {
    pub(super) fn new(channels: Channels, grace: Duration) -> Self {
        Self {
            catalog: channels.catalog(),
            channels,
            grace,
            watched: HashSet::new(),
            fresh: HashSet::new(),
            wanted: Holds::default(),
            subscribed: HashSet::new(),
            dirty: false,
        }
    }

    /// The catalog channel.
    pub(super) fn catalog(&self) -> &str {
        &self.catalog
    }

    /// The channel of `key`.
    pub(super) fn channel(&self, key: &InterestKey) -> String {
        self.channels.key(key)
    }

    /// The keys local listeners watch.
    pub(super) fn watched(&self) -> impl Iterator<Item = &InterestKey> {
        self.watched.iter()
    }

    pub(super) fn apply(&mut self, change: InterestChange) {
        match change {
            InterestChange::Watched(key) => {
                let channel = self.channels.key(&key);
                self.fresh.insert(key.clone());
                self.watched.insert(key);
                if self.wanted.hold(channel, || ()).0 != Arrival::Another {
                    self.dirty = true;
                }
            }
            InterestChange::Unwatched(key) => {
                let channel = self.channels.key(&key);
                self.fresh.remove(&key);
                self.watched.remove(&key);
                if self.wanted.release(&channel, None) == Leaving::Last {
                    if self.subscribed.contains(&channel) {
                        self.wanted.idle(&channel, Instant::now() + self.grace);
                    } else {
                        self.wanted.remove(&channel);
                        self.dirty = true;
                    }
                }
            }
        }
    }

    /// A new connection has subscribed nothing yet.
    pub(super) fn connection_lost(&mut self) {
        self.subscribed.clear();
    }

    /// Ends the graces that are over by `now`.
    pub(super) fn expire(&mut self, now: Instant) {
        self.dirty |= !self.wanted.lapsed(now).is_empty();
    }

    /// What to unsubscribe and subscribe, when anything may have changed
    /// since the last flush (or `always`, on a new connection).
    pub(super) fn flush(&mut self, always: bool) -> Option<Flush> {
        if !(self.dirty || always) {
            return None;
        }
        self.dirty = false;
        let mut subscribe: Vec<String> = std::iter::once(&self.catalog)
            .chain(self.wanted.keys())
            .filter(|c| !self.subscribed.contains(*c))
            .cloned()
            .collect();
        subscribe.sort_unstable();
        subscribe.dedup();
        let unsubscribe = self
            .subscribed
            .iter()
            .filter(|c| !self.wanted(c))
            .cloned()
            .collect();
        Some(Flush {
            unsubscribe,
            subscribe,
        })
    }

    fn wanted(&self, channel: &String) -> bool {
        channel == &self.catalog || self.wanted.contains(channel)
    }

    /// The broker confirmed these unsubscribed.
    pub(super) fn unsubscribed(&mut self, channels: &[String]) {
        for channel in channels {
            self.subscribed.remove(channel);
        }
    }

    /// The broker confirmed these subscribed.
    pub(super) fn subscribed(&mut self, channels: &[String]) {
        self.subscribed.extend(channels.iter().cloned());
    }

    /// The key channels subscribed (the catalog channel aside).
    pub(super) fn subscribed_keys(&self) -> u64 {
        self.subscribed.len().saturating_sub(1) as u64
    }

    /// The URIs watched since the last flush whose channels are among
    /// `subscribed`, just now; the other fresh keys are forgotten.
    pub(super) fn take_fresh(&mut self, subscribed: &[String]) -> Vec<String> {
        let fresh = std::mem::take(&mut self.fresh);
        let subscribed: HashSet<&String> = subscribed.iter().collect();
        fresh
            .into_iter()
            .filter(|key| subscribed.contains(&self.channels.key(key)))
            .filter_map(|key| match key {
                InterestKey::Resource(uri) => Some(uri),
                InterestKey::Extension { .. } => None,
            })
            .collect()
    }
}
