//! What Linux says about a process: its resident memory, how many files
//! it may open, its sockets and CPU, and their peaks while a herd comes
//! back.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often [`Peaks::sample`] reads `/proc`.
const SAMPLE: Duration = Duration::from_millis(100);

/// The Linux clock ticks a second of `/proc/<pid>/stat` (`USER_HZ`).
const TICKS_PER_SECOND: f64 = 100.0;

/// Resident memory of process `pid` (`VmRSS` in `/proc/<pid>/status`), in
/// bytes.
pub(crate) fn resident_bytes(pid: u32) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| io::Error::other(format!("no VmRSS in /proc/{pid}/status")))
}

/// This process's soft limit on open files, which the processes it spawns
/// inherit.
pub(crate) fn open_file_limit() -> io::Result<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits")?;
    limits
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))
        .and_then(|rest| rest.split_whitespace().next())
        .map(|soft| soft.parse().unwrap_or(u64::MAX))
        .ok_or_else(|| io::Error::other("no open-file limit in /proc/self/limits"))
}

/// Open sockets of process `pid`.
pub(crate) fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| {
        dir.filter_map(Result::ok)
            .filter(|entry| {
                std::fs::read_link(entry.path())
                    .is_ok_and(|link| link.to_string_lossy().starts_with("socket:"))
            })
            .count()
    })
}

/// Open files of process `pid`: its entries in `/proc/<pid>/fd`, counted
/// without reading each (cheap enough to sample tens of thousands).
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// CPU ticks (user and system) process `pid` has used.
fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command, which is in parentheses: utime and stime
    // are the 14th and 15th of the whole line.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    field(11).unwrap_or(0) + field(12).unwrap_or(0)
}

/// The busiest moments of a herd coming back, each in its busiest
/// [`SAMPLE`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Peaks {
    /// The servers' new files (their accepted connections) a second,
    /// together.
    pub(crate) accepts_per_s: f64,
    /// The busiest server's CPU, in cores.
    pub(crate) server_cpu: f64,
    /// The clients' processes' CPU, together, in cores.
    pub(crate) clients_cpu: f64,
}

impl Peaks {
    /// Samples `servers` (files and CPU) and `clients` (CPU) every
    /// [`SAMPLE`] until `stop`.
    pub(crate) fn sample(servers: &[u32], clients: &[u32], stop: &AtomicBool) -> Self {
        let read = || {
            let servers: Vec<(usize, u64)> = servers
                .iter()
                .map(|&pid| (open_files(pid), cpu_ticks(pid)))
                .collect();
            let clients: Vec<u64> = clients.iter().map(|&pid| cpu_ticks(pid)).collect();
            (servers, clients, Instant::now())
        };
        let mut last = read();
        let mut peaks = Self::default();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(SAMPLE);
            let now = read();
            let seconds = (now.2 - last.2).as_secs_f64();
            let cores =
                |now: u64, last: u64| now.saturating_sub(last) as f64 / TICKS_PER_SECOND / seconds;
            let servers = now.0.iter().zip(&last.0);
            let accepted: usize = servers.clone().map(|(n, l)| n.0.saturating_sub(l.0)).sum();
            peaks.accepts_per_s = peaks.accepts_per_s.max(accepted as f64 / seconds);
            for (now, last) in servers {
                peaks.server_cpu = peaks.server_cpu.max(cores(now.1, last.1));
            }
            let clients: f64 = now.1.iter().zip(&last.1).map(|(&n, &l)| cores(n, l)).sum();
            peaks.clients_cpu = peaks.clients_cpu.max(clients);
            last = now;
        }
        peaks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_resident_and_may_open_files() {
        assert!(resident_bytes(std::process::id()).unwrap() > 0);
        assert!(open_file_limit().unwrap() > 0);
    }
}
