//! Sharded pub/sub on a Redis Cluster (feature `redis`): `SPUBLISH` and
//! `SSUBSCRIBE` over one cluster connection speaking RESP3, whose pushes
//! arrive on a channel of the relay's.
//!
//! A sharded channel lives on the node serving its hash slot, and one
//! `SSUBSCRIBE` may name channels of one slot only: channels are grouped
//! by their slot's hash tag (the key channels of one shard share one, see
//! `Channels`), one command a group. A connection the client reports lost
//! ends the link; the relay connects again, subscribes afresh and resyncs.

use std::time::Duration;

use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{ProtocolVersion, PushInfo, PushKind, Value};
use tokio::sync::mpsc;

use super::incoming::{BusMessage, LinkEvent, RECEIVE_BATCH, Result};
use super::redis::{message, publishes};

pub(crate) struct RedisClusterLink {
    connection: ClusterConnection,
    /// Unbounded as the client's own queues are: the relay's task reads it
    /// as fast as it reads any connection.
    pushes: mpsc::UnboundedReceiver<PushInfo>,
    /// The client reported the connection lost.
    lost: bool,
}

impl RedisClusterLink {
    /// `timeout` bounds connecting to each node and each reply, in place
    /// of the client's own shorter defaults.
    pub(crate) async fn connect(nodes: &[String], timeout: Duration) -> Result<Self> {
        let (sender, pushes) = mpsc::unbounded_channel();
        let client = ClusterClientBuilder::new(nodes.to_vec())
            .use_protocol(ProtocolVersion::RESP3)
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .push_sender(sender)
            .build()
            .map_err(message)?;
        let connection = client.get_async_connection().await.map_err(message)?;
        Ok(Self {
            connection,
            pushes,
            lost: false,
        })
    }

    /// One pipeline for each slot, since a pipeline's commands must share
    /// one. The first message's slot goes first and alone: a batch's
    /// revocations lead it on the catalog channel, and reach the other
    /// replicas ahead of its events. The other slots' pipelines then go at
    /// once, one round trip for them all, however many shards they reach.
    pub(crate) async fn publish(&mut self, messages: Vec<BusMessage>) -> Result<()> {
        let mut groups = by_slot(messages, |message| &message.channel).into_iter();
        let Some(first) = groups.next() else {
            return Ok(());
        };
        publishes("SPUBLISH", first)
            .query_async::<()>(&mut self.connection)
            .await
            .map_err(message)?;
        let rest = groups.map(|group| {
            let mut connection = self.connection.clone();
            async move {
                publishes("SPUBLISH", group)
                    .query_async::<()>(&mut connection)
                    .await
            }
        });
        futures_util::future::try_join_all(rest)
            .await
            .map_err(message)?;
        Ok(())
    }

    pub(crate) async fn subscribe(&mut self, channels: Vec<String>) -> Result<()> {
        for group in by_slot(channels, String::as_str) {
            self.connection.ssubscribe(group).await.map_err(message)?;
        }
        Ok(())
    }

    pub(crate) async fn unsubscribe(&mut self, channels: Vec<String>) -> Result<()> {
        for group in by_slot(channels, String::as_str) {
            self.connection.sunsubscribe(group).await.map_err(message)?;
        }
        Ok(())
    }

    /// Every message that has arrived, up to `RECEIVE_BATCH`; `None` once
    /// the client reported the connection lost, after the messages before
    /// that.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: `recv_many` takes nothing unless it returns.
    pub(crate) async fn next(&mut self) -> Option<LinkEvent> {
        let mut pushes = Vec::new();
        loop {
            if self.lost || self.pushes.recv_many(&mut pushes, RECEIVE_BATCH).await == 0 {
                return None;
            }
            let mut batch = Vec::new();
            for push in pushes.drain(..) {
                match push.kind {
                    PushKind::SMessage => {
                        let mut data = push.data.into_iter();
                        if let (
                            Some(Value::BulkString(channel)),
                            Some(Value::BulkString(payload)),
                        ) = (data.next(), data.next())
                        {
                            let channel = String::from_utf8_lossy(&channel).into_owned();
                            batch.push(BusMessage { channel, payload });
                        }
                    }
                    PushKind::Disconnection => {
                        self.lost = true;
                        break;
                    }
                    // Subscription confirmations, and whatever else the
                    // client passes on.
                    _ => {}
                }
            }
            if !batch.is_empty() {
                return Some(LinkEvent::Messages(batch));
            }
        }
    }
}

/// `items` grouped by the hash tag that picks their `channel`'s slot
/// (Redis's rule: the text between the first `{` and the next `}`, when not
/// empty; otherwise the whole name): the groups in the order of their first
/// item, each group's items in the order given. Sent in that order, a batch
/// that spans shards keeps its order wherever it can: an event on one
/// shard never waits for a later one on another.
fn by_slot<T>(items: Vec<T>, channel: impl Fn(&T) -> &str) -> Vec<Vec<T>> {
    let mut tags: Vec<String> = Vec::new();
    let mut groups: Vec<Vec<T>> = Vec::new();
    for item in items {
        let tag = hash_tag(channel(&item));
        match tags.iter().position(|known| known == tag) {
            Some(at) => groups[at].push(item),
            None => {
                tags.push(tag.to_owned());
                groups.push(vec![item]);
            }
        }
    }
    groups
}

fn hash_tag(channel: &str) -> &str {
    channel
        .split_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(tag, _)| tag)
        .filter(|tag| !tag.is_empty())
        .unwrap_or(channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_grouped_by_the_slot_their_tag_picks() {
        assert_eq!(hash_tag("{mcp.3}.key.ab"), "mcp.3");
        assert_eq!(hash_tag("mcp.catalog"), "mcp.catalog");
        assert_eq!(hash_tag("a{}b{c}"), "a{}b{c}", "an empty tag is no tag");
        let groups = by_slot(
            ["{p.1}.key.a", "p.catalog", "{p.1}.key.b", "{p.2}.key.c"]
                .map(String::from)
                .to_vec(),
            String::as_str,
        );
        assert_eq!(
            groups,
            [
                vec!["{p.1}.key.a".to_owned(), "{p.1}.key.b".to_owned()],
                vec!["p.catalog".to_owned()],
                vec!["{p.2}.key.c".to_owned()],
            ]
        );
    }
}
