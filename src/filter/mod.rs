//! What a listener asked for and what it was granted.
//!
//! A [`Filter`] is the `notifications` object of a `subscriptions/listen`
//! request: three opt-in list-changed flags, a set of resource URIs, and any
//! extension fields (such as the tasks extension's `taskIds`), which are kept
//! verbatim rather than silently dropped. The same type describes the
//! *granted* filter: the request narrowed by what the server advertises
//! ([`Filter::narrow`]), which is what the acknowledgement carries and what
//! the hub routes by.

mod advertise;
mod capabilities;
mod extension;
mod field;
mod key;
mod notifications;
mod parse;

pub use capabilities::Capabilities;
pub use extension::Extension;
pub use key::InterestKey;
pub use notifications::Filter;
pub use parse::DEFAULT_MAX_URIS;
