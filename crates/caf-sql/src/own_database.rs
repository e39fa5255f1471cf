//! A directory's own database, `DIR/.caf/caf.db` (SQLite): whether the directory has one, and
//! whether it is damaged.
//!
//! Opening the own database records that the directory has one (an empty marker file,
//! `DIR/.caf/has-db`), so that a database deleted later is told from a directory that never had
//! one: `caf verify` reports it, and commands that need it say how to rebuild it, rather than
//! the store quietly carrying on without it.
//!
//! A database whose file SQLite cannot read ("database disk image is malformed", "file is not a
//! database": truncated, overwritten) is damaged. The files hold every checkpoint, so a damaged
//! or missing database is rebuilt from them (`caf reindex`, `caf verify --repair`); a damaged one
//! is moved to the quarantine first, never deleted.

use crate::SqlError;
use std::path::Path;

/// The marker, in `DIR/.caf/`, of a directory that has its own database.
pub const MARKER: &str = "has-db";

/// Whether the directory whose internals are in `meta_dir` has had its own database.
pub fn expected(meta_dir: &Path) -> bool {
    std::fs::symlink_metadata(meta_dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

/// Records that the directory has its own database (best effort: a read-only directory keeps
/// no marker, and then a deleted database goes unnoticed, as before).
pub(crate) fn mark(meta_dir: &Path) {
    let path = meta_dir.join(MARKER);
    if std::fs::symlink_metadata(&path).is_ok() {
        return;
    }
    // `create_new` does not follow a link planted meanwhile.
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path);
}

/// Whether `e` says the SQLite database file is damaged (not a database, or malformed), as
/// opposed to busy, locked, read-only or missing.
pub fn is_damage(e: &SqlError) -> bool {
    let text = e.to_string();
    text.contains("database disk image is malformed") || text.contains("file is not a database")
}
