//! Faults around caf (`cargo test -p caf-tests --test faults`), tested the way SQLite and redb
//! test themselves, with what caf guarantees under each (docs/reliability.md):
//!
//! - [`disk_full`]: a full disk (a small tmpfs) under the files, under `.caf/` alone, under the
//!   SQLite database, with files only, files + SQLite and SQLite only; and `caf save` on it.
//! - [`sqlite_faults`]: a hybrid store's SQLite database deleted, truncated, overwritten with
//!   garbage, its `-wal` deleted, or made read-only.
//! - [`postgres_faults`]: four writers saving while the PostgreSQL server restarts and their
//!   backends are terminated.
//! - [`soak`]: eight writer processes saving into one store while a killer SIGKILLs them (files
//!   + SQLite, SQLite only), and eight writers on PostgreSQL.
//! - [`fuzz_corpora`]: the committed corpora of the `cargo fuzz` targets (`fuzz/`), run as
//!   ordinary tests.
//!
//! Tests that need root (mounting a tmpfs) or PostgreSQL (`CAF_TEST_POSTGRES_URL`) print a
//! SKIPPED line and return without them.

#![allow(clippy::unwrap_used)]

#[path = "../sql_common/mod.rs"]
mod sql_common;

mod disk_full;
mod fuzz_corpora;
mod postgres_faults;
mod soak;
mod sqlite_faults;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Prints a loud SKIPPED line on the stderr handle itself (which the test harness does not
/// capture, so that it shows in a plain `cargo test`).
pub(crate) fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// The ids a writer logged, one per line (whole lines only: a line still being written is not
/// one yet).
pub(crate) fn logged(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole.lines().map(str::to_string).collect()
}

/// Whether this process runs as root (its effective uid is 0).
pub(crate) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
            .unwrap_or(false)
    })
}

/// A tmpfs mounted on a directory, unmounted when dropped.
pub(crate) struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`2m`, `512k`, …) on the directory `at` (created if needed), or
    /// prints SKIPPED for `test` and returns `None` when this process is not root. As root, a
    /// mount that fails fails the test.
    pub(crate) fn mount(test: &str, at: &Path, size: &str) -> Option<Self> {
        if !cfg!(target_os = "linux") || !is_root() {
            skip(test, "mounting a tmpfs needs root on Linux");
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(at)
            .output()
            .unwrap_or_else(|e| panic!("running mount: {e}"));
        assert!(
            out.status.success(),
            "mount -t tmpfs on {} failed: {}",
            at.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Self {
            at: at.to_path_buf(),
        })
    }

    /// The mount point.
    pub(crate) fn path(&self) -> &Path {
        &self.at
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a store still open elsewhere in a failing test must not keep it mounted.
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}
