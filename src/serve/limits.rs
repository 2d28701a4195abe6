//! At most N open streams per principal, so that one tenant cannot take
//! the whole server's stream limit.
//!
//! A stream holds a [`Slot`] for as long as it lives; the slot is given back
//! when the stream is dropped, however it ended (its terminal message, a
//! cancel, a dropped connection, a panic unwinding).

use std::collections::HashMap;

use crate::audience::Principal;
use crate::error::OpenError;
use crate::sync::{Arc, Mutex};

/// The open streams of each principal, against a limit.
#[derive(Debug, Clone)]
pub(crate) struct PrincipalLimits {
    limit: usize,
    open: Arc<Mutex<HashMap<Principal, usize>>>,
}

/// One stream's place under its principal's limit.
#[derive(Debug)]
pub(crate) struct Slot {
    principal: Principal,
    open: Arc<Mutex<HashMap<Principal, usize>>>,
}

impl PrincipalLimits {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            open: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Takes a slot for `principal`.
    ///
    /// # Errors
    ///
    /// [`OpenError::PrincipalLimitReached`] when it holds `limit` already.
    pub(crate) fn acquire(&self, principal: &Principal) -> Result<Slot, OpenError> {
        let mut open = self.open.lock();
        let count = open.entry(principal.clone()).or_default();
        if *count >= self.limit {
            return Err(OpenError::PrincipalLimitReached { limit: self.limit });
        }
        *count += 1;
        Ok(Slot {
            principal: principal.clone(),
            open: self.open.clone(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock();
        if let Some(count) = open.get_mut(&self.principal) {
            *count -= 1;
            // A principal with no stream open costs nothing.
            if *count == 0 {
                open.remove(&self.principal);
            }
        }
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_principal_at_its_limit_is_refused_until_a_slot_is_freed() {
        let limits = PrincipalLimits::new(2);
        let (a, b) = (Principal::new("a"), Principal::new("b"));
        let first = limits.acquire(&a).unwrap();
        let _second = limits.acquire(&a).unwrap();
        let refused = limits.acquire(&a).unwrap_err();
        assert_eq!(
            refused.to_error_data().message,
            "Subscription limit reached"
        );
        let _other = limits
            .acquire(&b)
            .expect("another principal is not limited by a");
        drop(first);
        limits.acquire(&a).expect("the freed slot is taken again");
    }
}
