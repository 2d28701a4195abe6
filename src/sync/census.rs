//! A census of shared writes, compiled only under `--cfg
//! mcp_subscriptions_census`: every lock acquisition and atomic write of
//! the hub (they all go through this module's parent) and every count of
//! an event's reference noted with the cache line it lands on, the thread
//! that made it, and where in the source it was made.
//!
//! Two cores cannot show what many cores would pay, but they can count it:
//! a write to a line that three or more threads write is one that, on many
//! cores, moves the line between them. The census counts, per delivery,
//! every write and those that land on such a line, and names the places
//! that make them (`hub/census.rs` runs the regimes and prints it).
//!
//! Each thread notes into a tally of its own (a lock only it takes until
//! the census is read), so noting costs no shared write of its own.

use std::collections::{BTreeMap, HashMap};
use std::panic::Location;
use std::sync::{Arc, Mutex, PoisonError};

/// The cache line size assumed: 64 bytes, as on x86-64 and most ARM cores.
const LINE: usize = 64;

/// One thread's notes: per line and place, how many writes.
type Tally = HashMap<(usize, &'static Location<'static>), u64>;

/// Every thread's tally, each noted into by its own thread.
static TALLIES: Mutex<Vec<(usize, Arc<Mutex<Tally>>)>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: Arc<Mutex<Tally>> = {
        let tally = Arc::<Mutex<Tally>>::default();
        let mut tallies = TALLIES.lock().unwrap_or_else(PoisonError::into_inner);
        let thread = tallies.len();
        tallies.push((thread, tally.clone()));
        tally
    };
}

/// Notes a write to the line holding `address`, made at `at`.
pub(crate) fn note<T: ?Sized>(address: *const T, at: &'static Location<'static>) {
    let line = address.cast::<u8>() as usize / LINE;
    MINE.with(|tally| {
        *tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((line, at))
            .or_default() += 1;
    });
}

/// Forgets every note so far.
pub(crate) fn reset() {
    for (_, tally) in TALLIES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        tally.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// What the census found since the last [`reset`].
#[derive(Debug, Default)]
pub(crate) struct Census {
    /// Every write noted.
    pub(crate) writes: u64,
    /// Writes to lines that three or more threads wrote.
    pub(crate) shared: u64,
    /// The shared writes by where they were made, most first.
    pub(crate) shared_by_place: Vec<(String, u64)>,
}

/// Reads the census: which lines three or more threads wrote, and the
/// writes that landed on them.
pub(crate) fn read() -> Census {
    let tallies = TALLIES.lock().unwrap_or_else(PoisonError::into_inner);
    let mut writers: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut notes = Vec::new();
    for (thread, tally) in tallies.iter() {
        let tally = tally.lock().unwrap_or_else(PoisonError::into_inner);
        for (&(line, at), &count) in tally.iter() {
            let threads = writers.entry(line).or_default();
            if !threads.contains(thread) {
                threads.push(*thread);
            }
            notes.push((line, at, count));
        }
    }
    let mut census = Census::default();
    let mut by_place: BTreeMap<String, u64> = BTreeMap::new();
    for (line, at, count) in notes {
        census.writes += count;
        if writers[&line].len() >= 3 {
            census.shared += count;
            *by_place
                .entry(format!("{}:{}", at.file(), at.line()))
                .or_default() += count;
        }
    }
    census.shared_by_place = by_place.into_iter().collect();
    census.shared_by_place.sort_by(|a, b| b.1.cmp(&a.1));
    census
}
