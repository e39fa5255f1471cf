//! [`ProcessMemory`]: the resident set size of the watched process and of caf itself, read
//! from `/proc` (Linux).

use super::probe::{Probe, ProbeError};
use serde_json::{json, Value};

/// `{"watched": {"pid", "rss_bytes"}, "caf": {"pid", "rss_bytes"}}`; a process that cannot
/// be read (gone, or not Linux) has `"error"` instead of `"rss_bytes"`. Memory moves all the
/// time, so this probe does not count as a change of the watched state by itself
/// ([`Probe::tracks_change`]).
#[derive(Debug, Clone)]
pub struct ProcessMemory {
    watched: Option<u32>,
}

impl ProcessMemory {
    /// The memory of process `watched` (if any) and of this process.
    pub fn new(watched: Option<u32>) -> Self {
        Self { watched }
    }
}

/// The resident set size, in bytes, of the process whose `/proc/…/status` is `status`.
fn rss_from_status(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut words = line["VmRSS:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => n.checked_mul(1024),
        Some(_) => None,
    }
}

/// The resident set size of process `pid` (`None`: this process), in bytes.
fn rss(pid: Option<u32>) -> Result<u64, ProbeError> {
    if !cfg!(target_os = "linux") {
        return Err(ProbeError::Unsupported("reading memory from /proc"));
    }
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let text = std::fs::read_to_string(&path).map_err(|source| ProbeError::Io {
        path: path.clone().into(),
        source,
    })?;
    // A zombie (exited, not yet reaped) has no VmRSS line.
    rss_from_status(&text).ok_or(ProbeError::Unexpected {
        what: path,
        message: "no VmRSS line (the process has exited)".into(),
    })
}

fn reading(pid: u32, r: Result<u64, ProbeError>) -> Value {
    match r {
        Ok(bytes) => json!({"pid": pid, "rss_bytes": bytes}),
        Err(e) => json!({"pid": pid, "error": e.to_string()}),
    }
}

impl Probe for ProcessMemory {
    fn name(&self) -> &str {
        "memory"
    }

    fn read(&mut self) -> Result<Value, ProbeError> {
        let caf = rss(None)?;
        let mut out = json!({"caf": reading(std::process::id(), Ok(caf))});
        if let Some(pid) = self.watched {
            out["watched"] = reading(pid, rss(Some(pid)));
        }
        Ok(out)
    }

    fn tracks_change(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vmrss() {
        let status = "Name:\tcaf\nVmPeak:\t  2000 kB\nVmRSS:\t    1536 kB\nThreads:\t1\n";
        assert_eq!(rss_from_status(status), Some(1536 * 1024));
        assert_eq!(rss_from_status("Name:\tzombie\nState:\tZ\n"), None);
        assert_eq!(rss_from_status("VmRSS:\t12 MB\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let v = ProcessMemory::new(Some(std::process::id())).read().unwrap();
        assert!(v["caf"]["rss_bytes"].as_u64().unwrap() > 0, "{v}");
        assert!(v["watched"]["rss_bytes"].as_u64().unwrap() > 0, "{v}");
        let gone = ProcessMemory::new(Some(u32::MAX - 1)).read().unwrap();
        assert!(gone["watched"]["error"].is_string(), "{gone}");
    }
}
