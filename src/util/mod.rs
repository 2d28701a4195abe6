//! Small pieces several layers use, each written once: the backoff of
//! every retry (`backoff.rs`), the wrapper of an application's callback
//! (`hook.rs`), and the bookkeeping of who holds a key, with its grace
//! (`holds.rs`).

pub(crate) mod backoff;
pub(crate) mod holds;
pub(crate) mod hook;
