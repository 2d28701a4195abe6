//! The example server's bearer-token mode (`--bearer-token
//! PRINCIPAL:TOKEN[:TENANT]`, the layer in `support/bearer.rs`): an
//! authorizer that lets each principal watch only what is its own and
//! labels its streams with its tenant, so that events scoped to the
//! tenant reach them. A principal revoked (`test_revoke`, on any replica)
//! has its tokens refused from then on.

use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::{Filter, Grant, OpenContext, tasks};
use rmcp::model::ErrorData;
use serde_json::Value;

use crate::bearer::Tokens;
use crate::tasks::Tasks;

/// What each principal may watch: every list change, the resources under
/// `file:///<principal>/`, and the tasks it started (`taskIds: true` becomes
/// exactly those); its streams carry its tenant's label. A request without
/// a principal is refused.
pub(crate) fn authorizer(
    tokens: Tokens,
    tasks: Tasks,
) -> impl Fn(&OpenContext, &Filter) -> Result<Grant, OpenError> {
    move |context, requested| {
        let Some(principal) = &context.principal else {
            return Err(OpenError::Refused(ErrorData::invalid_request(
                "a principal is required",
                None,
            )));
        };
        let own = format!("file:///{principal}/");
        let mut allowed = Filter::new()
            .with_tools_list_changed()
            .with_prompts_list_changed()
            .with_resources_list_changed();
        for uri in requested
            .resource_subscriptions()
            .filter(|uri| uri.starts_with(&own))
        {
            allowed = allowed.with_resource(uri);
        }
        let owned: Vec<Value> = match requested.extensions().get(tasks::TASK_IDS) {
            Some(Value::Array(ids)) => ids
                .iter()
                .filter(|id| id.as_str().is_some_and(|id| tasks.owned_by(id, principal)))
                .cloned()
                .collect(),
            Some(Value::Bool(true)) => tasks.of(principal).into_iter().map(Value::from).collect(),
            _ => Vec::new(),
        };
        if !owned.is_empty() {
            allowed = allowed.with_extension(tasks::TASK_IDS, Value::Array(owned));
        }
        let grant = Grant::new(allowed);
        Ok(match tokens.tenant(principal) {
            Some(tenant) => grant.with_label(tenant.clone()),
            None => grant,
        })
    }
}
