//! Who may watch what: the hook a service asks before it opens a stream,
//! and what it grants.

use std::time::Instant;

use crate::audience::Label;
use crate::context::OpenContext;
use crate::error::OpenError;
use crate::filter::Filter;

/// What an [authorizer](Authorize) grants a listen request: the filter,
/// the labels the stream carries (the [audiences](crate::Audience) it is
/// in besides its principal's), and when it expires.
///
/// A [`Filter`] is a grant with no labels and no expiry, so an authorizer
/// that only narrows returns one as it is.
///
/// ```
/// use std::time::{Duration, Instant};
/// use mcp_subscriptions::{Filter, Grant};
///
/// let grant = Grant::new(Filter::new().with_tools_list_changed())
///     .with_label("tenant:acme")
///     .with_expiry(Instant::now() + Duration::from_secs(3600));
/// assert_eq!(grant.labels().len(), 1);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Grant {
    filter: Filter,
    labels: Vec<Label>,
    expires_at: Option<Instant>,
}

impl Grant {
    /// `filter`, with no label and no expiry.
    pub fn new(filter: Filter) -> Self {
        Self {
            filter,
            labels: Vec::new(),
            expires_at: None,
        }
    }

    /// The stream also carries `label`: events for it reach the stream.
    pub fn with_label(mut self, label: impl Into<Label>) -> Self {
        self.labels.push(label.into());
        self
    }

    /// The stream ends at `at` (the expiry of the token that opened it),
    /// with [`StreamError::Expired`](crate::error::StreamError::Expired):
    /// the error response [`REVOKED_ERROR_CODE`](crate::error::REVOKED_ERROR_CODE)
    /// with `data: {"reason":"expired"}`. An instant already past refuses
    /// the request with that error.
    pub fn with_expiry(mut self, at: Instant) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// The filter granted (before it is intersected with the request).
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The labels the stream carries.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// When the stream expires, if it does.
    pub fn expires_at(&self) -> Option<Instant> {
        self.expires_at
    }

    /// Narrows the filter to `requested`: a grant never widens a request.
    pub(crate) fn within(mut self, requested: &Filter) -> Self {
        self.filter = self.filter.intersect(requested);
        self
    }
}

impl From<Filter> for Grant {
    fn from(filter: Filter) -> Self {
        Self::new(filter)
    }
}

/// Decides what a listen request may be granted, before anything is
/// acknowledged.
///
/// Given the request's [`OpenContext`] (its principal, transport, client
/// capabilities, HTTP head) and the filter it asked for, it returns the
/// [`Grant`] (a filter, and optionally labels and an expiry), or refuses
/// with an [`OpenError`] (sent as a JSON-RPC error in place of the
/// acknowledgement: [`OpenError::Refused`] carries any code and message).
/// The filter it grants is intersected with the request
/// ([`Filter::intersect`]), so it can only narrow: leave out the URIs the
/// principal may not read, keep only the task ids it owns. The
/// acknowledgement then carries exactly what was granted, and the stream
/// never receives anything else.
///
/// Any `Fn(&OpenContext, &Filter) -> Result<G, OpenError>` is one, where
/// `G` is a [`Grant`] or a [`Filter`].
///
/// ```
/// use mcp_subscriptions::{Filter, Hub, ListenService, OpenContext};
/// use mcp_subscriptions::error::OpenError;
///
/// // Each principal may watch only the resources under its own folder.
/// let service = ListenService::new(Hub::new()).with_authorizer(
///     |context: &OpenContext, requested: &Filter| {
///         let Some(principal) = &context.principal else {
///             return Err(OpenError::Refused(rmcp::model::ErrorData::invalid_request(
///                 "authentication required",
///                 None,
///             )));
///         };
///         let own = format!("file:///home/{principal}/");
///         let mut allowed = Filter::new().with_tools_list_changed();
///         for uri in requested.resource_subscriptions().filter(|uri| uri.starts_with(&own)) {
///             allowed = allowed.with_resource(uri);
///         }
///         Ok(allowed)
///     },
/// );
/// # let _ = service;
/// ```
pub trait Authorize: Send + Sync + 'static {
    /// What to grant for `requested`, or why not.
    ///
    /// # Errors
    ///
    /// The refusal to answer the request with.
    fn authorize(&self, context: &OpenContext, requested: &Filter) -> Result<Grant, OpenError>;
}

impl<F, G> Authorize for F
where
    F: Fn(&OpenContext, &Filter) -> Result<G, OpenError> + Send + Sync + 'static,
    G: Into<Grant>,
{
    fn authorize(&self, context: &OpenContext, requested: &Filter) -> Result<Grant, OpenError> {
        self(context, requested).map(Into::into)
    }
}
