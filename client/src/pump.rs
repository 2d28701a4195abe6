//! The task between a transport and a subscription's buffer: it reads the
//! streams while the buffer has room, changes their filter when asked to
//! (the new streams acknowledged before the old are closed), and listens
//! again when asked to.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::select_all;
use tokio::sync::{mpsc, oneshot};

use crate::buffer::Shared;
use crate::connect::Connect;
use crate::error::SubscribeError;
use crate::group::{Group, open_group};
use crate::item::{End, Item, Relistening};
use crate::options::SubscribeOptions;
use crate::overlap::Overlap;
use mcp_subscriptions::Event;
use mcp_subscriptions::Filter;
use mcp_subscriptions::{CloseReason, Next, SourceHandle};

/// Opens the first streams. With re-listening on, a transient failure (a
/// server not up yet, see [`SubscribeError::is_transient`]) is tried again
/// after the re-listen backoff, up to its attempts; a permanent one is
/// returned at once.
pub(super) async fn open_first<C: Connect>(
    connect: &C,
    requested: &Filter,
    options: &SubscribeOptions,
) -> Result<(Filter, Group<C::Stream>), SubscribeError> {
    retrying(options, || open_group(connect, requested, options)).await
}

/// Runs `work` until it succeeds or fails permanently; with re-listening
/// on, a transient failure is tried again after the re-listen backoff, up
/// to its attempts.
pub(super) async fn retrying<T, F, Fut>(
    options: &SubscribeOptions,
    mut work: F,
) -> Result<T, SubscribeError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SubscribeError>>,
{
    let mut attempt = 0u32;
    loop {
        let err = match work().await {
            Err(err) if err.is_transient() => err,
            done => return done,
        };
        let Some(relisten) = &options.relisten else {
            return Err(err);
        };
        attempt += 1;
        if relisten.max_attempts.is_some_and(|max| attempt > max) {
            return Err(err);
        }
        tracing::debug!(target: "mcp_subscriptions", %err, attempt, "a first request failed; trying again");
        let delay = relisten.delay(attempt);
        if let Some(on_retry) = &options.on_retry {
            (on_retry.0)(&Relistening {
                attempt,
                delay,
                reason: err.to_string(),
            });
        }
        tokio::time::sleep(delay).await;
    }
}

/// A filter change asked for by [`Subscription::set_filter`](crate::Subscription::set_filter):
/// the new filter, and where its grant goes.
pub(super) struct Refilter {
    pub(super) filter: Filter,
    pub(super) granted: oneshot::Sender<Result<Filter, SubscribeError>>,
}

/// Drives a subscription until it ends for good.
pub(super) async fn run<C: Connect>(
    connect: Arc<C>,
    requested: Filter,
    mut options: SubscribeOptions,
    shared: Arc<Shared>,
    group: Group<C::Stream>,
    commands: mpsc::UnboundedReceiver<Refilter>,
) {
    let mut listening = Listening::new(&*connect, &options, &shared, requested, group, commands);
    // A stream that ends soon after it was acknowledged counts as a failed
    // attempt: a server that completes (or drops) every listen at once is
    // listened to again at the backoff's pace, never in a loop.
    let mut attempts_in_a_row = 0u32;
    let mut acknowledged_at = Instant::now();
    loop {
        let end = listening.drive().await;
        listening.close_draining();
        if end == End::Cancelled {
            listening.current.close(CloseReason::Cancelled);
            shared.finish(End::Cancelled);
            return;
        }
        // A stream the server did not end itself is ended from our side, so
        // a server that is still there stops sending.
        if matches!(end, End::Overflowed { .. } | End::Protocol(_)) {
            listening.current.close(CloseReason::Error);
        }
        // A server completes a stream granted nothing right after its
        // acknowledgement: listening again would only be completed again.
        let granted_nothing = end == End::Complete && shared.granted().is_empty();
        let relisten = match &options.relisten {
            Some(relisten) if end.may_relisten(relisten.after_complete) && !granted_nothing => {
                relisten.clone()
            }
            _ => {
                shared.finish(end);
                return;
            }
        };
        let requested = listening.requested.clone();
        let commands = listening.commands;
        // Credentials the server ended, or refused a listen with for good,
        // are never sent again; `last` is the end to report if that stops
        // re-listening.
        let mut spent = end.is_unauthorized().then(|| options.headers.clone());
        let mut last = end.clone();
        let mut reason = end.to_string();
        if acknowledged_at.elapsed() >= relisten.max {
            attempts_in_a_row = 0;
        }
        let mut attempt = attempts_in_a_row;
        let group = loop {
            attempt += 1;
            if relisten.max_attempts.is_some_and(|max| attempt > max) {
                shared.finish(last);
                return;
            }
            if let Some(credentials) = &options.credentials {
                let refresh = credentials.refresh(&end, &mut options.headers);
                if unless_cancelled(&shared, refresh).await.is_none() {
                    shared.finish(End::Cancelled);
                    return;
                }
            }
            if spent.as_ref() == Some(&options.headers) {
                shared.finish(last);
                return;
            }
            // A lifetime's end is the server asking for a new listen now.
            let delay = if attempt == 1 && end.is_server_lifetime() {
                Duration::ZERO
            } else {
                relisten.delay(attempt)
            };
            shared.push_marker(Item::Relistening(Relistening {
                attempt,
                delay,
                reason: reason.clone(),
            }));
            let opened = unless_cancelled(&shared, async {
                tokio::time::sleep(delay).await;
                open_group(&*connect, &requested, &options).await
            });
            match opened.await {
                None => {
                    shared.finish(End::Cancelled);
                    return;
                }
                Some(Ok((granted, group))) => {
                    shared.push_marker(Item::Resynced(granted));
                    break group;
                }
                Some(Err(err)) => {
                    reason = err.to_string();
                    // The same request would be refused again: only new
                    // credentials may change that.
                    if !err.is_transient() {
                        spent = Some(options.headers.clone());
                        last = End::Refused(err);
                    }
                }
            }
        };
        attempts_in_a_row = attempt;
        acknowledged_at = Instant::now();
        listening = Listening::new(&*connect, &options, &shared, requested, group, commands);
    }
}

/// Old streams read at once while filters change.
const MAX_DRAINING: usize = 4;

/// A changed filter's old streams, read until `until`.
struct Draining<S> {
    group: Group<S>,
    epoch: u64,
    until: Instant,
}

/// What one acknowledged listen (and the filter changes made on it) reads.
struct Listening<'a, C: Connect> {
    connect: &'a C,
    options: &'a SubscribeOptions,
    shared: &'a Shared,
    requested: Filter,
    current: Group<C::Stream>,
    /// The current streams' number: each filter change's are the next.
    epoch: u64,
    draining: Vec<Draining<C::Stream>>,
    overlap: Overlap,
    commands: mpsc::UnboundedReceiver<Refilter>,
}

type Opening<'a, S> = Pin<
    Box<dyn Future<Output = (Refilter, Result<(Filter, Group<S>), SubscribeError>)> + Send + 'a>,
>;

impl<'a, C: Connect> Listening<'a, C> {
    fn new(
        connect: &'a C,
        options: &'a SubscribeOptions,
        shared: &'a Shared,
        requested: Filter,
        current: Group<C::Stream>,
        commands: mpsc::UnboundedReceiver<Refilter>,
    ) -> Self {
        Self {
            connect,
            options,
            shared,
            requested,
            current,
            epoch: 0,
            draining: Vec::new(),
            overlap: Overlap::default(),
            commands,
        }
    }

    /// Moves the streams' events into the buffer until the current streams
    /// end, opening the streams of each filter change on the way.
    async fn drive(&mut self) -> End {
        let mut opening: Option<Opening<'a, C::Stream>> = None;
        loop {
            let until = self.draining.iter().map(|old| old.until).min();
            // Read the transport only while the buffer has room (under
            // `Wait`), so a slow reader pushes back on the server.
            // Not biased: a flood on one stream must not starve the others,
            // a pending filter change or the end of an overlap.
            tokio::select! {
                () = self.shared.cancel.cancelled() => return End::Cancelled,
                (index, next) = async {
                    self.shared.room().await;
                    self.current.next().await
                } => match next {
                    Next::Event(event) => {
                        if let Err(dropped) = self.deliver(event, self.epoch, opening.is_some()) {
                            return End::Overflowed { dropped };
                        }
                    }
                    Next::Lagged(lost) => self.shared.add_lag(lost),
                    last => {
                        let end = C::end(self.current.member(index), last);
                        self.current.close(CloseReason::Cancelled);
                        return end;
                    }
                },
                (from, next) = async {
                    self.shared.room().await;
                    next_of_any(&mut self.draining).await
                }, if !self.draining.is_empty() => match next {
                    Next::Event(event) => {
                        let epoch = self.draining[from].epoch;
                        if let Err(dropped) = self.deliver(event, epoch, opening.is_some()) {
                            return End::Overflowed { dropped };
                        }
                    }
                    Next::Lagged(lost) => self.shared.add_lag(lost),
                    // An old stream that ends is done: what it did not
                    // bring of the signals claimed for it came after.
                    _ => {
                        if let Err(dropped) = self.close_old(from) {
                            return End::Overflowed { dropped };
                        }
                    }
                },
                // At most a few old streams at once: a change waits while
                // they drain.
                Some(command) = self.commands.recv(), if opening.is_none() && self.draining.len() < MAX_DRAINING => {
                    let (connect, options) = (self.connect, self.options);
                    opening = Some(Box::pin(async move {
                        let opened = open_group(connect, &command.filter, options).await;
                        (command, opened)
                    }));
                }
                (command, opened) = async { opening.as_mut().expect("guarded").await }, if opening.is_some() => {
                    opening = None;
                    match opened {
                        Ok((granted, group)) => {
                            let old = std::mem::replace(&mut self.current, group);
                            self.draining.push(Draining {
                                group: old,
                                epoch: self.epoch,
                                until: Instant::now() + self.options.overlap,
                            });
                            self.epoch += 1;
                            self.requested = command.filter;
                            self.shared.set_granted(granted.clone());
                            let _ = command.granted.send(Ok(granted));
                        }
                        Err(err) => {
                            let _ = command.granted.send(Err(err));
                        }
                    }
                }
                () = sleep_until(until), if until.is_some() => {
                    let now = Instant::now();
                    while let Some(at) = self.draining.iter().position(|old| old.until <= now) {
                        if let Err(dropped) = self.close_old(at) {
                            return End::Overflowed { dropped };
                        }
                    }
                }
            }
        }
    }

    /// Buffers an event from the streams of `epoch`, unless another
    /// stream's copy of it was delivered during a filter change. An old
    /// stream that a distinct event shows caught up is closed. While new
    /// streams are `opening`, what the current ones deliver may come again
    /// on them (published once the server registered them, before their
    /// acknowledgement arrived), so it is remembered too.
    fn deliver(&mut self, event: Event, epoch: u64, opening: bool) -> Result<(), u64> {
        let now = Instant::now();
        let until = (opening || !self.draining.is_empty()).then(|| now + self.options.overlap);
        // The streams opening now may carry a copy; any opened later not.
        let newest = self.epoch + u64::from(opening);
        let Some(original) = self.overlap.copy_of(&event, epoch, newest, now, until) else {
            return self.shared.push_event(event);
        };
        self.shared.add_duplicate();
        if !event.is_idempotent() {
            let caught_up = epoch.min(original);
            if let Some(at) = self.draining.iter().position(|old| old.epoch == caught_up) {
                self.close_old(at)?;
            }
        }
        Ok(())
    }

    /// Closes the old streams at `at`, delivering again what they may have
    /// had in flight of the signals dropped from newer ones for theirs.
    fn close_old(&mut self, at: usize) -> Result<(), u64> {
        let mut old = self.draining.swap_remove(at);
        old.group.close(CloseReason::Cancelled);
        let again = self
            .overlap
            .closed(old.epoch, Instant::now(), self.options.overlap);
        for event in again {
            self.shared.push_event(event)?;
        }
        Ok(())
    }

    fn close_draining(&mut self) {
        for mut old in self.draining.drain(..) {
            old.group.close(CloseReason::Cancelled);
        }
    }
}

/// The next item of any draining group, and which one gave it.
async fn next_of_any<S: SourceHandle>(draining: &mut [Draining<S>]) -> (usize, Next) {
    let (next, from, _) = select_all(
        draining
            .iter_mut()
            .map(|old| Box::pin(async { old.group.next().await.1 })),
    )
    .await;
    (from, next)
}

/// Sleeps until `at`; forever without one.
pub(super) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// `work`'s output, or `None` when the subscription is cancelled first.
async fn unless_cancelled<T>(shared: &Shared, work: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        () = shared.cancel.cancelled() => None,
        out = work => Some(out),
    }
}
