//! What Linux says about a process: its resident memory, and how many
//! files it may open.

use std::io;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_resident_and_may_open_files() {
        assert!(resident_bytes(std::process::id()).unwrap() > 0);
        assert!(open_file_limit().unwrap() > 0);
    }
}
