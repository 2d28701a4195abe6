//! A file kept open for the moment the process runs out of them.
//!
//! Out of open files, `accept` fails and the connection stays in the
//! listen queue: its client, its request sent, waits for an answer until
//! its own timeout (ten seconds for this crate's client), then tries
//! again, and on a replica sharing its port with others the kernel may
//! well send it back to this full one. That is how a herd of clients
//! coming back from a killed replica ends up waiting minutes for the last
//! of them. So the server keeps this one file open: out of
//! files, it closes it, accepts the waiting connection, closes that at
//! once, and opens the spare again. The client learns now that this
//! replica is full, and its next try (after its backoff, on a new
//! connection) is spread again among the replicas.

use std::fs::File;
use std::io;

use super::listener::Listener;

pub(in crate::transport::http) struct Spare(Option<File>);

impl Spare {
    pub(in crate::transport::http) fn open() -> Self {
        Self(open())
    }

    /// After `accept` failed with `err`: when the process (or the system)
    /// is out of open files, lets the spare go, turns away one waiting
    /// connection with it, and takes the spare back. Returns whether a
    /// connection was turned away.
    pub(in crate::transport::http) fn turn_away(
        &mut self,
        listener: &Listener,
        err: &io::Error,
    ) -> bool {
        if !out_of_files(err) {
            return false;
        }
        if self.0.take().is_none() {
            // Spent (it could not be opened again): try again next time.
            self.0 = open();
            return false;
        }
        let turned_away = accept_waiting(listener);
        self.0 = open();
        turned_away
    }
}

/// Accepts a connection that is already waiting, and closes it.
fn accept_waiting(listener: &Listener) -> bool {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    matches!(listener.poll_accept(&mut cx), std::task::Poll::Ready(Ok(_)))
}

#[cfg(unix)]
fn out_of_files(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

#[cfg(not(unix))]
fn out_of_files(_: &io::Error) -> bool {
    false
}

#[cfg(unix)]
fn open() -> Option<File> {
    File::open("/dev/null").ok()
}

#[cfg(not(unix))]
fn open() -> Option<File> {
    None
}
