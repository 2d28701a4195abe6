//! A function the application hands the crate to be called back: kept
//! behind an `Arc`, so that the options holding it stay `Clone`, and shown
//! as `Hook(..)` by their `Debug`, since a closure has nothing to show.

use std::fmt;
use std::sync::Arc;

/// An application callback, shared.
pub(crate) struct Hook<F: ?Sized>(pub(crate) Arc<F>);

impl<F: ?Sized> Clone for Hook<F> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<F: ?Sized> fmt::Debug for Hook<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hook(..)")
    }
}
