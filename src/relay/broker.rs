//! The broker a relay is joined to, named by a URL.

use std::fmt;

use super::error::RelayError;

/// A broker a [`Relay`](super::Relay) joins replicas through.
///
/// ```
/// use mcp_subscriptions::relay::Broker;
///
/// # #[cfg(feature = "redis")]
/// assert!(Broker::from_url("redis://127.0.0.1:6379").is_ok());
/// assert!(Broker::from_url("amqp://127.0.0.1").is_err());
/// ```
#[derive(Clone)]
pub struct Broker {
    pub(crate) kind: BrokerKind,
    url: String,
}

#[derive(Clone)]
pub(crate) enum BrokerKind {
    #[cfg(feature = "redis")]
    Redis(redis::Client),
    /// The nodes to start from; each connection builds its own client,
    /// since the client owns where its messages go.
    #[cfg(feature = "redis")]
    RedisCluster(Vec<String>),
    #[cfg(feature = "nats")]
    Nats(String),
}

impl BrokerKind {
    /// Whether channels are sharded (Redis Cluster's `SSUBSCRIBE`).
    pub(crate) fn is_sharded(&self) -> bool {
        match self {
            #[cfg(feature = "redis")]
            Self::RedisCluster(_) => true,
            _ => false,
        }
    }
}

impl Broker {
    /// The broker a URL names: `redis://` or `rediss://` for one Redis
    /// server and `redis+cluster://HOST:PORT[,HOST:PORT...]` for a Redis
    /// Cluster (feature `redis`), `nats://` (feature `nats`).
    ///
    /// # Errors
    ///
    /// [`RelayError::Unsupported`] for another scheme or one whose feature
    /// is off; [`RelayError::InvalidUrl`] for a URL the client refuses.
    pub fn from_url(url: &str) -> Result<Self, RelayError> {
        let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
        match scheme {
            #[cfg(feature = "redis")]
            "redis" | "rediss" => Self::redis(url),
            #[cfg(feature = "redis")]
            "redis+cluster" => {
                let nodes = url["redis+cluster://".len()..]
                    .split(',')
                    .map(|node| format!("redis://{node}"));
                Self::redis_cluster(nodes).map(|broker| Self {
                    url: url.to_owned(),
                    ..broker
                })
            }
            #[cfg(feature = "nats")]
            "nats" => Self::nats(url),
            _ => Err(RelayError::Unsupported(url.to_owned())),
        }
    }

    /// A Redis server (Redis Pub/Sub), such as `redis://127.0.0.1:6379`.
    ///
    /// # Errors
    ///
    /// [`RelayError::InvalidUrl`] when the redis client refuses the URL.
    #[cfg(feature = "redis")]
    pub fn redis(url: &str) -> Result<Self, RelayError> {
        let client = redis::Client::open(url).map_err(|e| RelayError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            kind: BrokerKind::Redis(client),
            url: url.to_owned(),
        })
    }

    /// A Redis Cluster (sharded pub/sub: `SSUBSCRIBE`, `SPUBLISH`), reached
    /// through any of `nodes`, such as `redis://127.0.0.1:7000`; the
    /// client finds the others. Each key's channel lives on one of
    /// [`RelayOptions::shards`](super::RelayOptions::shards) hash slots.
    ///
    /// # Errors
    ///
    /// [`RelayError::InvalidUrl`] when there is no node or the redis client
    /// refuses one.
    #[cfg(feature = "redis")]
    pub fn redis_cluster<I>(nodes: I) -> Result<Self, RelayError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let nodes: Vec<String> = nodes.into_iter().map(Into::into).collect();
        let url = nodes.join(",");
        redis::cluster::ClusterClient::new(nodes.clone()).map_err(|e| RelayError::InvalidUrl {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            kind: BrokerKind::RedisCluster(nodes),
            url,
        })
    }

    /// A NATS server (core NATS), such as `nats://127.0.0.1:4222`.
    ///
    /// # Errors
    ///
    /// [`RelayError::InvalidUrl`] when the URL does not parse.
    #[cfg(feature = "nats")]
    pub fn nats(url: &str) -> Result<Self, RelayError> {
        url.parse::<async_nats::ServerAddr>()
            .map_err(|e| RelayError::InvalidUrl {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            kind: BrokerKind::Nats(url.to_owned()),
            url: url.to_owned(),
        })
    }

    /// The URL it was made from.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl fmt::Debug for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broker").field("url", &self.url).finish()
    }
}
