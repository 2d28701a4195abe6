//! The deadlines and the bound a server's connections keep, and the
//! default bound from the open-file limit.

use std::time::Duration;

/// The deadlines and the bound every connection of a server keeps.
#[derive(Debug, Clone, Copy)]
pub(in crate::transport::http) struct Limits {
    pub(in crate::transport::http) request_deadline: Duration,
    pub(in crate::transport::http) idle_timeout: Duration,
    pub(in crate::transport::http) max_waiting: usize,
    /// How long written data may stay unacknowledged (zero: the system's
    /// default).
    pub(in crate::transport::http) unacknowledged_timeout: Duration,
}

/// Where the open-file limit cannot be read (no `/proc`): a bound that a
/// server with the usual limits raised for production stays under.
const FALLBACK: usize = 10_000;

/// Half the process's soft open-file limit, so that connections that have
/// not finished a request never take more than half the files held
/// streams need; [`FALLBACK`] where the limit cannot be read.
///
/// Read from `/proc/self/limits`, since the crate forbids `unsafe` (and so
/// `getrlimit`).
pub(in crate::transport::http) fn default_max_waiting() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| soft_open_files(&limits))
        .map_or(FALLBACK, |soft| (soft / 2).max(1))
}

/// The soft limit on the `Max open files` line, when it is a number.
fn soft_open_files(limits: &str) -> Option<usize> {
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_read_from_its_line() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             127966               127966               processes \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(soft_open_files(limits), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(soft_open_files(unlimited), None);
        assert_eq!(soft_open_files("nothing here"), None);
    }

    #[test]
    fn the_default_is_half_the_limit_here() {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let soft = soft_open_files(&limits).unwrap();
        assert_eq!(default_max_waiting(), soft / 2);
    }
}
