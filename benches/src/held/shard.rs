//! A client shard: a process opening its share of the streams (listen
//! streams, or older revisions' sessions) from one loopback source
//! address, and holding them.
//!
//! Its lines to the parent: `acked` for each acknowledged stream, `failed
//! ERROR` for each that was not, `opened` once every attempt is done,
//! `lost` for each held stream that ended before a tools-list change
//! arrived, and `received` once every held stream has one (or ended). It
//! exits when its stdin closes, so it never outlives its parent.

use std::future::Future;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::TcpSocket;
use tokio::sync::Semaphore;

use super::say;
use crate::{Server, listen_over, read};

/// Connections being opened at once: enough to keep the server busy,
/// few enough to stay within its listen backlog.
const OPENING_AT_ONCE: usize = 64;

/// Opens `count` listen streams to `addr` from `from`, request ids from
/// `first_id` on, and holds them until stdin closes.
pub(crate) fn main(server: Server, addr: SocketAddr, from: IpAddr, first_id: usize, count: usize) {
    shard(
        count,
        move |n| server.open(move || bound(from), addr, first_id + n),
        hold,
    );
}

/// Opens `count` listen streams over the Unix domain socket at `path`,
/// request ids from `first_id` on, and holds them until stdin closes.
pub(crate) fn main_unix(path: String, first_id: usize, count: usize) {
    shard(
        count,
        move |n| {
            let path = path.clone();
            async move {
                let socket = tokio::net::UnixStream::connect(path).await?;
                listen_over(socket, "localhost", first_id + n).await
            }
        },
        hold,
    );
}

/// Holds one stream until the process ends, saying whether its change
/// arrived ([`Done`]).
async fn hold<S: tokio::io::AsyncRead + Unpin>(mut reader: tokio::io::BufReader<S>, done: Done) {
    if !read(&mut reader, 1).await {
        say("lost");
    }
    done.done();
    // Held, as a client that stays subscribed, until the process ends.
    let _held = reader;
    std::future::pending::<()>().await
}

/// Opens `count` streams through `open` (the `n`th, [`OPENING_AT_ONCE`]
/// at a time), saying `acked` or `failed` for each and `opened` once all
/// were tried, then holds each through `hold`, which says [`Done`] once
/// for it (`received` once every stream did), until stdin closes.
fn shard<S, E, Open, Opening, Hold, Holding>(count: usize, open: Open, hold: Hold)
where
    S: Send + 'static,
    E: std::fmt::Display + Send + 'static,
    Open: Fn(usize) -> Opening + Send + Sync + 'static,
    Opening: Future<Output = Result<S, E>> + Send + 'static,
    Hold: Fn(S, Done) -> Holding + Send + Sync + 'static,
    Holding: Future<Output = ()> + Send + 'static,
{
    // Held until the parent is gone; then the process ends, streams and all.
    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (open, hold) = (Arc::new(open), Arc::new(hold));
        let opening = Arc::new(Semaphore::new(OPENING_AT_ONCE));
        // Attempts not yet done, and streams not yet done: a stream is done
        // when its change arrived, it ended, or it was never opened.
        let (attempts, streams) = (
            Arc::new(AtomicUsize::new(count)),
            Arc::new(AtomicUsize::new(count)),
        );
        for n in 0..count {
            let (open, hold, opening) = (open.clone(), hold.clone(), opening.clone());
            let (attempts, done) = (attempts.clone(), Done(streams.clone()));
            tokio::spawn(async move {
                let permit = opening.acquire_owned().await;
                let opened = open(n).await;
                drop(permit);
                match &opened {
                    Ok(_) => say("acked"),
                    Err(err) => say(&format!("failed {err}")),
                }
                if attempts.fetch_sub(1, Ordering::AcqRel) == 1 {
                    say("opened");
                }
                match opened {
                    Ok(stream) => hold(stream, done).await,
                    Err(_) => done.done(),
                }
            });
        }
        std::future::pending::<()>().await
    });
}

/// A socket bound to `from`.
fn bound(from: IpAddr) -> std::io::Result<TcpSocket> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    Ok(socket)
}

/// A stream's share of the shard's streams not yet done: the last one
/// done says `received`.
struct Done(Arc<AtomicUsize>);

impl Done {
    fn done(self) {
        if self.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            say("received");
        }
    }
}

/// Opens `count` tools-list streams to `addr` from `from` with the crate's
/// client, re-listening as `Relisten::default()` says, and holds them. Its
/// lines: `acked`, `failed`, `opened` and `received` as [`main`]'s, then,
/// for the herd after a replica is killed, `relistening` once per stream
/// that lost its stream, `resynced` when it is acknowledged again, and
/// `lost` for one that ended for good.
pub(crate) fn relistening(addr: SocketAddr, from: IpAddr, count: usize) {
    use mcp_subscriptions::Filter;
    use mcp_subscriptions_client::{Item, Relisten, SubscribeOptions, Subscription};

    let url = format!("http://{addr}/mcp");
    let options = SubscribeOptions::default()
        .with_relisten(Relisten::default())
        .with_local_address(from);
    shard(
        count,
        move |_| {
            let filter = Filter::new().with_tools_list_changed();
            let (url, options) = (url.clone(), options.clone());
            async move { Subscription::http(url, &filter, options).await }
        },
        |mut subscription, done: Done| async move {
            let (mut done, mut out) = (Some(done), false);
            while let Some(item) = subscription.next().await {
                match item {
                    Item::Event(_) => {
                        if let Some(done) = done.take() {
                            done.done();
                        }
                    }
                    Item::Relistening(_) if !out => {
                        out = true;
                        say("relistening");
                    }
                    Item::Resynced(_) => {
                        out = false;
                        say("resynced");
                    }
                    Item::End(_) => say("lost"),
                    _ => {}
                }
            }
            if let Some(done) = done {
                done.done();
            }
        },
    );
}
