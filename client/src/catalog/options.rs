//! How a catalog is opened.

use std::time::Duration;

use crate::options::{BufferPolicy, Credentials, Relisten, SubscribeOptions};

/// The default gather: a first change after a quiet spell waits this long
/// for others that come with it.
///
/// A server announces a burst of changes (tools registered in a loop, a
/// plugin loaded) within a few milliseconds of its first, so 20 ms folds
/// most bursts into one fetch while an isolated change is seen at once:
/// its staleness is this plus the fetch. Changes that keep coming are
/// held back by the [debounce](DEFAULT_DEBOUNCE) instead.
pub const DEFAULT_GATHER: Duration = Duration::from_millis(20);

/// The default debounce: changes that keep coming (more of them before the
/// gathered fetch starts, or during a fetch) are fetched once they pause
/// this long.
///
/// The TypeScript client waits 300 ms after every change, so every change
/// is 300 ms stale. Here only a storm waits, and 100 ms of silence is a
/// pause long enough to end a storm's bursts but short enough that the
/// last change of a burst is seen promptly.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// The default bound on how long a change waits in a storm that never
/// pauses: one fetch a second however fast the changes come, so 1,000
/// changes in a second make at most two fetches, and no change is more
/// than a second (and a fetch) stale.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1);

/// The default time one request (one page of a list) may take.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The default cap on the pages of one list: a server whose cursors never
/// end is broken, and a catalog must not follow it forever.
pub const DEFAULT_MAX_PAGES: usize = 1_000;

/// The default floor under `ttlMs` refreshes.
pub const DEFAULT_MIN_REFRESH: Duration = Duration::from_secs(10);

/// How a [`Catalog`](super::Catalog) is opened and kept.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CatalogOptions {
    /// The listen stream's options, whose headers, credentials hook and
    /// client info every fetch is sent with too: one configuration for
    /// both. By default it listens again after any end that allows it,
    /// a graceful one included (a server restarting completes its streams
    /// first), and retries a first open that fails transiently.
    pub subscribe: SubscribeOptions,
    /// How long a first change after a quiet spell waits for others; see
    /// [`DEFAULT_GATHER`].
    pub gather: Duration,
    /// How long changes that keep coming must pause before they are
    /// fetched; see [`DEFAULT_DEBOUNCE`].
    pub debounce: Duration,
    /// The longest any change waits to be fetched; see
    /// [`DEFAULT_MAX_DELAY`].
    pub max_delay: Duration,
    /// Resources whose contents are kept (`resources/read` on opening and
    /// on each `notifications/resources/updated`), when the server
    /// advertises `resources.subscribe`; read once otherwise.
    pub watch: Vec<String>,
    /// How long one request may take before it counts as failed (and is
    /// retried).
    pub request_timeout: Duration,
    /// The most pages one list may have; a fetch that needs more fails
    /// (see [`DEFAULT_MAX_PAGES`]).
    pub max_pages: usize,
    /// The shortest time between two refreshes of a list no stream tells
    /// of, whatever its `ttlMs`.
    pub min_refresh: Duration,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        Self {
            subscribe: SubscribeOptions::default()
                .with_relisten(Relisten::default())
                // A change is a signal: a duplicate of a pending one adds
                // nothing, and a lost one is refetched anyway.
                .with_coalesce(true)
                .with_policy(BufferPolicy::DropOldest),
            gather: DEFAULT_GATHER,
            debounce: DEFAULT_DEBOUNCE,
            max_delay: DEFAULT_MAX_DELAY,
            watch: Vec::new(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_pages: DEFAULT_MAX_PAGES,
            min_refresh: DEFAULT_MIN_REFRESH,
        }
    }
}

impl CatalogOptions {
    /// Replaces the listen stream's options (and what every fetch is sent
    /// with). Without [`SubscribeOptions::with_relisten`] a catalog stops
    /// hearing of changes at the stream's first end.
    pub fn with_subscribe(mut self, subscribe: SubscribeOptions) -> Self {
        self.subscribe = subscribe;
        self
    }

    /// Adds an HTTP header to every request, listen and fetches alike (an
    /// `authorization` header, for one).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.subscribe = self.subscribe.with_header(name, value);
        self
    }

    /// Trusts the certificate (PEM) for `https://`, besides the system's
    /// roots.
    #[cfg(feature = "tls")]
    pub fn with_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.subscribe = self.subscribe.with_root_certificate(pem);
        self
    }

    /// Asks `credentials` for fresh headers before each re-listen and when
    /// a fetch is refused for its authorization (HTTP 401 or 403); what it
    /// gives is used by both.
    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.subscribe = self.subscribe.with_credentials(credentials);
        self
    }

    /// Sets how long changes wait: a first one `gather`, those that keep
    /// coming until they pause for `debounce`, and none longer than
    /// `max_delay`.
    pub fn with_timing(
        mut self,
        gather: Duration,
        debounce: Duration,
        max_delay: Duration,
    ) -> Self {
        self.gather = gather;
        self.debounce = debounce;
        self.max_delay = max_delay;
        self
    }

    /// Keeps the contents of `uri` too.
    pub fn with_watched(mut self, uri: impl Into<String>) -> Self {
        self.watch.push(uri.into());
        self
    }

    /// Gives each request `timeout`.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Fails a list of more than `pages` pages.
    pub fn with_max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages;
        self
    }

    /// Refreshes a list no stream tells of at most this often.
    pub fn with_min_refresh(mut self, min_refresh: Duration) -> Self {
        self.min_refresh = min_refresh;
        self
    }
}
