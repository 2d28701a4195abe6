//! Rendering: one listener's copy of an event, spliced or serialized again.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mcp_subscriptions::{Event, SubscriptionId};
use rmcp::model::RequestId;
use serde::Serialize;
use serde_json::{Map, Value};

use super::Scenario;

/// The params of a notification carrying `payload` bytes of data.
fn params_of(payload: usize) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("uri".into(), Value::from("file:///a"));
    params.insert("blob".into(), Value::from("x".repeat(payload)));
    params
}

const RENDER_METHOD: &str = "notifications/x";

/// One listener's copy of an event: the hub's message, spliced from the
/// rendering made at publish.
pub struct Stamp {
    event: Event,
    id: SubscriptionId,
}

impl Stamp {
    /// An extension event carrying `payload` bytes of data, and one
    /// listener's subscription id.
    pub fn new(payload: usize) -> Self {
        Self {
            event: Event::extension(RENDER_METHOD, params_of(payload), None),
            id: SubscriptionId::new(&RequestId::String("listen-1".into())),
        }
    }
}

impl Scenario for Stamp {
    fn run(&mut self, iters: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(self.event.stamped(black_box(&self.id)));
        }
        start.elapsed()
    }
}

/// The anchor: serializing each listener's copy again with its id, from
/// borrowed parts, as a per-listener `serde_json` pass would.
pub struct Reserialize {
    params: Map<String, Value>,
    id: RequestId,
    out: Vec<u8>,
}

impl Reserialize {
    /// The params of an event carrying `payload` bytes of data, and one
    /// listener's request id.
    pub fn new(payload: usize) -> Self {
        Self {
            params: params_of(payload),
            id: RequestId::String("listen-1".into()),
            out: Vec::with_capacity(payload + 256),
        }
    }
}

impl Scenario for Reserialize {
    fn run(&mut self, iters: u64) -> Duration {
        #[derive(Serialize)]
        struct Meta<'a> {
            #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
            subscription_id: &'a RequestId,
        }
        #[derive(Serialize)]
        struct Params<'a> {
            #[serde(rename = "_meta")]
            meta: Meta<'a>,
            #[serde(flatten)]
            rest: &'a Map<String, Value>,
        }
        #[derive(Serialize)]
        struct Notification<'a> {
            jsonrpc: &'static str,
            method: &'static str,
            params: Params<'a>,
        }
        let start = Instant::now();
        for _ in 0..iters {
            let message = Notification {
                jsonrpc: "2.0",
                method: RENDER_METHOD,
                params: Params {
                    meta: Meta {
                        subscription_id: &self.id,
                    },
                    rest: &self.params,
                },
            };
            self.out.clear();
            serde_json::to_writer(&mut self.out, &message).unwrap();
            black_box(&self.out);
        }
        start.elapsed()
    }
}
