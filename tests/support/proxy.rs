//! A TCP proxy between a client and a broker, for fault schedules a test
//! controls: it forwards, holds (a partition: nothing crosses either way,
//! open connections stay open and new ones wait), delays every chunk it
//! forwards (a distant broker), or cuts every open connection.
//!
//! It runs on a runtime of its own, so a test's runtime being busy or
//! blocked never stalls it.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    holding: bool,
    delay: Duration,
    /// Bumped by `cut`: connections from before it close.
    epoch: u64,
}

struct State {
    mode: watch::Sender<Mode>,
    accepted: AtomicUsize,
}

/// A proxy on `127.0.0.1:port` in front of `127.0.0.1:upstream`.
pub struct Proxy {
    pub port: u16,
    state: Arc<State>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // Bound here, made a tokio listener on the proxy's runtime: a test's
        // own runtime may not block on another.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (mode, _) = watch::channel(Mode {
            holding: false,
            delay: Duration::ZERO,
            epoch: 0,
        });
        let state = Arc::new(State {
            mode,
            accepted: AtomicUsize::new(0),
        });
        let upstream = SocketAddr::from(([127, 0, 0, 1], upstream));
        let accepting = Arc::clone(&state);
        runtime.spawn(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            while let Ok((client, _)) = listener.accept().await {
                accepting.accepted.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(connection(client, upstream, accepting.mode.subscribe()));
            }
        });
        Self {
            port,
            state,
            runtime: Some(runtime),
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.state.accepted.load(Ordering::Relaxed)
    }

    /// A partition: nothing crosses until `heal`.
    pub fn hold(&self) {
        self.state.mode.send_modify(|mode| mode.holding = true);
    }

    pub fn heal(&self) {
        self.state.mode.send_modify(|mode| mode.holding = false);
    }

    /// Each chunk waits `delay` before it is forwarded, and each new
    /// connection before it is made upstream.
    pub fn delay(&self, delay: Duration) {
        self.state.mode.send_modify(|mode| mode.delay = delay);
    }

    /// Closes every open connection, as a broker's crash would.
    pub fn cut(&self) {
        self.state.mode.send_modify(|mode| mode.epoch += 1);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Waits until the proxy forwards; the delay to apply, or `None` once the
/// connection from `epoch` is cut.
async fn forwarding(mode: &mut watch::Receiver<Mode>, epoch: u64) -> Option<Duration> {
    let now = *mode
        .wait_for(|m| !m.holding || m.epoch != epoch)
        .await
        .ok()?;
    (now.epoch == epoch).then_some(now.delay)
}

async fn connection(mut client: TcpStream, upstream: SocketAddr, mut mode: watch::Receiver<Mode>) {
    let epoch = mode.borrow().epoch;
    let Some(delay) = forwarding(&mut mode, epoch).await else {
        return;
    };
    tokio::time::sleep(delay).await;
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.split();
    let (mut server_read, mut server_write) = server.split();
    let mut cut = mode.clone();
    let cut = async move {
        let _ = cut.wait_for(|m| m.epoch != epoch).await;
    };
    tokio::select! {
        () = pump(&mut client_read, &mut server_write, mode.clone(), epoch) => {}
        () = pump(&mut server_read, &mut client_write, mode, epoch) => {}
        () = cut => {}
    }
}

/// Copies one direction, chunk by chunk, each once the proxy forwards.
async fn pump(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    mut mode: watch::Receiver<Mode>,
    epoch: u64,
) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        if forwarding(&mut mode, epoch).await.is_none() {
            return;
        }
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        // Read before a hold began: it waits, as the network would keep it.
        let Some(delay) = forwarding(&mut mode, epoch).await else {
            return;
        };
        tokio::time::sleep(delay).await;
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}
