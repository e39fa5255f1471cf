//! Checkpoint files a hybrid store wrote without flushing them (the `unflushed_files` table),
//! and what the store does with them after a power loss.
//!
//! A hybrid save makes the database commit its one flush: the row of the checkpoint and a row
//! here (this directory's store id, the boot it happened in, the writer) commit together, then
//! the file is renamed into place without being flushed (a journaled store's writer renames its
//! files first, then commits: the journal holds those saves until the commit). A flusher deletes
//! the rows of files the file system has since synced. A process crash loses nothing (the
//! kernel still holds the files); a power loss may leave files missing or torn, but only files
//! with a row here, and the database holds each of them whole. So on open, the rows of an
//! earlier boot name every file to check and, where it differs from its database copy, to write
//! again, byte for byte (a checkpoint loaded from the database encodes to exactly its file).
//!
//! Markers (`DIR/.caf/unflushed/BOOT`, flushed once per boot) let a store opened without its
//! database see that an earlier boot left files to check.

use crate::connection::AnyConnection;
use crate::statement::fixed::execute;
use crate::statement::{shape, Param, Stmt};
use caf_core::store::{write_atomic_in, write_new_in, Fs};
use caf_core::{Error, Result};
use diesel::sql_types::Text;
use diesel::{QueryResult, QueryableByName, RunQueryDsl};
use std::path::{Path, PathBuf};

/// The directory of boot markers under a store's `.caf/`.
const MARKERS: &str = "unflushed";

/// Who writes unflushed files: the directory, the boot, and one writer (a store instance).
#[derive(Debug)]
pub(crate) struct Writer {
    /// The directory's store id (`DIR/.caf/store-id`): a database may serve several directories.
    pub store_id: String,
    /// This boot of the machine.
    pub boot_id: String,
    /// A random id of this store instance, so that it forgets only rows of files it wrote.
    pub writer: i64,
}

/// The current boot's id (Linux: `/proc/sys/kernel/random/boot_id`). `None` where it is not
/// known: a hybrid store then flushes every file it writes.
pub fn boot_id() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
        .then(|| id.to_string())
}

/// Flushes the file system holding `dir` (every file written so far reaches the disk), through
/// the store's file system `fs`.
pub(crate) fn sync_file_system<F: Fs>(fs: &F, dir: &Path) -> Result<()> {
    fs.sync_fs(dir).map_err(|e| Error::io(dir, e))
}

/// The store id of the directory whose internals are in `meta_dir`, created (and flushed) the
/// first time.
pub(crate) fn store_id<F: Fs>(fs: &F, meta_dir: &Path) -> Result<String> {
    let path = meta_dir.join("store-id");
    let valid = |text: &str| {
        let id = text.trim();
        (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_string())
    };
    let existing = std::fs::read_to_string(&path);
    if let Some(id) = existing.as_deref().ok().and_then(valid) {
        return Ok(id);
    }
    fs.create_dir_all(meta_dir)
        .map_err(|e| Error::io(meta_dir, e))?;
    let id = format!("{:016x}{:016x}\n", fastrand::u64(..), fastrand::u64(..));
    if existing.is_ok() {
        // Not an id (damaged by hand): replaced.
        write_atomic_in(fs, &path, None, id.as_bytes(), Default::default())?;
    } else {
        // Linked into place, never renamed over: processes opening a new store together must
        // all end up with one id (a replaced id would leave its writer's rows unchecked).
        write_new_in(fs, &path, id.as_bytes(), Default::default())?;
    }
    // `.caf/` itself must stay too: without its store id, the records of unflushed files
    // would name no directory after a power loss.
    if let Some(root) = meta_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs.sync_dir(root).map_err(|e| Error::io(root, e))?;
    }
    // Another process may have made it first: the file decides.
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    valid(&text).ok_or_else(|| {
        Error::io(
            &path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, "not a store id"),
        )
    })
}

fn markers(meta_dir: &Path) -> PathBuf {
    meta_dir.join(MARKERS)
}

/// Marks that this boot writes unflushed files in the store (idempotent; flushed).
pub(crate) fn mark_boot<F: Fs>(fs: &F, meta_dir: &Path, boot_id: &str) -> Result<()> {
    let dir = markers(meta_dir);
    let path = dir.join(boot_id);
    if path.is_file() {
        return Ok(());
    }
    fs.create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    match fs.create_new(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(&path, e)),
    }
    fs.sync_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    fs.sync_dir(meta_dir).map_err(|e| Error::io(meta_dir, e))
}

/// The boots other than `current` that left a marker: their unflushed files must be checked.
pub fn earlier_boots(meta_dir: &Path, current: Option<&str>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(markers(meta_dir)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|name| Some(name.as_str()) != current)
        .collect()
}

/// Removes the markers of earlier boots once their files are checked.
pub(crate) fn clear_marks<F: Fs>(fs: &F, meta_dir: &Path, boots: &[String]) -> Result<()> {
    let dir = markers(meta_dir);
    for boot in boots {
        let path = dir.join(boot);
        match fs.remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    Ok(())
}

/// Records, in the transaction of a save (or a delete), that `checkpoint_id`'s file is about
/// to be written (or removed) unflushed, as the writer's `n`-th.
pub(crate) fn record(
    conn: &mut AnyConnection,
    w: &Writer,
    n: i64,
    checkpoint_id: &str,
) -> QueryResult<usize> {
    execute::<RecordUnflushed>(
        conn,
        &[
            Param::Int(w.writer),
            Param::Int(n),
            Param::Text(w.store_id.as_str()),
            Param::Text(w.boot_id.as_str()),
            Param::Text(checkpoint_id),
        ],
    )
}

shape!(
    /// Records a file about to be written unflushed (`writer`, `n`, `store_id`, `boot_id`,
    /// `checkpoint_id`): part of every hybrid save, so kept prepared.
    RecordUnflushed,
    "INSERT INTO unflushed_files (writer, n, store_id, boot_id, checkpoint_id) \
     VALUES (?, ?, ?, ?, ?)"
);

/// Forgets the rows of `writer` up to its `upto`-th: their files were written before the file
/// system was synced.
pub(crate) fn forget_flushed(
    conn: &mut AnyConnection,
    writer: i64,
    upto: i64,
) -> QueryResult<usize> {
    Stmt::new("DELETE FROM unflushed_files WHERE writer = ? AND n <= ?")
        .int(writer)
        .int(upto)
        .execute(conn)
}

/// One row: a file that may not have reached the disk.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct Unflushed {
    #[diesel(sql_type = Text)]
    pub boot_id: String,
    #[diesel(sql_type = Text)]
    pub checkpoint_id: String,
}

/// Every row of the store (a scan: the table stays small).
pub(crate) fn of_store(conn: &mut AnyConnection, store_id: &str) -> QueryResult<Vec<Unflushed>> {
    Stmt::new("SELECT boot_id, checkpoint_id FROM unflushed_files WHERE store_id = ?")
        .text(store_id)
        .load(conn)
}

/// Forgets the store's rows of boots other than `current` (checked and synced; no row of an
/// earlier boot can be added any more).
pub(crate) fn forget_earlier_boots(
    conn: &mut AnyConnection,
    store_id: &str,
    current: &str,
) -> QueryResult<usize> {
    Stmt::new("DELETE FROM unflushed_files WHERE store_id = ? AND boot_id <> ?")
        .text(store_id)
        .text(current)
        .execute(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use caf_core::store::{OpKind, RealFs, TestFs};

    /// Two writers open a new store: the first is held just before putting its id in place,
    /// the second makes and places its own meanwhile. The first must not replace it.
    #[test]
    fn writers_opening_a_new_store_together_agree_on_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join(".caf");
        let fs = TestFs::new();
        let held = fs.pause(OpKind::HardLink, "store-id");
        let first = std::thread::scope(|s| {
            let first = s.spawn(|| store_id(&fs, &meta).unwrap());
            held.wait_paused();
            let second = store_id(&RealFs, &meta).unwrap();
            held.resume();
            let first = first.join().unwrap();
            assert_eq!(first, second, "both writers use one id");
            first
        });
        let on_disk = std::fs::read_to_string(meta.join("store-id")).unwrap();
        assert_eq!(first, on_disk.trim(), "the id on disk");
        let names: Vec<_> = std::fs::read_dir(&meta).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    }

    #[test]
    fn a_damaged_store_id_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join(".caf");
        std::fs::create_dir_all(&meta).unwrap();
        std::fs::write(meta.join("store-id"), "garbage\n").unwrap();
        let id = store_id(&RealFs, &meta).unwrap();
        assert_eq!(id.len(), 32);
        assert_eq!(store_id(&RealFs, &meta).unwrap(), id, "kept once made");
    }
}
