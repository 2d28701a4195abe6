//! The live catalog a host keeps of a server ([`Catalog`]) and of several
//! ([`CatalogSet`]).

mod connection;
mod diff;
mod entry;
mod fetcher;
mod health;
mod keeper;
mod live;
mod options;
mod schedule;
mod set;
mod snapshot;

pub use diff::{Change, Changes, Diff, Edit};
pub use entry::{CatalogKind, Contents, Keyed};
pub use health::{FetchHealth, Health, ListenState};
pub use live::Catalog;
pub use options::{
    CatalogOptions, DEFAULT_DEBOUNCE, DEFAULT_GATHER, DEFAULT_MAX_DELAY, DEFAULT_MAX_PAGES,
    DEFAULT_MIN_REFRESH, DEFAULT_REQUEST_TIMEOUT,
};
pub use set::{CatalogSet, Merged};
pub use snapshot::Snapshot;
