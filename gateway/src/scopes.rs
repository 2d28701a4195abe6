//! The scopes a gateway holds: its own, or one per credential scope of
//! its callers (by default each principal its own), opened by a caller's
//! first stream or request and released a grace after its members' last.
//!
//! One grace, whoever held it last: a request's hold lingers the grace
//! itself, while a stream's is given back by the demand hooks' detach,
//! which comes a grace after the principal's last stream already, and so
//! lingers no more.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

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
    grace: Duration,
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

/// A credential scope's scope and who holds it.
struct OpenScope {
    scope: Arc<Scope>,
    holders: usize,
    /// Until when the holds given back keep it: the latest of their
    /// releases and lingers.
    kept_until: Instant,
}

/// One hold on a caller's scope, given back when dropped.
pub(super) struct ScopeHold {
    scopes: Arc<Scopes>,
    /// Its credential scope's name.
    name: String,
    /// How long it keeps the scope once given back.
    linger: Duration,
}

/// Who takes a hold on a scope, which says how long it lingers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Holder {
    /// A request ([`Gateway::view`](crate::Gateway::view)): the grace.
    Request,
    /// The demand hooks' attach of a principal's streams, whose detach
    /// already came a grace after the last of them: no more.
    Streams,
}

impl Scopes {
    /// The gateway's own scope, `scope`, for every caller.
    pub(super) fn shared(
        scope: Arc<Scope>,
        upstreams: Vec<Upstream>,
        hub: Hub,
        grace: Duration,
    ) -> Self {
        Self {
            upstreams,
            hub,
            grace,
            mode: Mode::Shared(scope),
        }
    }

    /// A scope per caller, each with its credentials from `identity`.
    pub(super) fn per_caller(
        upstreams: Vec<Upstream>,
        identity: UpstreamIdentity,
        hub: Hub,
        grace: Duration,
    ) -> Self {
        Self {
            upstreams,
            hub,
            grace,
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

    /// How long a caller's scope outlives its last holder.
    pub(super) fn grace(&self) -> Duration {
        self.grace
    }

    /// The scope `principal`'s requests and streams are served from (its
    /// credential scope's, `principal` one of its members), opened if it
    /// was not, and held until the hold is dropped (and the grace has
    /// passed). The shared scope needs no hold.
    ///
    /// # Errors
    ///
    /// `-32600` for a caller without a principal at a per-caller gateway.
    pub(super) fn hold(
        self: &Arc<Self>,
        principal: Option<&Principal>,
        holder: Holder,
    ) -> Result<(Arc<Scope>, Option<ScopeHold>), ErrorData> {
        let (identity, callers) = match &self.mode {
            Mode::Shared(scope) => return Ok((Arc::clone(scope), None)),
            Mode::PerCaller { identity, callers } => (identity, callers),
        };
        let Some(principal) = principal else {
            return Err(ErrorData::invalid_request(
                "this gateway serves identified callers only: a principal is required",
                None,
            ));
        };
        let name = identity.scope_of(principal);
        let mut callers = callers.lock();
        let held = callers.entry(name.clone()).or_insert_with(|| {
            let scope = Scope::open(
                Some(principal.clone()),
                &self.upstreams,
                Some(identity.clone()),
            );
            scope.serve(&self.hub);
            OpenScope {
                scope,
                holders: 0,
                kept_until: Instant::now(),
            }
        });
        held.holders += 1;
        held.scope.members.admit(principal);
        let linger = match holder {
            Holder::Request => self.grace,
            Holder::Streams => Duration::ZERO,
        };
        let hold = ScopeHold {
            scopes: Arc::clone(self),
            name,
            linger,
        };
        Ok((Arc::clone(&held.scope), Some(hold)))
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

    /// A hold on scope `name` given back, to keep it `linger` longer: once
    /// it has no holder and what kept it has lapsed, it is released.
    fn release(self: &Arc<Self>, name: &str, linger: Duration) {
        let Mode::PerCaller { callers, .. } = &self.mode else {
            return;
        };
        {
            let mut callers = callers.lock();
            let Some(held) = callers.get_mut(name) else {
                return;
            };
            held.holders -= 1;
            held.kept_until = held.kept_until.max(Instant::now() + linger);
            if held.holders > 0 {
                return;
            }
        }
        let (scopes, name) = (Arc::clone(self), name.to_owned());
        let lapse = move || {
            let Mode::PerCaller { callers, .. } = &scopes.mode else {
                return;
            };
            let mut callers = callers.lock();
            if callers
                .get(&name)
                .is_some_and(|held| held.holders == 0 && held.kept_until <= Instant::now())
            {
                // Dropped outside the lock: its tasks are aborted.
                let gone = callers.remove(&name);
                drop(callers);
                drop(gone);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !linger.is_zero() => {
                runtime.spawn(async move {
                    tokio::time::sleep(linger).await;
                    lapse();
                });
            }
            // Nothing to wait for, or dropped at shutdown outside any
            // runtime: now rather than never.
            _ => lapse(),
        }
    }
}

impl Drop for ScopeHold {
    fn drop(&mut self) {
        self.scopes.release(&self.name, self.linger);
    }
}
