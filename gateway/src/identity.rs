//! Who the gateway is upstream on a downstream caller's behalf: the
//! credential each caller's requests and listens carry to each upstream.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use mcp_subscriptions::audience::Principal;
use mcp_subscriptions_client::Credentials;
use mcp_subscriptions_client::catalog::CatalogOptions;
use rmcp::model::ErrorData;

/// What a caller's credential for one upstream settles to: a bearer token,
/// `None` for the upstream's own options as configured, or the error that
/// refuses the caller that upstream.
type Credential = Result<Option<String>, ErrorData>;

type Hook = dyn Fn(Principal, String) -> BoxFuture<'static, Credential> + Send + Sync;

/// The credential scope a principal is of.
type ScopeOf = dyn Fn(&Principal) -> String + Send + Sync;

/// How a gateway speaks to its upstreams for each downstream caller
/// ([`GatewayBuilder::per_caller`](crate::GatewayBuilder::per_caller)):
/// from the caller's principal (what the serving layer's authentication
/// put in the request) and an upstream's name, the bearer token sent
/// there on that principal's behalf.
///
/// A hook may take it from a table ([`table`](Self::table)), exchange it
/// (an OAuth token exchange the application writes), or pass through a
/// token the authentication layer kept. It is asked when a caller's scope
/// opens, and again before each re-listen of that scope's streams, so a
/// token that expired upstream is exchanged anew.
///
/// # Credential scopes
///
/// Principals of one *credential scope* are one identity upstream, so
/// they share one catalog of each upstream and its listens, and each
/// hears what any of them is sent there. By default each principal is a
/// scope of its own; [`table`](Self::table) puts together the principals
/// whose tokens are the same at every upstream (a tenant's service token,
/// say), and [`with_scope`](Self::with_scope) says so for a hook.
#[derive(Clone)]
pub struct UpstreamIdentity {
    credential: Arc<Hook>,
    scope: Arc<ScopeOf>,
}

impl UpstreamIdentity {
    /// Asks `credential` for each (principal, upstream): `Ok(Some(token))`
    /// sends `authorization: Bearer <token>`; `Ok(None)` the upstream's
    /// own options as configured (the gateway's own identity); an error
    /// refuses the caller that upstream (its names and URIs are not in
    /// the caller's view).
    pub fn new<F, Fut>(credential: F) -> Self
    where
        F: Fn(Principal, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<String>, ErrorData>> + Send + 'static,
    {
        Self {
            credential: Arc::new(move |principal, upstream| {
                credential(principal, upstream).boxed()
            }),
            scope: Arc::new(|principal| principal.as_str().to_owned()),
        }
    }

    /// Puts principals into credential scopes by `scope`: those it names
    /// alike share their catalogs and listens upstream, with the
    /// credential the hook gives the first of them. Name alike only
    /// principals whose credentials are the same at every upstream.
    #[must_use]
    pub fn with_scope(
        mut self,
        scope: impl Fn(&Principal) -> String + Send + Sync + 'static,
    ) -> Self {
        self.scope = Arc::new(scope);
        self
    }

    /// A fixed table of `(upstream, principal, token)`: a principal the
    /// table has no token for at an upstream is refused that upstream.
    /// Principals with the same tokens at every upstream are one
    /// credential scope.
    pub fn table<U, P, T>(entries: impl IntoIterator<Item = (U, P, T)>) -> Self
    where
        U: Into<String>,
        P: Into<Principal>,
        T: Into<String>,
    {
        let table: HashMap<(String, Principal), String> = entries
            .into_iter()
            .map(|(upstream, principal, token)| ((upstream.into(), principal.into()), token.into()))
            .collect();
        // A principal's scope: its tokens, upstream by upstream.
        let mut scopes: HashMap<Principal, BTreeMap<String, String>> = HashMap::new();
        for ((upstream, principal), token) in &table {
            let tokens = scopes.entry(principal.clone()).or_default();
            tokens.insert(upstream.clone(), token.clone());
        }
        let scopes: HashMap<Principal, String> = scopes
            .into_iter()
            .map(|(principal, tokens)| (principal, format!("{tokens:?}")))
            .collect();
        let table = Arc::new(table);
        let scope_of = move |principal: &Principal| match scopes.get(principal) {
            Some(tokens) => tokens.clone(),
            // Refused everywhere: a scope of its own all the same.
            None => format!("{principal} alone"),
        };
        Self::new(move |principal, upstream| {
            let token = table.get(&(upstream.clone(), principal.clone())).cloned();
            async move {
                match token {
                    Some(token) => Ok(Some(token)),
                    None => Err(ErrorData::invalid_request(
                        format!("{principal} has no credential for upstream {upstream}"),
                        None,
                    )),
                }
            }
        })
        .with_scope(scope_of)
    }

    /// `principal`'s credential at `upstream`.
    pub(super) async fn credential(&self, principal: &Principal, upstream: &str) -> Credential {
        (self.credential)(principal.clone(), upstream.to_owned()).await
    }

    /// The credential scope `principal` is of.
    pub(super) fn scope_of(&self, principal: &Principal) -> String {
        (self.scope)(principal)
    }

    /// `options` carrying `principal`'s credential at `upstream`, asked
    /// again before each re-listen.
    ///
    /// # Errors
    ///
    /// The hook's refusal.
    pub(super) async fn options(
        &self,
        principal: &Principal,
        upstream: &str,
        options: &CatalogOptions,
    ) -> Result<CatalogOptions, ErrorData> {
        let mut options = options.clone();
        if let Some(token) = self.credential(principal, upstream).await? {
            options = options.with_header(AUTHORIZATION, bearer(&token));
        }
        let (identity, principal, upstream) =
            (self.clone(), principal.clone(), upstream.to_owned());
        options.subscribe.credentials = Some(Credentials::new(move |_| {
            let (identity, principal, upstream) =
                (identity.clone(), principal.clone(), upstream.clone());
            async move {
                let token = identity.credential(&principal, &upstream).await.ok()??;
                Some(vec![(AUTHORIZATION.to_owned(), bearer(&token))])
            }
        }));
        Ok(options)
    }
}

const AUTHORIZATION: &str = "authorization";

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

impl fmt::Debug for UpstreamIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UpstreamIdentity(..)")
    }
}
