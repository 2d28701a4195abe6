//! One listener's memory of the successions it has seen: the version
//! pending in its queue and the version its reader last took, per key.
//!
//! Only queues that ever see an event with a [`Succession`] have this
//! (boxed, so that the others pay one pointer). Its size follows the keys
//! the listener watches: a pending entry leaves with its event, and the
//! delivered entries of finished keys are pruned once there are many.

use std::collections::HashMap;
use std::sync::Arc;

use crate::event::Succession;

/// How many delivered keys a listener remembers before it forgets the
/// finished ones (those whose terminal version it took). A status published
/// after its key's terminal one is a publisher's mistake; past this many
/// finished keys, such a late status could reach the reader again.
const REMEMBERED_FINISHED: usize = 1_024;

/// What a new event of a succession does to a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Nothing of its key is pending: queue it.
    New,
    /// A pending event of its key is older: put it in that one's place.
    Replaces,
    /// It is older than the pending or the delivered version: drop it.
    Stale,
}

#[derive(Debug, Default)]
pub(crate) struct Successions {
    /// The version of the event pending in the queue, per key.
    pending: HashMap<Arc<str>, i128>,
    /// The version the reader last took, per key, and whether it was the
    /// last one.
    delivered: HashMap<Arc<str>, (i128, bool)>,
}

impl Successions {
    /// Decides what `succession`'s event does, and records it as pending
    /// unless it is stale.
    pub(crate) fn admit(&mut self, succession: &Succession) -> Admission {
        let version = succession.version();
        if self
            .delivered
            .get(succession.key())
            .is_some_and(|&(taken, _)| version < taken)
        {
            return Admission::Stale;
        }
        match self.pending.get_mut(succession.key()) {
            Some(pending) if version < *pending => Admission::Stale,
            Some(pending) => {
                *pending = version;
                Admission::Replaces
            }
            None => {
                self.pending
                    .insert(succession.shared_key().clone(), version);
                Admission::New
            }
        }
    }

    /// Its event left the queue without reaching the reader.
    pub(crate) fn forget(&mut self, succession: &Succession) {
        self.pending.remove(succession.key());
    }

    /// The reader took its event.
    pub(crate) fn delivered(&mut self, succession: &Succession) {
        self.pending.remove(succession.key());
        self.delivered.insert(
            succession.shared_key().clone(),
            (succession.version(), succession.is_terminal()),
        );
        if self.delivered.len() > REMEMBERED_FINISHED {
            self.delivered.retain(|_, &mut (_, finished)| !finished);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_replaces_older_and_nothing_older_than_taken_comes_back() {
        let mut seen = Successions::default();
        let v = |version| Succession::new("t", version);
        assert_eq!(seen.admit(&v(2)), Admission::New);
        assert_eq!(seen.admit(&v(1)), Admission::Stale);
        assert_eq!(seen.admit(&v(3)), Admission::Replaces);
        seen.delivered(&v(3));
        assert_eq!(seen.admit(&v(2)), Admission::Stale);
        assert_eq!(
            seen.admit(&v(3)),
            Admission::New,
            "the same version again is not older"
        );
    }
}
