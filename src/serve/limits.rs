//! At most N open streams per principal, so that one tenant cannot take
//! the whole server's stream limit; and what one more stream does at the
//! cap.
//!
//! A stream holds a [`Slot`] for as long as it lives; the slot is given back
//! when the stream is dropped, however it ended (its terminal message, a
//! cancel, a dropped connection, a panic unwinding). Under
//! [`CapPolicy::ReplaceOldest`] a principal's slots are kept in the order
//! they were taken, and one more takes the oldest's place: that stream is
//! told ([`Slot::replaced`]) and ends, and the new one is admitted at once.

use std::collections::{HashMap, VecDeque};

use futures_util::task::AtomicWaker;

use crate::audience::Principal;
use crate::error::OpenError;
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};

/// What a principal at its cap of open streams gets for one more
/// ([`ListenService::with_cap_policy`](crate::ListenService::with_cap_policy)).
///
/// Choose [`Refuse`](Self::Refuse) (the default) where a principal's
/// streams are its own to manage and more than the cap is a bug or abuse.
/// Choose [`ReplaceOldest`](Self::ReplaceOldest) where a principal is one
/// user whose clients come and go (a laptop that slept, a tab reloaded, a
/// phone that changed networks): their old streams may still be held on
/// connections that vanished, and the user must get their notifications
/// back now, not once those are reaped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CapPolicy {
    /// Refuse the new stream with `-32603` `Subscription limit reached`.
    #[default]
    Refuse,
    /// End the principal's oldest stream with
    /// [`REPLACED_ERROR_CODE`](crate::error::REPLACED_ERROR_CODE) and
    /// `data: {"reason":"replaced"}` (counted as
    /// [`CloseReason::Replaced`](crate::CloseReason::Replaced)), and admit
    /// the new one. The crate's client does not listen again after that
    /// end, so two live clients of one principal over its cap do not evict
    /// each other in turn: the older one stops.
    ReplaceOldest,
}

/// The open streams of each principal, against a limit.
#[derive(Debug, Clone)]
pub(crate) struct PrincipalLimits {
    limit: usize,
    policy: CapPolicy,
    open: Arc<Mutex<Open>>,
}

/// Each principal's slots, oldest first.
type Open = HashMap<Principal, VecDeque<Arc<Seat>>>;

/// What a slot shares with the limits: whether a newer stream took its
/// place, and who to tell.
#[derive(Debug, Default)]
struct Seat {
    replaced: AtomicBool,
    stream: AtomicWaker,
}

/// One stream's place under its principal's limit.
#[derive(Debug)]
pub(crate) struct Slot {
    principal: Principal,
    seat: Arc<Seat>,
    open: Arc<Mutex<Open>>,
}

impl PrincipalLimits {
    pub(crate) fn new(limit: usize, policy: CapPolicy) -> Self {
        Self {
            limit,
            policy,
            open: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub(crate) fn set_policy(&mut self, policy: CapPolicy) {
        self.policy = policy;
    }

    /// Takes a slot for `principal`; at its limit, under
    /// [`CapPolicy::ReplaceOldest`], the oldest slot's.
    ///
    /// # Errors
    ///
    /// [`OpenError::PrincipalLimitReached`] when it holds `limit` already
    /// and the policy refuses.
    pub(crate) fn acquire(&self, principal: &Principal) -> Result<Slot, OpenError> {
        let seat = Arc::new(Seat::default());
        let replaced = {
            let mut open = self.open.lock();
            let seats = open.entry(principal.clone()).or_default();
            let replaced = if seats.len() < self.limit {
                None
            } else if self.policy == CapPolicy::ReplaceOldest {
                seats.pop_front()
            } else {
                if seats.is_empty() {
                    open.remove(principal);
                }
                return Err(OpenError::PrincipalLimitReached { limit: self.limit });
            };
            seats.push_back(Arc::clone(&seat));
            replaced
        };
        // Told outside the lock: telling wakes its stream's task.
        if let Some(oldest) = replaced {
            oldest.replaced.store(true, Ordering::Release);
            oldest.stream.wake();
        }
        Ok(Slot {
            principal: principal.clone(),
            seat,
            open: self.open.clone(),
        })
    }
}

impl Slot {
    /// Whether a newer stream of its principal took its place.
    pub(crate) fn is_replaced(&self) -> bool {
        self.seat.replaced.load(Ordering::Acquire)
    }

    /// Ready once a newer stream of its principal took its place.
    #[cfg(any_transport)]
    pub(crate) fn poll_replaced(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        // Registered before looking: a replacement after the look wakes it.
        self.seat.stream.register(cx.waker());
        if self.is_replaced() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock();
        if let Some(seats) = open.get_mut(&self.principal) {
            // Gone already when a newer stream took its place.
            if let Some(at) = seats.iter().position(|seat| Arc::ptr_eq(seat, &self.seat)) {
                seats.remove(at);
            }
            // A principal with no stream open costs nothing.
            if seats.is_empty() {
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
        let limits = PrincipalLimits::new(2, CapPolicy::Refuse);
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
        assert!(!first_replaced(&limits, &a));
    }

    /// Whether `principal` has a seat marked replaced still counted.
    fn first_replaced(limits: &PrincipalLimits, principal: &Principal) -> bool {
        limits.open.lock()[principal]
            .iter()
            .any(|seat| seat.replaced.load(Ordering::Acquire))
    }

    #[test]
    fn at_its_limit_the_oldest_is_replaced_and_the_new_one_admitted() {
        let limits = PrincipalLimits::new(2, CapPolicy::ReplaceOldest);
        let a = Principal::new("a");
        let first = limits.acquire(&a).unwrap();
        let second = limits.acquire(&a).unwrap();
        let third = limits.acquire(&a).expect("admitted in the oldest's place");
        assert!(first.is_replaced());
        assert!(!second.is_replaced() && !third.is_replaced());
        assert_eq!(limits.open.lock()[&a].len(), 2);
        // The replaced one leaving frees nothing: its place is taken.
        drop(first);
        assert_eq!(limits.open.lock()[&a].len(), 2);
        let fourth = limits.acquire(&a).unwrap();
        assert!(second.is_replaced(), "then the next oldest");
        drop((second, third, fourth));
        assert!(limits.open.lock().is_empty());
    }

    #[cfg(any_transport)]
    #[test]
    fn a_replaced_slot_wakes_its_stream() {
        let limits = PrincipalLimits::new(1, CapPolicy::ReplaceOldest);
        let a = Principal::new("a");
        let first = limits.acquire(&a).unwrap();
        let woken = Arc::new(Woken::default());
        let waker = futures_util::task::waker(Arc::clone(&woken));
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(first.poll_replaced(&mut cx).is_pending());
        let _second = limits.acquire(&a).unwrap();
        assert_eq!(woken.0.load(Ordering::Relaxed), 1);
        assert!(first.poll_replaced(&mut cx).is_ready());
    }

    #[cfg(any_transport)]
    #[derive(Default)]
    struct Woken(std::sync::atomic::AtomicUsize);

    #[cfg(any_transport)]
    impl futures_util::task::ArcWake for Woken {
        fn wake_by_ref(woken: &Arc<Self>) {
            woken.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_refused_principal_with_no_stream_leaves_no_entry() {
        let limits = PrincipalLimits::new(0, CapPolicy::Refuse);
        let a = Principal::new("a");
        assert!(limits.acquire(&a).is_err());
        assert!(limits.open.lock().is_empty());
    }
}
