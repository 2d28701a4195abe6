//! One connection to a broker, whichever it is: publish, subscribe and
//! unsubscribe channels, and read what arrives.

use std::time::Duration;

use super::broker::BrokerKind;
use super::incoming::{BusMessage, LinkEvent, Result};

pub(crate) enum Link {
    #[cfg(feature = "redis")]
    Redis(super::redis::RedisLink),
    #[cfg(feature = "redis")]
    RedisCluster(super::redis_cluster::RedisClusterLink),
    #[cfg(feature = "nats")]
    Nats(super::nats::NatsLink),
}

impl Link {
    /// A new connection whose client bounds each operation by `timeout`
    /// (`RelayOptions::timeout`).
    pub(crate) async fn connect(broker: &BrokerKind, timeout: Duration) -> Result<Self> {
        match broker {
            #[cfg(feature = "redis")]
            BrokerKind::Redis(client) => super::redis::RedisLink::connect(client, timeout)
                .await
                .map(Self::Redis),
            #[cfg(feature = "redis")]
            BrokerKind::RedisCluster(nodes) => {
                super::redis_cluster::RedisClusterLink::connect(nodes, timeout)
                    .await
                    .map(Self::RedisCluster)
            }
            #[cfg(feature = "nats")]
            BrokerKind::Nats(url) => super::nats::NatsLink::connect(url, timeout)
                .await
                .map(Self::Nats),
        }
    }

    /// Sends `messages` in one round trip where the broker allows it, each
    /// channel's in order.
    pub(crate) async fn publish(&mut self, messages: Vec<BusMessage>) -> Result<()> {
        match self {
            #[cfg(feature = "redis")]
            Self::Redis(link) => link.publish(messages).await,
            #[cfg(feature = "redis")]
            Self::RedisCluster(link) => link.publish(messages).await,
            #[cfg(feature = "nats")]
            Self::Nats(link) => link.publish(messages).await,
        }
    }

    pub(crate) async fn subscribe(&mut self, channels: Vec<String>) -> Result<()> {
        match self {
            #[cfg(feature = "redis")]
            Self::Redis(link) => link.subscribe(channels).await,
            #[cfg(feature = "redis")]
            Self::RedisCluster(link) => link.subscribe(channels).await,
            #[cfg(feature = "nats")]
            Self::Nats(link) => link.subscribe(channels).await,
        }
    }

    pub(crate) async fn unsubscribe(&mut self, channels: Vec<String>) -> Result<()> {
        match self {
            #[cfg(feature = "redis")]
            Self::Redis(link) => link.unsubscribe(channels).await,
            #[cfg(feature = "redis")]
            Self::RedisCluster(link) => link.unsubscribe(channels).await,
            #[cfg(feature = "nats")]
            Self::Nats(link) => link.unsubscribe(channels),
        }
    }

    /// The next thing that arrives; `None` when the connection is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: nothing is taken unless it is returned.
    pub(crate) async fn next(&mut self) -> Option<LinkEvent> {
        match self {
            #[cfg(feature = "redis")]
            Self::Redis(link) => link.next().await,
            #[cfg(feature = "redis")]
            Self::RedisCluster(link) => link.next().await,
            #[cfg(feature = "nats")]
            Self::Nats(link) => link.next().await,
        }
    }
}
