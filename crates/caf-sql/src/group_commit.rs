//! Group commit for SQLite: durable commits that share their flush with concurrent writers.
//!
//! With `synchronous = FULL`, SQLite flushes its write-ahead log inside the commit, while it
//! holds the database's one write lock: N writers pay N flushes one after another. Under
//! [`crate::Durability::Default`] a connection commits with `synchronous = NORMAL` instead (the
//! frames are written to the log, not flushed) and then, with the write lock released,
//! `fdatasync`s the log itself before the save returns. A commit is still on disk when it
//! returns — its frames were written before that flush — but writers that commit while another
//! one flushes are covered by the flush they join or by the next one, and the next writer
//! writes while this one waits for the disk. SQLite's own checkpoints still flush the log
//! before they copy it into the database (that is what `NORMAL` guarantees), so frames moved
//! out of the log were flushed first.
//!
//! Writers of one database also take turns on a blocking file lock (`DB-writer.lock` beside
//! the database) around their write transaction: a waiting writer wakes when the lock is
//! released, where SQLite's busy handler would sleep for a millisecond or more. SQLite's own
//! lock still guards the database; the file lock only orders caf's writers. Where the lock file
//! cannot be created (a read-only directory), writers fall back to the busy handler alone.

use crate::error::{Result, SqlError};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The log flush and the writer lock of one SQLite database, for one store.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    wal: PathBuf,
    /// The log, once it exists (SQLite creates it at the first write).
    log: Mutex<Option<Arc<File>>>,
    lock_path: PathBuf,
    /// The lock file; `None` inside when it could not be created.
    lock: OnceLock<Option<File>>,
}

/// Holds the writer lock until dropped.
pub(crate) struct WriterTurn<'a>(Option<&'a File>);

impl Drop for WriterTurn<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.0 {
            let _ = f.unlock();
        }
    }
}

impl GroupCommit {
    /// For the SQLite database at `db`.
    pub(crate) fn new(db: &Path) -> Self {
        let with_suffix = |suffix: &str| {
            let mut s = db.as_os_str().to_os_string();
            s.push(suffix);
            PathBuf::from(s)
        };
        Self {
            wal: with_suffix("-wal"),
            log: Mutex::new(None),
            lock_path: with_suffix("-writer.lock"),
            lock: OnceLock::new(),
        }
    }

    /// Waits for this process's turn to write (see the module's doc).
    pub(crate) fn turn(&self) -> WriterTurn<'_> {
        let file = self
            .lock
            .get_or_init(|| {
                let mut options = std::fs::OpenOptions::new();
                options.read(true).write(true).create(true).truncate(false);
                // Never through a symbolic link planted in its place.
                #[cfg(target_os = "linux")]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
                }
                options.open(&self.lock_path).ok()
            })
            .as_ref();
        // A lock that cannot be taken (an unusual file system) orders nothing: SQLite's own
        // lock and busy handler still do.
        WriterTurn(file.filter(|f| f.lock().is_ok()))
    }

    /// Flushes the log: every commit made so far by any connection is on disk when it returns.
    pub(crate) fn flush(&self) -> Result<()> {
        let log = self.log_file()?;
        log.sync_data()
            .map_err(|e| SqlError::from(caf_core::Error::io(&self.wal, e)))
    }

    /// The open log, opened again if the file at its path is no longer the one held (it was
    /// removed and created anew).
    fn log_file(&self) -> Result<Arc<File>> {
        let io = |e| SqlError::from(caf_core::Error::io(&self.wal, e));
        let mut held = self.log.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = held.as_ref() {
            match same_file(f, &self.wal) {
                Ok(true) => return Ok(Arc::clone(f)),
                Ok(false) => {}
                // Removed under SQLite, which goes on writing the file it has open: so is
                // the one held.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Arc::clone(f)),
                Err(e) => return Err(io(e)),
            }
        }
        let f = Arc::new(File::open(&self.wal).map_err(io)?);
        *held = Some(Arc::clone(&f));
        Ok(f)
    }
}

/// Whether `path` names the file `f` has open.
#[cfg(unix)]
fn same_file(f: &File, path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (f.metadata()?, std::fs::metadata(path)?);
    Ok(a.ino() == b.ino() && a.dev() == b.dev())
}

#[cfg(not(unix))]
fn same_file(_: &File, _: &Path) -> std::io::Result<bool> {
    Ok(false)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{Durability, SqlOptions, SqlStore};
    use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};

    #[test]
    fn the_log_is_flushed_through_the_file_at_its_path_and_a_removed_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let group = GroupCommit::new(&db);
        // No log yet: the error names it.
        let e = group.flush().unwrap_err().to_string();
        assert!(e.contains("x.db-wal"), "{e}");
        std::fs::write(dir.path().join("x.db-wal"), b"one").unwrap();
        group.flush().unwrap();
        let first = group.log_file().unwrap();
        // Removed (SQLite goes on writing the file it holds): the held one is flushed.
        std::fs::remove_file(dir.path().join("x.db-wal")).unwrap();
        group.flush().unwrap();
        assert!(Arc::ptr_eq(&first, &group.log_file().unwrap()));
        // A new file at the path: that one is flushed from now on.
        std::fs::write(dir.path().join("x.db-wal"), b"two").unwrap();
        group.flush().unwrap();
        let second = group.log_file().unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(same_file(&second, &dir.path().join("x.db-wal")).unwrap());
    }

    fn save_one(store: SqlStore) {
        let m = CheckpointManager::new(store);
        let mut state = RuntimeState::new("agent");
        state.set_variable("k", serde_json::json!(1));
        m.checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::Manual))
            .unwrap();
    }

    #[test]
    fn only_the_default_durability_commits_in_groups() {
        for (durability, grouped) in [
            (Durability::Default, true),
            (Durability::Full, false),
            (Durability::Relaxed, false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("caf.db");
            let options = SqlOptions {
                durability,
                ..SqlOptions::default()
            };
            let store = SqlStore::open_with(&db.display().to_string(), options).unwrap();
            assert_eq!(store.group.is_some(), grouped, "{durability:?}");
            save_one(store);
            let lock = dir.path().join("caf.db-writer.lock");
            assert_eq!(lock.exists(), grouped, "{durability:?}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_symbolic_link_in_place_of_the_lock_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("caf.db-writer.lock")).unwrap();
        let group = GroupCommit::new(&dir.path().join("caf.db"));
        assert!(group.turn().0.is_none());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn a_writer_waits_for_the_turn_another_store_holds() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("caf.db");
        let (a, b) = (GroupCommit::new(&db), GroupCommit::new(&db));
        let turn = a.turn();
        assert!(turn.0.is_some(), "the lock file could be made and locked");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _turn = b.turn();
                tx.send(()).unwrap();
            });
            // Still waiting while `a` holds its turn.
            assert!(rx
                .recv_timeout(std::time::Duration::from_millis(200))
                .is_err());
            drop(turn);
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        });
    }

    /// Records of pruned checkpoints are written as saves are: in the writer's turn, then
    /// flushed (with `synchronous = NORMAL` a write outside group commit would not be on disk
    /// when it returns).
    #[test]
    fn pruning_records_wait_for_their_turn_and_are_flushed() {
        use caf_core::prune::Tombstone;
        use caf_core::{CheckpointId, CheckpointStore, ExecutionId, Timestamp};
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("caf.db");
        let store = SqlStore::open(&db.display().to_string()).unwrap();
        let stone = Tombstone {
            id: CheckpointId::new("ckpt_gone").unwrap(),
            parent_id: None,
            execution_id: ExecutionId::new("exec_a").unwrap(),
            timestamp: Timestamp::now(),
            pruned_at: Timestamp::now(),
        };
        let other = GroupCommit::new(&db);
        let turn = other.turn();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                store.record_pruned(std::slice::from_ref(&stone)).unwrap();
                tx.send(()).unwrap();
            });
            assert!(
                rx.recv_timeout(std::time::Duration::from_millis(200))
                    .is_err(),
                "written while another writer holds the turn"
            );
            drop(turn);
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        });
        assert!(
            store.last_flush().unwrap() > std::time::Duration::ZERO,
            "flushed"
        );
        assert!(store.pruned().unwrap().contains_key(&stone.id));
    }
}
