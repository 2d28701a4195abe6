//! The task between a transport and a subscription's buffer: it reads the
//! stream while the buffer has room, and listens again when asked to.

use std::future::Future;
use std::sync::Arc;

use super::buffer::Shared;
use super::error::SubscribeError;
use super::item::{End, Item, Relistening};
use super::options::SubscribeOptions;
use crate::filter::Filter;
use crate::source::{CloseReason, Next, SourceHandle};

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

/// Opens a first stream within the acknowledgement timeout.
pub(super) async fn open_within<C: Connect>(
    connect: &C,
    requested: &Filter,
    options: &SubscribeOptions,
) -> Result<(Filter, C::Stream), SubscribeError> {
    match tokio::time::timeout(options.ack_timeout, connect.open(requested, options)).await {
        Ok(opened) => opened,
        Err(_) => Err(super::error::ProtocolError::NoAcknowledgement {
            waited: options.ack_timeout,
        }
        .into()),
    }
}

/// Opens the first stream. With re-listening on, a transient failure (a
/// server not up yet, see [`SubscribeError::is_transient`]) is tried again
/// after the re-listen backoff, up to its attempts; a permanent one is
/// returned at once.
pub(super) async fn open_first<C: Connect>(
    connect: &C,
    requested: &Filter,
    options: &SubscribeOptions,
) -> Result<(Filter, C::Stream), SubscribeError> {
    retrying(options, || open_within(connect, requested, options)).await
}

/// Runs `work` until it succeeds or fails permanently; with re-listening
/// on, a transient failure is tried again after the re-listen backoff, up
/// to its attempts.
pub(super) async fn retrying<T, F, Fut>(
    options: &SubscribeOptions,
    mut work: F,
) -> Result<T, SubscribeError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SubscribeError>>,
{
    let mut attempt = 0u32;
    loop {
        let err = match work().await {
            Err(err) if err.is_transient() => err,
            done => return done,
        };
        let Some(relisten) = &options.relisten else {
            return Err(err);
        };
        attempt += 1;
        if relisten.max_attempts.is_some_and(|max| attempt > max) {
            return Err(err);
        }
        tracing::debug!(target: "mcp_subscriptions", %err, attempt, "a first request failed; trying again");
        tokio::time::sleep(relisten.delay(attempt)).await;
    }
}

/// Drives a subscription until it ends for good.
pub(super) async fn run<C: Connect>(
    connect: Arc<C>,
    requested: Filter,
    mut options: SubscribeOptions,
    shared: Arc<Shared>,
    mut stream: C::Stream,
) {
    loop {
        let end = drive::<C>(&mut stream, &shared).await;
        if end == End::Cancelled {
            stream.close(CloseReason::Cancelled);
            shared.finish(End::Cancelled);
            return;
        }
        // A stream the server did not end itself is ended from our side, so
        // a server that is still there stops sending.
        if matches!(end, End::Overflowed { .. } | End::Protocol(_)) {
            stream.close(CloseReason::Error);
        }
        drop(stream);
        let relisten = match &options.relisten {
            Some(relisten) if end.may_relisten(relisten.after_complete) => relisten.clone(),
            _ => {
                shared.finish(end);
                return;
            }
        };
        // Credentials the server ended, or refused a listen with for good,
        // are never sent again; `last` is the end to report if that stops
        // re-listening.
        let mut spent = end.is_unauthorized().then(|| options.headers.clone());
        let mut last = end.clone();
        let mut reason = end.to_string();
        let mut attempt = 0u32;
        stream = loop {
            attempt += 1;
            if relisten.max_attempts.is_some_and(|max| attempt > max) {
                shared.finish(last);
                return;
            }
            if let Some(credentials) = &options.credentials {
                let refresh = credentials.refresh(&end, &mut options.headers);
                if unless_cancelled(&shared, refresh).await.is_none() {
                    shared.finish(End::Cancelled);
                    return;
                }
            }
            if spent.as_ref() == Some(&options.headers) {
                shared.finish(last);
                return;
            }
            let delay = relisten.delay(attempt);
            shared.push_marker(Item::Relistening(Relistening {
                attempt,
                delay,
                reason: reason.clone(),
            }));
            let opened = unless_cancelled(&shared, async {
                tokio::time::sleep(delay).await;
                open_within(&*connect, &requested, &options).await
            });
            match opened.await {
                None => {
                    shared.finish(End::Cancelled);
                    return;
                }
                Some(Ok((granted, stream))) => {
                    shared.push_marker(Item::Resynced(granted));
                    break stream;
                }
                Some(Err(err)) => {
                    reason = err.to_string();
                    // The same request would be refused again: only new
                    // credentials may change that.
                    if !err.is_transient() {
                        spent = Some(options.headers.clone());
                        last = End::Refused(err);
                    }
                }
            }
        };
    }
}

/// `work`'s output, or `None` when the subscription is cancelled first.
async fn unless_cancelled<T>(shared: &Shared, work: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        () = shared.cancel.cancelled() => None,
        out = work => Some(out),
    }
}

/// Moves one stream's events into the buffer until it ends.
async fn drive<C: Connect>(stream: &mut C::Stream, shared: &Shared) -> End {
    loop {
        // Read the transport only while the buffer has room (under `Wait`),
        // so a slow reader pushes back on the server.
        let next = tokio::select! {
            biased;
            () = shared.cancel.cancelled() => return End::Cancelled,
            next = async {
                shared.room().await;
                stream.next().await
            } => next,
        };
        match next {
            Next::Event(event) => {
                if let Err(dropped) = shared.push_event(event) {
                    return End::Overflowed { dropped };
                }
            }
            Next::Lagged(lost) => shared.add_lag(lost),
            last => return C::end(stream, last),
        }
    }
}
