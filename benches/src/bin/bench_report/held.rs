//! Targets 4 and 5, idle listen streams held against one server process
//! (the harness's `HeldStreams`): the server's resident memory per stream
//! at 10,000 streams, and 19,000 streams acknowledged and reached by one
//! tools-list change within a second; the crate's endpoint and rmcp's
//! pattern in the same run.

use std::time::Duration;

use harness::{Held, HeldStreams, Server};
use indicatif::ProgressBar;

use crate::rows::Row;
use crate::settings::Settings;

/// The most resident memory a held idle stream may cost the server
/// (issue 25; issue 14's was 12 KiB).
const BYTES_PER_STREAM: f64 = 8.0 * 1024.0;

/// The longest one change may take to reach the last held stream.
const FANOUT: Duration = Duration::from_secs(1);

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Result<Vec<Row>, String> {
    let (memory_streams, held_streams) = if settings.quick {
        (1_000, 2_000)
    } else {
        (10_000, 19_000)
    };
    let run = |server, streams| {
        HeldStreams::new(server, streams)
            .run(&ProgressBar::hidden())
            .map_err(|err| format!("held streams ({server:?}, {streams}): {err}"))
    };
    let (ours, theirs) = (
        run(Server::Endpoint, memory_streams)?,
        run(Server::RmcpPattern, memory_streams)?,
    );
    let mut memory = Row::new(
        "memory_per_held_http_stream",
        memory_streams,
        ours.resident_per_stream(),
        "rmcp pattern, same run",
        theirs.resident_per_stream(),
        theirs.resident_per_stream() / ours.resident_per_stream(),
        1.0,
    );
    memory.target = format!("<= {BYTES_PER_STREAM} B of server RSS per stream");
    memory.met = Some(ours.all_reached() && ours.resident_per_stream() <= BYTES_PER_STREAM);

    let (ours, theirs) = (
        run(Server::Endpoint, held_streams)?,
        run(Server::RmcpPattern, held_streams)?,
    );
    let seconds = |held: &Held| held.fanout.map_or(f64::INFINITY, |t| t.as_secs_f64());
    let mut held = Row::new(
        "http_held_streams_fanout_s",
        held_streams,
        seconds(&ours),
        "rmcp pattern, same run",
        seconds(&theirs),
        seconds(&theirs) / seconds(&ours),
        1.0,
    );
    held.target = format!(
        "all acknowledged and reached, fan-out < {} s (acknowledged: ours {}, rmcp {})",
        FANOUT.as_secs(),
        ours.acknowledged,
        theirs.acknowledged
    );
    held.met = Some(ours.all_reached() && seconds(&ours) < FANOUT.as_secs_f64());
    Ok(vec![memory, held])
}
