//! Whom a scope's events are for.

use std::sync::Arc;

use mcp_subscriptions::Audience;
use mcp_subscriptions::audience::Principal;
use parking_lot::RwLock;

/// Whom a scope's events are for: everyone (the gateway's own scope), or
/// the principals that share its credentials, admitted as they come.
#[derive(Clone)]
pub(super) struct Members(Arc<RwLock<Audience>>);

impl Members {
    /// Everyone, or `principal` alone until others are admitted.
    pub(super) fn of(principal: Option<&Principal>) -> Self {
        let audience =
            principal.map_or_else(Audience::everyone, |p| Audience::principal(p.clone()));
        Self(Arc::new(RwLock::new(audience)))
    }

    /// Adds `principal`, if it is not one already.
    pub(super) fn admit(&self, principal: &Principal) {
        if self.0.read().principals().contains(principal) {
            return;
        }
        let mut audience = self.0.write();
        if !audience.principals().contains(principal) {
            *audience = audience.clone().with_principal(principal.clone());
        }
    }

    /// Them now, as an event's audience.
    pub(super) fn audience(&self) -> Audience {
        self.0.read().clone()
    }
}
