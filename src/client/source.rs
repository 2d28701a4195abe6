//! Listening in process: a [`Source`] opened directly, with no
//! serialization, under the same end states.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::error::SubscribeError;
use super::item::End;
use super::options::SubscribeOptions;
use super::pump::{Arrival, Connect, Feed, Opening};
use super::subscription::Subscription;
use crate::context::OpenContext;
use crate::error::ListenParamsError;
use crate::filter::Filter;
use crate::source::{CloseReason, Next, Source, SourceHandle};

struct InProcess<S>(S);

struct Handle<H>(Option<H>);

impl<S> Connect for InProcess<S>
where
    S: Source + 'static,
    S::Handle: 'static,
{
    fn open<'a>(&'a self, requested: &'a Filter, options: &'a SubscribeOptions) -> Opening<'a> {
        let opened = (|| {
            let uris = requested.resource_subscriptions().len();
            let limit = self.0.max_uris();
            if uris > limit {
                let err = ListenParamsError::TooManyUris { count: uris, limit };
                return Err(SubscribeError::Refused(err.to_error_data()));
            }
            let context = OpenContext::default()
                .with_client_capabilities(options.client_capabilities.clone());
            // The same admission as a served stream: extension fields need
            // the client's declaration; the source narrows the rest.
            self.0
                .capabilities()
                .check_extensions(requested, |id| context.client_declares_extension(id))
                .and_then(|()| self.0.open(requested, &context))
                .map(|opened| {
                    let feed: Box<dyn Feed> = Box::new(Handle(Some(opened.handle)));
                    (opened.granted, feed)
                })
                .map_err(|err| SubscribeError::Refused(err.to_error_data()))
        })();
        std::future::ready(opened).boxed()
    }
}

impl<H: SourceHandle + 'static> Feed for Handle<H> {
    fn next(&mut self) -> BoxFuture<'_, Arrival> {
        async move {
            let Some(handle) = &mut self.0 else {
                return Arrival::End(End::Abrupt("the source handle is closed".into()));
            };
            match handle.next().await {
                Next::Event(event) => Arrival::Event(event),
                Next::Lagged(lost) => Arrival::Lagged(lost),
                Next::Complete => Arrival::End(End::Complete),
                Next::Failed(err) => Arrival::End(End::Failed(err.to_error_data())),
                _ => Arrival::End(End::Abrupt("the source closed the stream".into())),
            }
        }
        .boxed()
    }

    fn cancel(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        if let Some(mut handle) = self.0.take() {
            handle.close(CloseReason::Cancelled);
        }
        std::future::ready(()).boxed()
    }
}

impl Subscription {
    /// Listens to `source` in process: the [`Hub`](crate::Hub), or any
    /// [`Source`]. The source narrows the request as it would for a served
    /// stream, extension fields need the client's declaration (in the
    /// options' capabilities), and the subscription ends as a served one
    /// would: [`End::Complete`] when the source completes,
    /// [`End::Failed`] with the overflow error when the source's own queue
    /// disconnected it. Events are not serialized.
    ///
    /// # Errors
    ///
    /// [`SubscribeError::Refused`] with the error a served stream would
    /// have been refused with.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the buffer is filled by a task).
    pub async fn source<S>(
        source: S,
        requested: &Filter,
        options: SubscribeOptions,
    ) -> Result<Self, SubscribeError>
    where
        S: Source + 'static,
        S::Handle: 'static,
    {
        Self::open(Arc::new(InProcess(source)), requested, options).await
    }
}
