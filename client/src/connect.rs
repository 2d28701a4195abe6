//! How a transport opens a listen stream, once and again for each
//! re-listen and filter change: the one trait every client transport
//! implements.

use std::future::Future;

use crate::error::{ProtocolError, SubscribeError};
use crate::item::End;
use crate::options::SubscribeOptions;
use mcp_subscriptions::Filter;
use mcp_subscriptions::{Next, SourceHandle};

/// How a transport opens a stream, once and again for each re-listen. The
/// open stream is read as any source's is: a [`SourceHandle`] yielding
/// [`Next`], closed to cancel.
pub(super) trait Connect: Send + Sync + 'static {
    /// One acknowledged stream.
    type Stream: SourceHandle + 'static;

    /// Sends a listen request for `requested` and waits for its
    /// acknowledgement: the grant, and the stream.
    fn open(
        &self,
        requested: &Filter,
        options: &SubscribeOptions,
    ) -> impl Future<Output = Result<(Filter, Self::Stream), SubscribeError>> + Send;

    /// How `stream` ended, given the terminal item it yielded last. A
    /// transport that knows more than [`Next`] says (an abrupt close, a
    /// protocol error) reports that.
    fn end(_stream: &Self::Stream, last: Next) -> End {
        End::of(last)
    }
}

/// Opens a stream within the acknowledgement timeout.
pub(super) async fn open_within<C: Connect>(
    connect: &C,
    requested: &Filter,
    options: &SubscribeOptions,
) -> Result<(Filter, C::Stream), SubscribeError> {
    match tokio::time::timeout(options.ack_timeout, connect.open(requested, options)).await {
        Ok(opened) => opened,
        Err(_) => Err(ProtocolError::NoAcknowledgement {
            waited: options.ack_timeout,
        }
        .into()),
    }
}
