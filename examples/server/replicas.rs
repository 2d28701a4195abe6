//! Where the tools publish: into this server's hub, or, with `--relay URL`,
//! through a relay that also hands each event to the other replicas
//! through the broker (and publishes theirs into this hub).
//!
//! `--relay` exists in every build, so that `--help` does not depend on
//! the features; a build without the feature its URL needs refuses it as
//! clap refuses any bad value.

#[cfg(any(feature = "redis", feature = "nats"))]
use mcp_subscriptions::relay::{Relay, RelayOptions};
use mcp_subscriptions::{Event, Hub, PublishReport};

/// The broker `--relay` names.
#[cfg(any(feature = "redis", feature = "nats"))]
pub(crate) use mcp_subscriptions::relay::Broker;

/// Without the `redis` and `nats` features there is no broker to name, and
/// no URL parses into one.
#[cfg(not(any(feature = "redis", feature = "nats")))]
#[derive(Clone)]
pub(crate) enum Broker {}

/// `--relay`'s parser: the broker a URL names.
#[cfg(any(feature = "redis", feature = "nats"))]
pub(crate) fn broker(url: &str) -> Result<Broker, String> {
    Broker::from_url(url).map_err(|err| err.to_string())
}

/// `--relay`'s parser in a build that has no broker.
#[cfg(not(any(feature = "redis", feature = "nats")))]
pub(crate) fn broker(url: &str) -> Result<Broker, String> {
    Err(format!(
        "no relay for {url}: this build has neither the `redis` nor the `nats` feature \
         (build with `--features redis` or `--features nats`)"
    ))
}

/// What the tools publish through.
#[derive(Clone)]
pub(crate) enum Publisher {
    /// This replica's listeners only.
    Local(Hub),
    /// This replica's listeners at once, and every other replica's through
    /// the broker.
    #[cfg(any(feature = "redis", feature = "nats"))]
    Relayed(Relay),
}

impl Publisher {
    /// Publishes into `hub`, through a relay to `broker` when there is one
    /// (its task spawned on the current runtime).
    pub(crate) fn new(hub: Hub, broker: Option<Broker>) -> Self {
        match broker {
            None => Self::Local(hub),
            #[cfg(any(feature = "redis", feature = "nats"))]
            Some(broker) => Self::Relayed(Relay::spawn(hub, broker, RelayOptions::default())),
            #[cfg(not(any(feature = "redis", feature = "nats")))]
            Some(never) => match never {},
        }
    }

    /// Publishes `event` here, and to the other replicas when relayed.
    pub(crate) fn publish(&self, event: Event) -> PublishReport {
        match self {
            Self::Local(hub) => hub.publish(event),
            #[cfg(any(feature = "redis", feature = "nats"))]
            Self::Relayed(relay) => relay.publish(event),
        }
    }

    /// The local hub.
    pub(crate) fn hub(&self) -> &Hub {
        match self {
            Self::Local(hub) => hub,
            #[cfg(any(feature = "redis", feature = "nats"))]
            Self::Relayed(relay) => relay.hub(),
        }
    }

    /// This replica's id on the bus, when relayed: task ids carry it, so
    /// that two replicas never start tasks of the same id.
    pub(crate) fn replica(&self) -> Option<&str> {
        match self {
            Self::Local(_) => None,
            #[cfg(any(feature = "redis", feature = "nats"))]
            Self::Relayed(relay) => Some(relay.origin()),
        }
    }

    /// The hub's statistics as JSON, with the relay's under `relay` when
    /// there is one.
    pub(crate) fn stats(&self) -> serde_json::Value {
        let hub = serde_json::to_value(self.hub().stats()).expect("stats serialize");
        match self {
            Self::Local(_) => hub,
            #[cfg(any(feature = "redis", feature = "nats"))]
            Self::Relayed(relay) => {
                let mut stats = hub;
                let relay = serde_json::to_value(relay.stats()).expect("stats serialize");
                if let Some(object) = stats.as_object_mut() {
                    object.insert("relay".to_owned(), relay);
                }
                stats
            }
        }
    }

    /// Records the hub's counters, and the relay's, to the `metrics`
    /// recorder.
    pub(crate) fn record_metrics(&self) {
        self.hub().record_metrics();
        #[cfg(any(feature = "redis", feature = "nats"))]
        if let Self::Relayed(relay) = self {
            relay.record_metrics();
        }
    }
}
