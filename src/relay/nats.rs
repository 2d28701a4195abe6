//! Core NATS (feature `nats`). The client reconnects and resubscribes by
//! itself; it tells the relay when its connection goes and comes back
//! (`Incoming::Down`, `Incoming::Up`), so the relay can resync. Each
//! subscription is forwarded into one channel by a small task; dropping
//! the subscription (aborting its task) unsubscribes.

use std::collections::HashMap;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::incoming::{Incoming, Result};

/// Messages waiting for the relay's task; a subscription's forwarder waits
/// when it is full, and the NATS client then drops for the slow consumer.
const INCOMING: usize = 4_096;

pub(crate) struct NatsLink {
    client: async_nats::Client,
    subscriptions: HashMap<String, JoinHandle<()>>,
    sender: mpsc::Sender<Incoming>,
    receiver: mpsc::Receiver<Incoming>,
}

impl NatsLink {
    pub(crate) async fn connect(url: &str) -> Result<Self> {
        let (sender, receiver) = mpsc::channel(INCOMING);
        let events = sender.clone();
        let client = async_nats::ConnectOptions::new()
            .event_callback(move |event| {
                let events = events.clone();
                async move {
                    let incoming = match event {
                        async_nats::Event::Disconnected => Incoming::Down,
                        async_nats::Event::Connected => Incoming::Up,
                        _ => return,
                    };
                    // The relay may be gone; nothing to tell then.
                    let _ = events.send(incoming).await;
                }
            })
            .connect(url)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Self {
            client,
            subscriptions: HashMap::new(),
            sender,
            receiver,
        })
    }

    pub(crate) async fn publish(&mut self, subject: &str, payload: Vec<u8>) -> Result<()> {
        self.client
            .publish(subject.to_owned(), payload.into())
            .await
            .map_err(|e| e.to_string())
    }

    pub(crate) async fn subscribe(&mut self, subjects: Vec<String>) -> Result<()> {
        for subject in subjects {
            if self.subscriptions.contains_key(&subject) {
                continue;
            }
            let mut subscriber = self
                .client
                .subscribe(subject.clone())
                .await
                .map_err(|e| e.to_string())?;
            let sender = self.sender.clone();
            let forward = tokio::spawn(async move {
                while let Some(message) = subscriber.next().await {
                    let incoming = Incoming::Message {
                        channel: message.subject.to_string(),
                        payload: message.payload.to_vec(),
                    };
                    if sender.send(incoming).await.is_err() {
                        break;
                    }
                }
            });
            self.subscriptions.insert(subject, forward);
        }
        // A round trip, so that the server has every subscription before
        // this returns (as Redis confirms each one).
        self.client.flush().await.map_err(|e| e.to_string())
    }

    pub(crate) fn unsubscribe(&mut self, subjects: Vec<String>) -> Result<()> {
        for subject in subjects {
            if let Some(forward) = self.subscriptions.remove(&subject) {
                forward.abort();
            }
        }
        Ok(())
    }

    pub(crate) async fn next(&mut self) -> Option<Incoming> {
        self.receiver.recv().await
    }
}

impl Drop for NatsLink {
    fn drop(&mut self) {
        for forward in self.subscriptions.values() {
            forward.abort();
        }
    }
}
