//! Redis Pub/Sub (feature `redis`): one multiplexed connection to publish,
//! one subscriber connection split into its command sink and message
//! stream. The stream ending means the connection is gone; the relay
//! connects again and resubscribes.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::ReadyChunks;
use redis::AsyncConnectionConfig;
use redis::aio::{MultiplexedConnection, PubSubSink, PubSubStream};

use super::incoming::{BusMessage, LinkEvent, RECEIVE_BATCH, Result};

pub(crate) struct RedisLink {
    publisher: MultiplexedConnection,
    sink: PubSubSink,
    stream: ReadyChunks<PubSubStream>,
}

/// A client error as the relay reports it.
pub(super) fn message(e: redis::RedisError) -> String {
    e.to_string()
}

/// `command` (`PUBLISH` or `SPUBLISH`) for each message, in order, in one
/// pipeline whose replies are ignored.
pub(super) fn publishes(command: &str, messages: Vec<BusMessage>) -> redis::Pipeline {
    let mut pipeline = redis::pipe();
    for BusMessage { channel, payload } in messages {
        pipeline.cmd(command).arg(channel).arg(payload).ignore();
    }
    pipeline
}

impl RedisLink {
    /// `timeout` bounds the publisher's connecting and each of its
    /// replies, in place of the client's own shorter defaults, so that the
    /// relay's one documented timeout decides when a broker is lost.
    pub(crate) async fn connect(client: &redis::Client, timeout: Duration) -> Result<Self> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let publisher = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(message)?;
        let (sink, stream) = client.get_async_pubsub().await.map_err(message)?.split();
        let stream = stream.ready_chunks(RECEIVE_BATCH);
        Ok(Self {
            publisher,
            sink,
            stream,
        })
    }

    /// One pipeline: every `PUBLISH` written at once, one round trip.
    pub(crate) async fn publish(&mut self, messages: Vec<BusMessage>) -> Result<()> {
        publishes("PUBLISH", messages)
            .query_async::<()>(&mut self.publisher)
            .await
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

    /// Every message that has arrived, up to `RECEIVE_BATCH`.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: `ReadyChunks` returns a batch from the poll that
    /// takes it.
    pub(crate) async fn next(&mut self) -> Option<LinkEvent> {
        let batch = self.stream.next().await?;
        Some(LinkEvent::Messages(
            batch
                .into_iter()
                .map(|message| BusMessage {
                    channel: message.get_channel_name().to_owned(),
                    payload: message.get_payload_bytes().to_vec(),
                })
                .collect(),
        ))
    }
}
