//! The opt-in bearer-token mode (`--bearer-token PRINCIPAL:TOKEN`): a layer
//! in front of every route that turns a token into a [`Principal`], and an
//! authorizer that lets each principal watch only what is its own.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::{Filter, OpenContext, Principal, tasks};
use rmcp::model::ErrorData;
use serde_json::Value;

use crate::tasks::Tasks;

/// Bearer tokens and the principal each one stands for.
#[derive(Clone, Default)]
pub(crate) struct Tokens(Arc<HashMap<String, Principal>>);

impl Tokens {
    /// From `PRINCIPAL:TOKEN` pairs.
    pub(crate) fn new(pairs: &[(String, String)]) -> Self {
        let map = pairs
            .iter()
            .map(|(principal, token)| (token.clone(), Principal::new(principal.as_str())))
            .collect();
        Self(Arc::new(map))
    }

    /// Whether the mode is on.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The layer's work: a request with a known token goes on with its
    /// principal in its extensions; any other gets 401.
    pub(crate) async fn authenticate(self, mut request: Request, next: Next) -> Response {
        let token = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        match token.and_then(|token| self.0.get(token)) {
            Some(principal) => {
                request.extensions_mut().insert(principal.clone());
                next.run(request).await
            }
            None => (
                StatusCode::UNAUTHORIZED,
                [(WWW_AUTHENTICATE, "Bearer"), (CONTENT_TYPE, "application/json")],
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized: a valid bearer token is required"}}"#,
            )
                .into_response(),
        }
    }
}

/// What each principal may watch: every list change, the resources under
/// `file:///<principal>/`, and the tasks it started (`taskIds: true` becomes
/// exactly those). A request without a principal is refused.
pub(crate) fn authorizer(
    tasks: Tasks,
) -> impl Fn(&OpenContext, &Filter) -> Result<Filter, OpenError> {
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
        Ok(allowed)
    }
}
