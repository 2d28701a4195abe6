//! A client shard: a process opening its share of the streams (listen
//! streams, or older revisions' sessions) from one loopback source
//! address, and holding them.
//!
//! Its lines to the parent: `acked` for each acknowledged stream, `failed
//! ERROR` for each that was not, `opened` once every attempt is done,
//! `lost` for each held stream that ended before a tools-list change
//! arrived, and `received` once every held stream has one (or ended). It
//! exits when its stdin closes, so it never outlives its parent.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::TcpSocket;
use tokio::sync::Semaphore;

use super::say;
use crate::{Server, read};

/// Connections being opened at once: enough to keep the server busy,
/// few enough to stay within its listen backlog.
const OPENING_AT_ONCE: usize = 64;

/// Opens `count` listen streams to `addr` from `from`, request ids from
/// `first_id` on, and holds them until stdin closes.
pub(crate) fn main(server: Server, addr: SocketAddr, from: IpAddr, first_id: usize, count: usize) {
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
        let opening = Arc::new(Semaphore::new(OPENING_AT_ONCE));
        // Attempts not yet done, and streams not yet done: a stream is done
        // when its change arrived, it ended, or it was never opened.
        let (attempts, streams) = (
            Arc::new(AtomicUsize::new(count)),
            Arc::new(AtomicUsize::new(count)),
        );
        for id in first_id..first_id + count {
            let (opening, attempts, streams) = (opening.clone(), attempts.clone(), streams.clone());
            tokio::spawn(async move {
                let permit = opening.acquire_owned().await;
                let opened = server.open(|| bound(from), addr, id).await;
                drop(permit);
                let held = match opened {
                    Ok(reader) => {
                        say("acked");
                        Some(reader)
                    }
                    Err(err) => {
                        say(&format!("failed {err}"));
                        None
                    }
                };
                if attempts.fetch_sub(1, Ordering::AcqRel) == 1 {
                    say("opened");
                }
                let Some(mut reader) = held else {
                    return done(&streams);
                };
                if !read(&mut reader, 1).await {
                    say("lost");
                }
                done(&streams);
                // Held, as a client that stays subscribed, until the
                // process ends.
                let _held = reader;
                std::future::pending::<()>().await
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

/// One more stream done; the last says so.
fn done(streams: &AtomicUsize) {
    if streams.fetch_sub(1, Ordering::AcqRel) == 1 {
        say("received");
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
    use mcp_subscriptions::client::{Item, Relisten, SubscribeOptions, Subscription};

    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let opening = Arc::new(Semaphore::new(OPENING_AT_ONCE));
        let (attempts, streams) = (
            Arc::new(AtomicUsize::new(count)),
            Arc::new(AtomicUsize::new(count)),
        );
        let url = format!("http://{addr}/mcp");
        let options = SubscribeOptions::default()
            .with_relisten(Relisten::default())
            .with_local_address(from);
        for _ in 0..count {
            let (opening, attempts, streams) = (opening.clone(), attempts.clone(), streams.clone());
            let (url, options) = (url.clone(), options.clone());
            tokio::spawn(async move {
                let permit = opening.acquire_owned().await;
                let filter = Filter::new().with_tools_list_changed();
                let opened = Subscription::http(url, &filter, options).await;
                drop(permit);
                match &opened {
                    Ok(_) => say("acked"),
                    Err(err) => say(&format!("failed {err}")),
                }
                if attempts.fetch_sub(1, Ordering::AcqRel) == 1 {
                    say("opened");
                }
                let Ok(mut subscription) = opened else {
                    return done(&streams);
                };
                let (mut changed, mut out) = (false, false);
                while let Some(item) = subscription.next().await {
                    match item {
                        Item::Event(_) if !changed => {
                            changed = true;
                            done(&streams);
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
                if !changed {
                    done(&streams);
                }
            });
        }
        std::future::pending::<()>().await
    });
}
