//! One request as several streams: a server takes at most so many URIs in
//! one listen request, so a filter past that is listened to in chunks,
//! read as one stream.

use futures_util::future::select_all;

use crate::connect::{Connect, open_within};
use crate::error::SubscribeError;
use crate::options::SubscribeOptions;
use mcp_subscriptions::Filter;
use mcp_subscriptions::{CloseReason, Next, SourceHandle};

/// The acknowledged streams of one request's chunks.
pub(super) struct Group<S> {
    members: Vec<S>,
}

impl<S: SourceHandle> Group<S> {
    /// The next item of any member, and which member gave it. Cancel-safe,
    /// as each member's `next` is.
    pub(super) async fn next(&mut self) -> (usize, Next) {
        if let [only] = self.members.as_mut_slice() {
            return (0, only.next().await);
        }
        let (next, index, _) = select_all(
            self.members
                .iter_mut()
                .map(|member| Box::pin(member.next())),
        )
        .await;
        (index, next)
    }

    /// Member `index`.
    pub(super) fn member(&self, index: usize) -> &S {
        &self.members[index]
    }

    /// Closes every member.
    pub(super) fn close(&mut self, reason: CloseReason) {
        for member in &mut self.members {
            member.close(reason);
        }
    }
}

/// Opens `requested` in chunks of at most the options' URIs a stream,
/// each within the acknowledgement timeout: the grants as one filter, and
/// the streams. When a chunk fails, those already open are closed.
pub(super) async fn open_group<C: Connect>(
    connect: &C,
    requested: &Filter,
    options: &SubscribeOptions,
) -> Result<(Filter, Group<C::Stream>), SubscribeError> {
    let mut group = Group {
        members: Vec::new(),
    };
    let mut granted = Filter::new();
    for chunk in requested.chunks(options.max_uris_per_stream) {
        match open_within(connect, &chunk, options).await {
            Ok((grant, stream)) => {
                granted = granted.union(&grant);
                group.members.push(stream);
            }
            Err(err) => {
                group.close(CloseReason::Cancelled);
                return Err(err);
            }
        }
    }
    Ok((granted, group))
}
