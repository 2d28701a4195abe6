//! Who holds each key: how many holders a key has, its first holder and its
//! last, and the idle spell after its last, in which it lingers until its
//! grace ends or a holder comes back. The one bookkeeping under the hub's
//! interest watches (no grace), the relay's per-key channels and the demand
//! hooks (each with a grace).
//!
//! A key enters with its first holder and gets a new generation, so that
//! whatever still refers to an earlier life of the key (a late timer, the
//! release of a hold taken before the key was let go) changes nothing. Its
//! last holder leaving lets its owner start an idle spell, numbered: a
//! holder that comes back ends the spell, and the grace of a spell lapses
//! only while that spell is still the key's.

// Each user takes a part: the hub's interest the counting, the relay the
// graces it polls, the demand hooks the graces they time. Only a build with
// a transport and a relay uses every part, and is the one that tells dead
// code here.
#![cfg_attr(not(all(any_transport, any_relay)), allow(dead_code))]

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Instant;

/// The keys held, each with its owner's state `S`.
#[derive(Debug)]
pub(crate) struct Holds<K, S = ()> {
    keys: HashMap<K, Held<S>>,
    /// The keys in an idle spell, and when their grace ends: apart, so
    /// that finding the lapsed ones reads only these.
    lingering: HashMap<K, Instant>,
    /// Generations handed out, across keys.
    generations: u64,
}

/// One key's holders and state.
#[derive(Debug)]
pub(crate) struct Held<S> {
    holders: usize,
    generation: u64,
    /// Its idle spells so far.
    spells: u64,
    /// The idle spell it is in (it has no holder).
    idle: Option<u64>,
    pub(crate) state: S,
}

/// What a holder's arrival was to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// The key was not held: it entered, of a new generation.
    First,
    /// The key had no holder and lingered: its idle spell ended.
    Back,
    /// The key was held already.
    Another,
}

/// What a holder's leaving was to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leaving {
    /// Others still hold it.
    Others,
    /// It was the last holder: the owner lets the key go, or starts an
    /// idle spell ([`Holds::idle`]).
    Last,
    /// The key is not held, or not in that generation: nothing changed.
    Stale,
}

impl<K, S> Default for Holds<K, S> {
    fn default() -> Self {
        Self {
            keys: HashMap::new(),
            lingering: HashMap::new(),
            generations: 0,
        }
    }
}

impl<S> Held<S> {
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn holders(&self) -> usize {
        self.holders
    }
}

impl<K: Eq + Hash + Clone, S> Holds<K, S> {
    /// One holder more of `key`; a key not held enters with `state()`.
    pub(crate) fn hold(&mut self, key: K, state: impl FnOnce() -> S) -> (Arrival, &mut Held<S>) {
        let mut arrival = if self.lingering.remove(&key).is_some() {
            Arrival::Back
        } else {
            Arrival::Another
        };
        let generations = &mut self.generations;
        let held = self.keys.entry(key).or_insert_with(|| {
            *generations += 1;
            arrival = Arrival::First;
            Held {
                holders: 0,
                generation: *generations,
                spells: 0,
                idle: None,
                state: state(),
            }
        });
        held.idle = None;
        held.holders += 1;
        (arrival, held)
    }

    /// One holder fewer of `key`, if it is of `generation` (any, when
    /// `None`).
    pub(crate) fn release(&mut self, key: &K, generation: Option<u64>) -> Leaving {
        match self.get_mut(key, generation) {
            Some(held) if held.holders > 0 => {
                held.holders -= 1;
                if held.holders == 0 {
                    Leaving::Last
                } else {
                    Leaving::Others
                }
            }
            _ => Leaving::Stale,
        }
    }

    /// Starts an idle spell for `key`, which has no holder, lingering until
    /// `until`: the spell's number, for its grace ([`lapse`](Self::lapse)).
    pub(crate) fn idle(&mut self, key: &K, until: Instant) -> Option<u64> {
        let held = self.keys.get_mut(key).filter(|held| held.holders == 0)?;
        held.spells += 1;
        held.idle = Some(held.spells);
        self.lingering.insert(key.clone(), until);
        Some(held.spells)
    }

    /// The grace of `key`'s idle spell `spell` (of `generation`) is over:
    /// the key, when that spell is still its own, so that its owner lets
    /// it go.
    pub(crate) fn lapse(&mut self, key: &K, generation: u64, spell: u64) -> Option<&mut Held<S>> {
        let held = self
            .keys
            .get_mut(key)
            .filter(|held| held.generation == generation && held.idle == Some(spell))?;
        held.idle = None;
        self.lingering.remove(key);
        Some(held)
    }

    /// The keys whose idle spell's grace is over by `now`, taken out.
    pub(crate) fn lapsed(&mut self, now: Instant) -> Vec<K> {
        let over: Vec<K> = self
            .lingering
            .iter()
            .filter(|(_, until)| **until <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &over {
            self.remove(key);
        }
        over
    }

    /// `key`, if it is held (or lingers) in `generation` (any, when `None`).
    pub(crate) fn get_mut(&mut self, key: &K, generation: Option<u64>) -> Option<&mut Held<S>> {
        self.keys
            .get_mut(key)
            .filter(|held| generation.is_none_or(|g| held.generation == g))
    }

    /// Whether `key` is held or lingers.
    pub(crate) fn contains(&self, key: &K) -> bool {
        self.keys.contains_key(key)
    }

    /// The keys held or lingering.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &K> {
        self.keys.keys()
    }

    /// Lets go of `key`.
    pub(crate) fn remove(&mut self, key: &K) {
        self.keys.remove(key);
        self.lingering.remove(key);
    }

    /// Lets go of every key.
    pub(crate) fn clear(&mut self) {
        self.keys.clear();
        self.lingering.clear();
    }

    /// How many keys are held or linger.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_first_holder_enters_the_last_leaves_and_a_new_life_is_a_new_generation() {
        let mut holds: Holds<&str> = Holds::default();
        let (arrival, held) = holds.hold("a", || ());
        let first = held.generation();
        assert_eq!(arrival, Arrival::First);
        assert_eq!(holds.hold("a", || ()).0, Arrival::Another);
        assert_eq!(holds.release(&"a", Some(first)), Leaving::Others);
        assert_eq!(holds.release(&"a", Some(first)), Leaving::Last);
        holds.remove(&"a");
        let (arrival, held) = holds.hold("a", || ());
        assert_eq!(arrival, Arrival::First);
        assert_ne!(held.generation(), first);
        // A release of the earlier life changes nothing.
        assert_eq!(holds.release(&"a", Some(first)), Leaving::Stale);
        assert_eq!(holds.release(&"b", None), Leaving::Stale);
    }

    #[test]
    fn a_holder_back_in_an_idle_spell_ends_it_and_its_grace_lapses_for_nothing() {
        let mut holds: Holds<&str> = Holds::default();
        let generation = holds.hold("a", || ()).1.generation();
        assert_eq!(holds.release(&"a", None), Leaving::Last);
        let now = Instant::now();
        let spell = holds.idle(&"a", now).unwrap();
        assert_eq!(holds.hold("a", || ()).0, Arrival::Back);
        assert!(holds.lapse(&"a", generation, spell).is_none());
        assert!(holds.lapsed(now + Duration::from_secs(1)).is_empty());
        // A later spell lapses; the earlier one's grace still does nothing.
        assert_eq!(holds.release(&"a", None), Leaving::Last);
        let later = holds.idle(&"a", now).unwrap();
        assert!(holds.lapse(&"a", generation, spell).is_none());
        assert!(holds.lapse(&"a", generation, later).is_some());
    }

    #[test]
    fn only_keys_whose_grace_is_over_lapse() {
        let mut holds: Holds<&str> = Holds::default();
        let now = Instant::now();
        for key in ["soon", "later", "held"] {
            holds.hold(key, || ());
        }
        for (key, after) in [("soon", 1), ("later", 10)] {
            holds.release(&key, None);
            holds.idle(&key, now + Duration::from_secs(after));
        }
        assert!(
            holds.idle(&"held", now).is_none(),
            "a held key has no idle spell"
        );
        assert_eq!(holds.lapsed(now + Duration::from_secs(5)), ["soon"]);
        assert!(holds.contains(&"later") && holds.contains(&"held"));
        assert_eq!(holds.len(), 2);
    }
}
