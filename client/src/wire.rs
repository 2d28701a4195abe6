//! A listen stream read off the wire (Streamable HTTP and stdio alike): the
//! transport hands over one stream's messages, and the stream checks them
//! in order and yields them as the crate's own [`SourceHandle`].

use std::future::Future;

use crate::error::{ProtocolError, SubscribeError};
use crate::item::End;
use crate::protocol::{Expect, Incoming, Step};
use mcp_subscriptions::Filter;
use mcp_subscriptions::{CloseReason, Next, SourceHandle};

/// A message for the stream, or why what came is not one (not JSON).
pub(super) type Received = Result<Incoming, ProtocolError>;

/// One stream's messages as a transport reads them.
pub(super) trait Wire: Send + 'static {
    /// The next message for this stream; `Err` with why once the
    /// transport closed without a result.
    fn recv(&mut self) -> impl Future<Output = Result<Received, String>> + Send;

    /// Ends the stream from our side: a closed response over HTTP,
    /// `notifications/cancelled` on stdio.
    fn cancel(self);
}

/// One acknowledged stream of a [`Wire`].
pub(super) struct WireStream<W> {
    /// `None` once closed.
    wire: Option<W>,
    expect: Expect,
    ending: Ending,
}

/// How a transport's stream ended, once it did: kept for the pump, which
/// reports what [`Next`] has no room for (an abrupt close and its reason,
/// a protocol error, an unserved channel).
#[derive(Default)]
pub(super) struct Ending(Option<End>);

impl Ending {
    /// Whether the stream ended.
    pub(super) fn is_over(&self) -> bool {
        self.0.is_some()
    }

    /// Keeps `end` and yields it as a served stream would.
    pub(super) fn keep(&mut self, end: End) -> Next {
        let next = end.as_next();
        self.0 = Some(end);
        next
    }

    /// How the stream ended, given the terminal item it yielded last (it
    /// stays ended: nothing is read after it).
    pub(super) fn reason(&self, last: Next) -> End {
        self.0.clone().unwrap_or_else(|| End::of(last))
    }
}

impl<W: Wire> WireStream<W> {
    /// Reads the first message of a new stream: the grant and the stream
    /// once acknowledged; the server's refusal; or a protocol error when
    /// anything else came first.
    pub(super) async fn acknowledged(
        wire: W,
        expect: Expect,
    ) -> Result<(Filter, Self), SubscribeError> {
        let mut stream = Self {
            wire: Some(wire),
            expect,
            ending: Ending::default(),
        };
        match stream.step().await {
            Ok(Step::Acknowledged(granted)) => Ok((granted, stream)),
            Ok(Step::End(end)) => Err(match end.error() {
                Some(error) => SubscribeError::Refused(error.clone()),
                None => ProtocolError::BeforeAcknowledgement {
                    what: "a result".into(),
                }
                .into(),
            }),
            Ok(_) => Err(ProtocolError::BeforeAcknowledgement {
                what: "a notification".into(),
            }
            .into()),
            Err(End::Protocol(err)) => Err(err.into()),
            Err(_) => Err(SubscribeError::Closed),
        }
    }

    /// How the stream ended, as the subscription reports it; `last` is what
    /// [`next`](SourceHandle::next) returned last.
    pub(super) fn end(&self, last: Next) -> End {
        self.ending.reason(last)
    }

    /// The next step: keep-alives and requests from the server are skipped.
    async fn step(&mut self) -> Result<Step, End> {
        let Some(wire) = &mut self.wire else {
            return Err(End::Cancelled);
        };
        loop {
            let message = wire.recv().await.map_err(End::Abrupt)?;
            match message.and_then(|message| self.expect.message(message)) {
                Ok(Step::Skip) => {}
                Ok(step) => return Ok(step),
                Err(err) => return Err(End::Protocol(err)),
            }
        }
    }
}

impl<W: Wire> SourceHandle for WireStream<W> {
    async fn next(&mut self) -> Next {
        if self.ending.is_over() || self.wire.is_none() {
            return Next::Closed;
        }
        match self.step().await {
            Ok(Step::Event(event)) => Next::Event(event),
            Ok(Step::End(end)) | Err(end) => self.ending.keep(end),
            // A second acknowledgement ends the stream too.
            Ok(Step::Acknowledged(_) | Step::Skip) => {
                self.ending
                    .keep(End::Protocol(ProtocolError::InvalidAcknowledgement(
                        "a second acknowledgement".into(),
                    )))
            }
        }
    }

    fn close(&mut self, _: CloseReason) {
        if let Some(wire) = self.wire.take() {
            wire.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rmcp::model::RequestId;
    use serde_json::{Value, json};

    use super::*;
    use mcp_subscriptions::block_on_timeout;
    use mcp_subscriptions::error::StreamError;

    /// Messages given in advance, then a closed transport.
    struct Script(VecDeque<Value>, Arc<AtomicBool>);

    impl Wire for Script {
        async fn recv(&mut self) -> Result<Received, String> {
            let value = self.0.pop_front().ok_or_else(|| "gone".to_owned())?;
            Ok(Incoming::parse(value.to_string()))
        }

        fn cancel(self) {
            self.1.store(true, Ordering::Relaxed);
        }
    }

    fn opened(messages: Vec<Value>) -> (WireStream<Script>, Arc<AtomicBool>) {
        let stamp = json!({"io.modelcontextprotocol/subscriptionId": "l-1"});
        let mut script = vec![json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": stamp, "notifications": {"toolsListChanged": true}},
        })];
        script.extend(messages);
        let cancelled = Arc::new(AtomicBool::new(false));
        let wire = Script(script.into(), Arc::clone(&cancelled));
        let requested = Filter::new().with_tools_list_changed();
        let expect = Expect::new(&RequestId::String("l-1".into()), &requested);
        let opening = WireStream::acknowledged(wire, expect);
        let (granted, stream) = block_on_timeout(opening, std::time::Duration::from_secs(1))
            .expect("no wait")
            .expect("acknowledged");
        assert_eq!(granted, requested);
        (stream, cancelled)
    }

    fn next(stream: &mut WireStream<Script>) -> Next {
        stream
            .next_timeout(std::time::Duration::from_secs(1))
            .expect("no wait")
    }

    #[test]
    fn an_abrupt_end_is_a_served_failure_and_the_pump_learns_why() {
        let (mut stream, cancelled) = opened(vec![json!({
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "l-1"}},
        })]);
        assert!(matches!(next(&mut stream), Next::Event(_)));
        let last = next(&mut stream);
        assert!(
            matches!(last, Next::Failed(StreamError::Source(_))),
            "{last:?}"
        );
        assert_eq!(next(&mut stream), Next::Closed, "nothing after the end");
        assert_eq!(stream.end(last), End::Abrupt("gone".into()));
        assert_eq!(next(&mut stream), Next::Closed, "still ended once told why");
        stream.close(CloseReason::Error);
        assert!(cancelled.load(Ordering::Relaxed));
    }

    #[test]
    fn a_result_completes_and_a_closed_stream_yields_closed() {
        let (mut stream, cancelled) =
            opened(vec![json!({"jsonrpc": "2.0", "id": "l-1", "result": {}})]);
        let last = next(&mut stream);
        assert_eq!(last, Next::Complete);
        assert_eq!(stream.end(last), End::Complete);

        assert!(
            !cancelled.load(Ordering::Relaxed),
            "a completed stream is not cancelled"
        );

        let (mut stream, cancelled) = opened(vec![]);
        stream.close(CloseReason::Cancelled);
        assert!(
            cancelled.load(Ordering::Relaxed),
            "closing cancels on the wire"
        );
        assert_eq!(next(&mut stream), Next::Closed);
    }
}
