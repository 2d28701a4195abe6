//! Listening in process: a [`Source`] opened directly, with no
//! serialization, under the same end states.

use std::sync::Arc;

use crate::connect::Connect;
use crate::error::SubscribeError;
use crate::options::SubscribeOptions;
use crate::subscription::Subscription;
use mcp_subscriptions::Filter;
use mcp_subscriptions::OpenContext;
use mcp_subscriptions::Source;
use mcp_subscriptions::error::ListenParamsError;

/// A source as a transport: its handles are the streams, read as they are.
struct InProcess<S>(S);

impl<S> Connect for InProcess<S>
where
    S: Source + 'static,
    S::Handle: 'static,
{
    type Stream = S::Handle;

    async fn open(
        &self,
        requested: &Filter,
        options: &SubscribeOptions,
    ) -> Result<(Filter, S::Handle), SubscribeError> {
        let uris = requested.resource_subscriptions().len();
        let limit = self.0.max_uris();
        if uris > limit {
            let err = ListenParamsError::TooManyUris { count: uris, limit };
            return Err(SubscribeError::Refused(err.to_error_data()));
        }
        let context =
            OpenContext::default().with_client_capabilities(options.client_capabilities.clone());
        // The same admission as a served stream: extension fields need
        // the client's declaration; the source narrows the rest.
        self.0
            .capabilities()
            .check_extensions(requested, |id| context.client_declares_extension(id))
            .and_then(|()| self.0.open(requested, &context))
            .map(|opened| (opened.granted, opened.handle))
            .map_err(|err| SubscribeError::Refused(err.to_error_data()))
    }
}

impl Subscription {
    /// Listens to `source` in process: the [`Hub`](mcp_subscriptions::Hub), or any
    /// [`Source`]. The source narrows the request as it would for a served
    /// stream, extension fields need the client's declaration (in the
    /// options' capabilities), and the subscription ends as a served one
    /// would: [`End::Complete`](crate::End::Complete) when the source completes,
    /// [`End::Failed`](crate::End::Failed) with the overflow error when the source's own queue
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
