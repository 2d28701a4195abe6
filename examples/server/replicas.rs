//! This server among its replicas: with `--relay URL`, a relay attached to
//! its hub hands each event the tools publish to the other replicas
//! through the broker (and publishes theirs into this hub); the tools
//! publish through the hub either way.
//!
//! `--relay` exists in every build, so that `--help` does not depend on
//! the features; a build without the feature its URL needs refuses it as
//! clap refuses any bad value.

use mcp_subscriptions::Hub;

use crate::tasks::Tasks;
#[cfg(any_relay)]
use mcp_subscriptions::relay::{Relay, RelayOptions};

/// The broker `--relay` names.
#[cfg(any_relay)]
pub(crate) use mcp_subscriptions::relay::Broker;

/// Without the `redis` and `nats` features there is no broker to name, and
/// no URL parses into one.
#[cfg(not(any_relay))]
#[derive(Clone)]
pub(crate) enum Broker {}

/// `--relay`'s parser: the broker a URL names.
#[cfg(any_relay)]
pub(crate) fn broker(url: &str) -> Result<Broker, String> {
    Broker::from_url(url).map_err(|err| err.to_string())
}

/// `--relay`'s parser in a build that has no broker.
#[cfg(not(any_relay))]
pub(crate) fn broker(url: &str) -> Result<Broker, String> {
    Err(format!(
        "no relay for {url}: this build has neither the `redis` nor the `nats` feature \
         (build with `--features redis` or `--features nats`)"
    ))
}

/// This server among its replicas: its hub, and the relay that joins it
/// to the others' when there is one. The relay attaches to the hub, so the
/// tools publish through the hub either way.
#[derive(Clone)]
pub(crate) struct Replica {
    hub: Hub,
    #[cfg(any_relay)]
    relay: Option<Relay>,
}

impl Replica {
    /// `hub`, joined through a relay to `broker` when there is one (its
    /// task spawned on the current runtime), which sends `tasks`' latest
    /// statuses again when another replica resyncs.
    pub(crate) fn join(
        hub: Hub,
        broker: Option<Broker>,
        // Only a relay sends statuses again.
        #[cfg_attr(not(any_relay), allow(unused_variables))] tasks: &Tasks,
    ) -> Self {
        match broker {
            None => Self {
                hub,
                #[cfg(any_relay)]
                relay: None,
            },
            #[cfg(any_relay)]
            Some(broker) => {
                let tasks = tasks.clone();
                let options = RelayOptions::default().with_resend(move || tasks.latest());
                let relay =
                    Relay::spawn(hub.clone(), broker, options).expect("a new hub has no relay");
                Self {
                    hub,
                    relay: Some(relay),
                }
            }
            #[cfg(not(any_relay))]
            Some(never) => match never {},
        }
    }

    /// Leaves the other replicas gracefully, when relayed: what is still
    /// queued is sent, then a goodbye, so that this replica's going costs
    /// their listeners nothing.
    pub(crate) async fn leave(&self) {
        #[cfg(any_relay)]
        if let Some(relay) = &self.relay {
            relay.close().await;
            tracing::info!(origin = relay.origin(), "left the other replicas");
        }
    }

    /// The hub, to publish through and serve from.
    pub(crate) fn hub(&self) -> &Hub {
        &self.hub
    }

    /// This replica's id on the bus, when relayed: task ids carry it, so
    /// that two replicas never start tasks of the same id.
    pub(crate) fn origin(&self) -> Option<&str> {
        #[cfg(any_relay)]
        if let Some(relay) = &self.relay {
            return Some(relay.origin());
        }
        None
    }

    /// The hub's statistics as JSON, with this process under `replica`
    /// (its pid, and its relay origin or null) and the relay's under
    /// `relay` when there is one.
    pub(crate) fn stats(&self) -> serde_json::Value {
        let mut stats = serde_json::to_value(self.hub.stats()).expect("stats serialize");
        // Which process answered: behind a shared port (`--reuse-port`) a
        // request reaches any replica.
        let replica = serde_json::json!({"pid": std::process::id(), "origin": self.origin()});
        if let Some(object) = stats.as_object_mut() {
            object.insert("replica".to_owned(), replica);
        }
        #[cfg(any_relay)]
        if let (Some(relay), Some(object)) = (&self.relay, stats.as_object_mut()) {
            let relay = serde_json::to_value(relay.stats()).expect("stats serialize");
            object.insert("relay".to_owned(), relay);
        }
        stats
    }

    /// Records the hub's counters, and the relay's, to the `metrics`
    /// recorder.
    pub(crate) fn record_metrics(&self) {
        self.hub.record_metrics();
        #[cfg(any_relay)]
        if let Some(relay) = &self.relay {
            relay.record_metrics();
        }
    }
}
