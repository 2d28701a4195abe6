//! The examples' opt-in bearer-token mode (`--bearer-token
//! PRINCIPAL:TOKEN[:TENANT]`): a layer in front of every route that turns
//! a token into a [`Principal`] in the request's extensions, where the
//! serving layer finds it. A principal revoked has its tokens refused from
//! then on: 401 with `-32003` and `data: {"reason":"revoked"}`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcp_subscriptions::{
    Audience,
    audience::{Label, Principal},
};

/// One `--bearer-token`: the principal a token stands for, and its tenant.
#[derive(Clone, Debug)]
pub(crate) struct BearerToken {
    pub(crate) principal: String,
    pub(crate) token: String,
    pub(crate) tenant: Option<String>,
}

/// `PRINCIPAL:TOKEN[:TENANT]`, each part non-empty.
pub(crate) fn bearer_token(value: &str) -> Result<BearerToken, String> {
    let mut parts = value.splitn(3, ':');
    let (Some(principal), Some(token)) = (parts.next(), parts.next()) else {
        return Err("expected PRINCIPAL:TOKEN[:TENANT]".to_owned());
    };
    let tenant = parts.next();
    if principal.is_empty() || token.is_empty() || tenant == Some("") {
        return Err("expected PRINCIPAL:TOKEN[:TENANT], each part non-empty".to_owned());
    }
    Ok(BearerToken {
        principal: principal.to_owned(),
        token: token.to_owned(),
        tenant: tenant.map(str::to_owned),
    })
}

/// The label a tenant's streams carry, and that the triggers' `tenant`
/// argument scopes an event to.
pub(crate) fn tenant_label(tenant: &str) -> Label {
    Label::new(format!("tenant:{tenant}"))
}

/// Bearer tokens and the principal each one stands for, and each
/// principal's tenant.
#[derive(Clone, Default)]
pub(crate) struct Tokens {
    principals: Arc<HashMap<String, Principal>>,
    tenants: Arc<HashMap<Principal, Label>>,
    /// Principals revoked (`test_revoke`, here or on another replica): their
    /// tokens are refused from then on, as an identity provider's
    /// revocation would have them.
    revoked: Arc<RwLock<HashSet<Principal>>>,
}

impl Tokens {
    /// From the `--bearer-token` options.
    pub(crate) fn new(tokens: &[BearerToken]) -> Self {
        let principal = |token: &BearerToken| Principal::new(token.principal.as_str());
        let principals = tokens
            .iter()
            .map(|token| (token.token.clone(), principal(token)))
            .collect();
        let tenants = tokens
            .iter()
            .filter_map(|token| Some((principal(token), tenant_label(token.tenant.as_ref()?))))
            .collect();
        Self {
            principals: Arc::new(principals),
            tenants: Arc::new(tenants),
            revoked: Arc::default(),
        }
    }

    /// The hub's revocation hook: each principal an audience names is
    /// refused from then on (a revocation of everyone or of labels leaves
    /// the tokens as they are).
    #[allow(dead_code, reason = "the gateway example revokes no one")]
    pub(crate) fn revoker(&self) -> impl Fn(&Audience) + Send + Sync + 'static {
        let revoked = self.revoked.clone();
        move |audience| {
            let principals = audience.principals().iter().cloned();
            revoked.write().expect("not poisoned").extend(principals);
        }
    }

    /// `principal`'s tenant label, if it has a tenant.
    #[allow(dead_code, reason = "the gateway example labels no stream")]
    pub(crate) fn tenant(&self, principal: &Principal) -> Option<&Label> {
        self.tenants.get(principal)
    }

    /// Whether the mode is on.
    pub(crate) fn is_empty(&self) -> bool {
        self.principals.is_empty()
    }

    /// The layer's work: a request with a known token goes on with its
    /// principal in its extensions; any other gets 401.
    pub(crate) async fn authenticate(self, mut request: Request, next: Next) -> Response {
        let token = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        match token.and_then(|token| self.principals.get(token)) {
            Some(principal) if self.revoked.read().expect("not poisoned").contains(principal) => (
                StatusCode::UNAUTHORIZED,
                [
                    (WWW_AUTHENTICATE, r#"Bearer error="invalid_token""#),
                    (CONTENT_TYPE, "application/json"),
                ],
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32003,"message":"Unauthorized: the bearer token was revoked","data":{"reason":"revoked"}}}"#,
            )
                .into_response(),
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
