//! The one place JSON-RPC bytes are written.
//!
//! Everything the crate puts on a listen stream is made here: a
//! notification rendered once per publish with a cut where the subscription
//! id goes ([`notification`]), a stream's id rendered once
//! ([`SubscriptionId`]), the spliced result ([`Message`]), and the
//! acknowledgement, completion and error responses around them
//! ([`response`]). Each shape has a golden file under `src/wire/golden/`,
//! checked byte for byte. A notification received as text is read back
//! here too ([`received`]): its params' values are kept as the JSON they
//! came as, so that passing it on copies them rather than rendering them
//! again.
//!
//! This module sits at the bottom of the crate: it knows JSON-RPC and the
//! `_meta` keys, and nothing of events, filters or hubs.

#[cfg(test)]
mod golden;
mod message;
pub(crate) mod meta;
pub(crate) mod notification;
pub(crate) mod received;
pub(crate) mod response;
mod subscription_id;

pub use message::Message;
pub use subscription_id::SubscriptionId;
pub(crate) use subscription_id::request_id_json;
