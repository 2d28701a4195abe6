//! What the gateway is told of one upstream server: its name, where it is,
//! its namespace and how its catalog is kept.

use std::fmt;
use std::sync::Arc;

use mcp_subscriptions_client::StdioClient;
use mcp_subscriptions_client::catalog::{CatalogOptions, Endpoint};
use mcp_subscriptions_client::catalog::{Namespace, Prefix};

/// One upstream MCP server of a [`Gateway`](crate::Gateway): a name, a
/// Streamable HTTP URL or a stdio connection, a [`Namespace`] ([`Prefix`]
/// by its name unless [`with_namespace`](Self::with_namespace) says
/// otherwise), and the options of its catalog and listen streams
/// (headers, credentials, re-listen backoff).
///
/// A name is what downstream clients see before each name and URI, so it
/// starts with an ASCII letter and holds only letters, digits, `-` and
/// `.` (which keeps `name+scheme:` a URI scheme).
#[derive(Clone)]
pub struct Upstream {
    pub(super) name: String,
    pub(super) endpoint: Endpoint,
    pub(super) namespace: Arc<dyn Namespace>,
    pub(super) options: CatalogOptions,
}

impl Upstream {
    /// The server at a Streamable HTTP `url` (`http://127.0.0.1:8801/mcp`).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(name.into(), Endpoint::http(url))
    }

    /// The server on the other end of `client` (one that
    /// [`StdioClient::spawn`] started is started again when it dies).
    pub fn stdio(name: impl Into<String>, client: StdioClient) -> Self {
        Self::new(name.into(), Endpoint::stdio(client))
    }

    fn new(name: String, endpoint: Endpoint) -> Self {
        Self {
            namespace: Arc::new(Prefix::new(name.clone())),
            name,
            endpoint,
            options: CatalogOptions::default(),
        }
    }

    /// Maps names and URIs with `namespace` instead of the prefix.
    pub fn with_namespace(mut self, namespace: impl Namespace) -> Self {
        self.namespace = Arc::new(namespace);
        self
    }

    /// Keeps its catalog, and listens to it, with `options`.
    pub fn with_options(mut self, options: CatalogOptions) -> Self {
        self.options = options;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}
