//! Where a server of a catalog set (or a gateway's upstream) is: one type
//! for both transports, so that a set mixes them.

use std::fmt;

use super::live::Catalog;
use super::options::CatalogOptions;
use crate::error::SubscribeError;
use crate::transport::stdio::StdioClient;

/// How to reach a server: its Streamable HTTP URL, or a stdio connection.
#[derive(Clone)]
pub enum Endpoint {
    /// The server at a Streamable HTTP URL (`http://127.0.0.1:8801/mcp`).
    Http(String),
    /// The server on the other end of a stdio connection (one that
    /// [`StdioClient::spawn`] started is started again when it dies).
    Stdio(StdioClient),
}

impl Endpoint {
    /// The server at a Streamable HTTP `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self::Http(url.into())
    }

    /// The server on the other end of `client`.
    pub fn stdio(client: StdioClient) -> Self {
        Self::Stdio(client)
    }

    /// Opens its catalog ([`Catalog::http`], [`Catalog::stdio`]).
    ///
    /// # Errors
    ///
    /// As [`Catalog::http`].
    pub async fn catalog(&self, options: CatalogOptions) -> Result<Catalog, SubscribeError> {
        match self {
            Self::Http(url) => Catalog::http(url.clone(), options).await,
            Self::Stdio(client) => Catalog::stdio(client, options).await,
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http(url) => f.debug_tuple("Http").field(url).finish(),
            Self::Stdio(_) => f.debug_tuple("Stdio").finish_non_exhaustive(),
        }
    }
}
