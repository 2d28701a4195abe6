//! The example server out of open files: it turns each waiting connection
//! away at once (its client learns now, and can try another replica)
//! instead of leaving it queued until the client gives up, and it serves
//! again as soon as files are free.

use std::time::Duration;

use crate::support::example::{HttpServer, http_request, listen_request, send_raw};
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

const OPEN_FILES: u32 = 64;

/// What became of one listen request.
enum Outcome {
    Acknowledged(TcpStream),
    /// Closed (or reset) before any answer.
    TurnedAway,
    /// No answer within the wait.
    Waiting,
}

async fn listen(addr: &str, id: usize) -> Outcome {
    let body = listen_request(json!(id), json!({"toolsListChanged": true})).to_string();
    let mut socket = send_raw(addr, &http_request("POST", "/mcp", addr, "", &body)).await;
    let mut seen = Vec::new();
    let mut chunk = [0; 1024];
    let answer = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => seen.extend_from_slice(&chunk[..n]),
            }
            if String::from_utf8_lossy(&seen).contains("subscriptions/acknowledged") {
                return true;
            }
        }
    })
    .await;
    match answer {
        Ok(true) => Outcome::Acknowledged(socket),
        Ok(false) => Outcome::TurnedAway,
        Err(_) => Outcome::Waiting,
    }
}

#[tokio::test]
async fn out_of_open_files_the_server_turns_connections_away_at_once_and_recovers() {
    let server = HttpServer::start_with_open_files(OPEN_FILES, &[]).await;
    let addr = server.addr();
    let mut held = Vec::new();
    loop {
        match listen(&addr, held.len()).await {
            Outcome::Acknowledged(socket) => held.push(socket),
            Outcome::TurnedAway => break,
            Outcome::Waiting => panic!("a connection waited in the queue, not turned away"),
        }
        assert!(held.len() < OPEN_FILES as usize, "more streams than files");
    }
    assert!(
        held.len() > 10,
        "only {} streams before the limit",
        held.len()
    );
    // Each further try is turned away as quickly.
    for id in 0..3 {
        assert!(matches!(
            listen(&addr, 1_000 + id).await,
            Outcome::TurnedAway
        ));
    }

    held.truncate(held.len() - 4);
    let served = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Outcome::Acknowledged(socket) = listen(&addr, 2_000).await {
                return socket;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(served.is_ok(), "served again once files were free");
}
