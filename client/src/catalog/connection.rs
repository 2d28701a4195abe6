//! The catalog's connection with its type erased: any other request, and
//! other subscriptions, over the connection, headers and credentials the
//! catalog's own fetches and listen stream use (a host calling a tool it
//! saw listed, a gateway watching URIs on demand).

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::fetcher::Fetcher;
use crate::connect::Connect;
use crate::error::SubscribeError;
use crate::request::Request;
use crate::subscription::Subscription;
use mcp_subscriptions::Filter;

/// What a catalog lends of its connection.
pub(super) trait Connection: Send + Sync {
    /// `method` with `params`, with the freshest headers (a refusal for
    /// the authorization asks the credentials hook once).
    fn request(
        &self,
        method: String,
        params: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Value, SubscribeError>>;

    /// A subscription with the listen streams' options.
    fn subscribe(&self, filter: Filter) -> BoxFuture<'_, Result<Subscription, SubscribeError>>;
}

impl<R: Request + Connect> Connection for Fetcher<R> {
    fn request(
        &self,
        method: String,
        params: Map<String, Value>,
    ) -> BoxFuture<'_, Result<Value, SubscribeError>> {
        async move {
            self.authorized(|options| {
                let params = params.clone();
                let method = method.as_str();
                async move { self.server.request(method, params, &options).await }
            })
            .await
        }
        .boxed()
    }

    fn subscribe(&self, filter: Filter) -> BoxFuture<'_, Result<Subscription, SubscribeError>> {
        async move {
            Subscription::open(
                std::sync::Arc::clone(&self.server),
                &filter,
                self.listen_options(),
            )
            .await
        }
        .boxed()
    }
}
