//! Who may watch what: the hook a service asks before it opens a stream.

use crate::context::OpenContext;
use crate::error::OpenError;
use crate::filter::Filter;

/// Decides what a listen request may be granted, before anything is
/// acknowledged.
///
/// Given the request's [`OpenContext`] (its principal, transport, client
/// capabilities, HTTP head) and the filter it asked for, it returns the
/// filter to grant, or refuses with an [`OpenError`] (sent as a JSON-RPC
/// error in place of the acknowledgement: [`OpenError::Refused`] carries
/// any code and message). What it returns is intersected with the request
/// ([`Filter::intersect`]), so it can only narrow: leave out the URIs the
/// principal may not read, keep only the task ids it owns. The
/// acknowledgement then carries exactly what was granted, and the stream
/// never receives anything else.
///
/// Any `Fn(&OpenContext, &Filter) -> Result<Filter, OpenError>` is one.
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
    /// The filter to grant for `requested`, or why not.
    ///
    /// # Errors
    ///
    /// The refusal to answer the request with.
    fn authorize(&self, context: &OpenContext, requested: &Filter) -> Result<Filter, OpenError>;
}

impl<F> Authorize for F
where
    F: Fn(&OpenContext, &Filter) -> Result<Filter, OpenError> + Send + Sync + 'static,
{
    fn authorize(&self, context: &OpenContext, requested: &Filter) -> Result<Filter, OpenError> {
        self(context, requested)
    }
}
