//! Serving listen streams: the serving rules proved by sources that
//! misbehave, authorization, extensions and request context, graceful
//! shutdown, the Streamable HTTP transport and its answers to bad input,
//! and the notification channel.

#[path = "../support/mod.rs"]
mod support;

mod admission;
mod advertising;
mod audiences;
mod authorization;
mod channel;
mod demand;
mod endpoint;
mod extensions;
mod fast_path;
mod http_answers;
mod http_transport;
mod serving_rules;
mod sessions;
mod shutdown;
