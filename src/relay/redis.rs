//! Redis Pub/Sub (feature `redis`): one multiplexed connection to publish,
//! one subscriber connection split into its command sink and message
//! stream. The stream ending means the connection is gone; the relay
//! connects again and resubscribes.

use futures_util::StreamExt;
use redis::aio::{MultiplexedConnection, PubSubSink, PubSubStream};

use super::incoming::{Incoming, Message, Result};

pub(crate) struct RedisLink {
    publisher: MultiplexedConnection,
    sink: PubSubSink,
    stream: PubSubStream,
}

fn message(e: redis::RedisError) -> String {
    e.to_string()
}

impl RedisLink {
    pub(crate) async fn connect(client: &redis::Client) -> Result<Self> {
        let publisher = client
            .get_multiplexed_async_connection()
            .await
            .map_err(message)?;
        let (sink, stream) = client.get_async_pubsub().await.map_err(message)?.split();
        Ok(Self {
            publisher,
            sink,
            stream,
        })
    }

    pub(crate) async fn publish(&mut self, channel: &str, payload: Vec<u8>) -> Result<()> {
        redis::cmd("PUBLISH")
            .arg(channel)
            .arg(payload)
            .query_async::<i64>(&mut self.publisher)
            .await
            .map(drop)
            .map_err(message)
    }

    pub(crate) async fn subscribe(&mut self, channels: Vec<String>) -> Result<()> {
        if channels.is_empty() {
            return Ok(());
        }
        self.sink.subscribe(channels).await.map_err(message)
    }

    pub(crate) async fn unsubscribe(&mut self, channels: Vec<String>) -> Result<()> {
        if channels.is_empty() {
            return Ok(());
        }
        self.sink.unsubscribe(channels).await.map_err(message)
    }

    pub(crate) async fn next(&mut self) -> Option<Incoming> {
        let message = self.stream.next().await?;
        Some(Incoming::Messages(vec![Message {
            channel: message.get_channel_name().to_owned(),
            payload: message.get_payload_bytes().to_vec(),
        }]))
    }
}
