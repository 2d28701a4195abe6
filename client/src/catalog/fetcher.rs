//! How one fetch of a catalog is sent: over the server's connection, with
//! the headers the fetches and the listen stream share, a credentials hook
//! asked when the server refuses them, and a timeout.

use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;
use rmcp::model::{DiscoverResult, Prompt, Resource, ResourceTemplate, Tool};
use serde_json::Map;

use super::entry::{CatalogKind, Contents, Listed, decode, fetch_contents, fetch_list};
use super::options::CatalogOptions;
use super::schedule::Part;
use crate::error::SubscribeError;
use crate::item::End;
use crate::options::{Credentials, Headers, SubscribeOptions, merge};
use crate::request::Request;

/// What one fetch brought in.
pub(super) enum Fetched {
    Discovery(DiscoverResult),
    Tools(Listed<Tool>),
    Prompts(Listed<Prompt>),
    Resources(Listed<Resource>),
    Templates(Listed<ResourceTemplate>),
    Contents(Contents),
}

/// How one fetch is sent: the server, the options, and the headers the
/// fetches and the listen streams share.
pub(super) struct Fetcher<R> {
    pub(super) server: Arc<R>,
    pub(super) options: CatalogOptions,
    headers: Arc<Mutex<Headers>>,
}

impl<R: Request> Fetcher<R> {
    pub(super) fn new(server: Arc<R>, options: CatalogOptions) -> Self {
        let headers = Arc::new(Mutex::new(options.subscribe.headers.clone()));
        Self {
            server,
            options,
            headers,
        }
    }

    /// The listen streams' options: the catalog's, with a credentials hook
    /// that asks the application's (if any) and otherwise hands over the
    /// headers a fetch last refreshed, so both always use the freshest.
    pub(super) fn listen_options(&self) -> SubscribeOptions {
        let mut options = self.options.subscribe.clone();
        options.headers = self.headers.lock().clone();
        let hook = options.credentials.take();
        let headers = Arc::clone(&self.headers);
        options.credentials = Some(Credentials::new(move |end: &End| {
            let asked = hook.as_ref().map(|hook| hook.ask(end));
            let headers = Arc::clone(&headers);
            async move {
                if let Some(asked) = asked
                    && let Some(fresh) = asked.await
                {
                    merge(&mut headers.lock(), fresh);
                }
                Some(headers.lock().clone())
            }
        }));
        options
    }

    /// Fetches `part` once.
    pub(super) async fn fetch(&self, part: &Part) -> Result<Fetched, SubscribeError> {
        self.authorized(|options| async move { self.attempt(part, &options).await })
            .await
    }

    /// `server/discover`.
    pub(super) async fn discover(&self) -> Result<DiscoverResult, SubscribeError> {
        self.authorized(|options| async move { discover(&*self.server, &options).await })
            .await
    }

    /// Runs `request` with the freshest headers; a refusal for its
    /// authorization asks the credentials hook, and is tried once more
    /// when that gave new headers.
    pub(super) async fn authorized<T, F, Fut>(&self, request: F) -> Result<T, SubscribeError>
    where
        F: Fn(SubscribeOptions) -> Fut,
        Fut: Future<Output = Result<T, SubscribeError>>,
    {
        let mut options = self.options.subscribe.clone();
        options.headers = self.headers.lock().clone();
        let error = match request(options.clone()).await {
            Err(error) if is_unauthorized(&error) => error,
            done => return done,
        };
        let Some(hook) = &self.options.subscribe.credentials else {
            return Err(error);
        };
        if let Some(fresh) = hook.ask(&End::Refused(error.clone())).await {
            merge(&mut self.headers.lock(), fresh);
        }
        let fresh = self.headers.lock().clone();
        if fresh == options.headers {
            return Err(error);
        }
        options.headers = fresh;
        request(options).await
    }

    async fn attempt(
        &self,
        part: &Part,
        options: &SubscribeOptions,
    ) -> Result<Fetched, SubscribeError> {
        let server = &*self.server;
        let pages = self.options.max_pages;
        let work = async {
            Ok(match part {
                Part::Discovery => Fetched::Discovery(discover(server, options).await?),
                Part::List(CatalogKind::Tools) => {
                    Fetched::Tools(fetch_list(server, options, pages).await?)
                }
                Part::List(CatalogKind::Prompts) => {
                    Fetched::Prompts(fetch_list(server, options, pages).await?)
                }
                Part::List(CatalogKind::Resources) => {
                    Fetched::Resources(fetch_list(server, options, pages).await?)
                }
                Part::List(CatalogKind::Templates) => {
                    Fetched::Templates(fetch_list(server, options, pages).await?)
                }
                Part::Contents(uri) => {
                    Fetched::Contents(fetch_contents(server, uri, options).await?)
                }
            })
        };
        let timeout = self.options.request_timeout;
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(SubscribeError::Connect(format!(
                    "no answer within {timeout:?}"
                )))
            })
    }
}

/// `server/discover`, as it is sent.
async fn discover<R: Request>(
    server: &R,
    options: &SubscribeOptions,
) -> Result<DiscoverResult, SubscribeError> {
    let result = server
        .request("server/discover", Map::new(), options)
        .await?;
    decode("server/discover", result)
}

/// A refusal a new token may cure.
fn is_unauthorized(error: &SubscribeError) -> bool {
    match error {
        SubscribeError::Status { status, .. } => matches!(status, 401 | 403),
        SubscribeError::Refused(error) => {
            error.code == mcp_subscriptions::error::REVOKED_ERROR_CODE
        }
        _ => false,
    }
}
