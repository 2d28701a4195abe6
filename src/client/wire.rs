//! A listen stream read off the wire (Streamable HTTP and stdio alike): the
//! transport hands over one stream's messages, and the stream checks them
//! in order and yields them as the crate's own [`SourceHandle`].

use std::future::Future;

use super::error::{ProtocolError, SubscribeError};
use super::item::End;
use super::protocol::{Expect, Step};
use crate::filter::Filter;
use crate::source::{CloseReason, Next, SourceHandle};
use serde_json::Value;

/// A message for the stream, or why what came is not one (not JSON).
pub(super) type Received = Result<Value, ProtocolError>;

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

    /// How the stream ended, given the terminal item it yielded last.
    pub(super) fn take(&mut self, last: Next) -> End {
        self.0.take().unwrap_or_else(|| End::of(last))
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
            Ok(Step::End(End::Failed(error))) => Err(SubscribeError::Refused(error)),
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
    pub(super) fn end(&mut self, last: Next) -> End {
        self.ending.take(last)
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
