//! The scopes a gateway holds: its own, or one per credential scope of
//! its callers (by default each principal its own), opened by a caller's
//! first stream or request and released a grace after its members' last.
//!
//! The grace is the demand hooks' alone: a caller's streams and requests
//! all hold its presence in the gateway's one [`Demand`](mcp_subscriptions::Demand)
//! (a request through [`Demand::hold_presence`](mcp_subscriptions::Demand::hold_presence)),
//! whose attach and key attaches hold the scope here, and whose detaches,
//! each a grace after its last holder, give it back. A scope goes with the
//! last of them, at once.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_subscriptions::Hub;
use mcp_subscriptions::audience::Principal;
use parking_lot::Mutex;
use rmcp::model::ErrorData;

use crate::identity::UpstreamIdentity;
use crate::scope::Scope;
use crate::upstream::Upstream;

/// Every scope of one gateway.
pub(super) struct Scopes {
    pub(super) upstreams: Vec<Upstream>,
    hub: Hub,
    mode: Mode,
}

enum Mode {
    /// One scope, the gateway's own, for every caller.
    Shared(Arc<Scope>),
    /// A scope per credential scope, by its name, opened on demand.
    PerCaller {
        identity: UpstreamIdentity,
        callers: Mutex<HashMap<String, OpenScope>>,
    },
}

/// A credential scope's scope, and how many attaches hold it.
struct OpenScope {
    scope: Arc<Scope>,
    holders: usize,
}

impl Scopes {
    /// The gateway's own scope, `scope`, for every caller.
    pub(super) fn shared(scope: Arc<Scope>, upstreams: Vec<Upstream>, hub: Hub) -> Self {
        Self {
            upstreams,
            hub,
            mode: Mode::Shared(scope),
        }
    }

    /// A scope per caller, each with its credentials from `identity`.
    pub(super) fn per_caller(
        upstreams: Vec<Upstream>,
        identity: UpstreamIdentity,
        hub: Hub,
    ) -> Self {
        Self {
            upstreams,
            hub,
            mode: Mode::PerCaller {
                identity,
                callers: Mutex::default(),
            },
        }
    }

    /// The gateway's own scope, when it has only that.
    pub(super) fn own(&self) -> Option<&Arc<Scope>> {
        match &self.mode {
            Mode::Shared(scope) => Some(scope),
            Mode::PerCaller { .. } => None,
        }
    }

    /// The scope `principal`'s requests and streams are served from (its
    /// credential scope's, `principal` one of its members), opened if it
    /// was not, with one more holder: an attach of the demand hooks, until
    /// its detach [releases](Self::release) it. The shared scope needs no
    /// holder.
    ///
    /// # Errors
    ///
    /// `-32600` for a caller without a principal at a per-caller gateway.
    pub(super) fn hold(&self, principal: Option<&Principal>) -> Result<Arc<Scope>, ErrorData> {
        let (identity, callers) = match &self.mode {
            Mode::Shared(scope) => return Ok(Arc::clone(scope)),
            Mode::PerCaller { identity, callers } => (identity, callers),
        };
        let Some(principal) = principal else {
            return Err(ErrorData::invalid_request(
                "this gateway serves identified callers only: a principal is required",
                None,
            ));
        };
        let mut callers = callers.lock();
        let held = callers
            .entry(identity.scope_of(principal))
            .or_insert_with(|| {
                let scope = Scope::open(
                    Some(principal.clone()),
                    &self.upstreams,
                    Some(identity.clone()),
                );
                scope.serve(&self.hub);
                OpenScope { scope, holders: 0 }
            });
        held.holders += 1;
        held.scope.members.admit(principal);
        Ok(Arc::clone(&held.scope))
    }

    /// The scope `principal` is served from, if it is open (the shared
    /// one always is).
    pub(super) fn find(&self, principal: Option<&Principal>) -> Option<Arc<Scope>> {
        match (&self.mode, principal) {
            (Mode::Shared(scope), _) => Some(Arc::clone(scope)),
            (Mode::PerCaller { identity, callers }, Some(principal)) => callers
                .lock()
                .get(&identity.scope_of(principal))
                .map(|held| Arc::clone(&held.scope)),
            (Mode::PerCaller { .. }, None) => None,
        }
    }

    /// Every scope open now.
    pub(super) fn all(&self) -> Vec<Arc<Scope>> {
        match &self.mode {
            Mode::Shared(scope) => vec![Arc::clone(scope)],
            Mode::PerCaller { callers, .. } => callers
                .lock()
                .values()
                .map(|held| Arc::clone(&held.scope))
                .collect(),
        }
    }

    /// One holder of `principal`'s scope fewer: the last one closes it,
    /// its tasks aborted.
    pub(super) fn release(&self, principal: Option<&Principal>) {
        let (Mode::PerCaller { identity, callers }, Some(principal)) = (&self.mode, principal)
        else {
            return;
        };
        let mut callers = callers.lock();
        let name = identity.scope_of(principal);
        let Some(held) = callers.get_mut(&name) else {
            return;
        };
        held.holders -= 1;
        if held.holders == 0 {
            // Dropped outside the lock.
            let gone = callers.remove(&name);
            drop(callers);
            drop(gone);
        }
    }
}
