//! [`HybridStore`]: checkpoint files as the source of truth, a database as their index.

use crate::checkpoint::save::{Encoded, SyncOutcome};
use crate::error::SqlError;
use crate::flusher::{self, Flusher};
use crate::unflushed::{self, Writer};
use crate::SqlStore;
use caf_core::format::{encode, Checkpoint};
use caf_core::store::{read_regular_file, sync_dir, AtomicWriteOptions};
use caf_core::{
    CheckpointId, CheckpointStore, CheckpointSummary, DamagedCheckpoint, Error, ExecutionId,
    FileStore, ListFilter, LoadSource, Result,
};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Files plus a database, kept in sync on every save.
///
/// - **save** encodes the checkpoint once and writes its file beside its place (a temporary
///   file), commits it to the database with those same bytes, then renames the file into place.
///   **The commit is the save's one flush**: the file is not flushed itself. The commit also
///   records that the file is not yet on disk (the `unflushed_files` table); a background
///   thread syncs the file system about once a second and forgets those records. A power loss
///   may then leave the newest files missing or torn, never the database: opening the store in
///   the next boot checks each recorded file and writes it again from the database, byte for
///   byte (a checkpoint loaded from the database encodes to exactly its file). Where the boot
///   cannot be told (not Linux), files are flushed as well, as a [`FileStore`] does.
///   If the database refuses the save, nothing is saved (no file appears); if the file cannot
///   be put in place after the commit, the commit of a new checkpoint is undone.
/// - **load** and **list** read the files (the file store's index: listing opens no
///   checkpoint). The files are the truth, and they also show checkpoints saved into the
///   directory by someone else that the database has not seen yet; both are fast.
/// - **The database is a second copy.** When a file cannot be loaded (corrupted, not a regular
///   file), **load** returns the database's copy instead, if the database holds an intact copy
///   of the same version ([`SqlStore::intact_copy`]); [`CheckpointStore::load_with_source`]
///   says which copy was used ([`LoadSource::Database`], with the file's error), and so do
///   [`caf_core::CheckpointManager::restore`] and `restore_latest` ([`caf_core::Restored`]'s
///   `source`). A missing file is not replaced (the files decide what exists), except for the
///   files of the last saves before a power loss, as above.
/// - **delete** removes the checkpoint from the database first, then its file: a failure in
///   between leaves a file the database lacks, which `caf sync` puts back, rather than a
///   database row with no file.
///
/// Analytics and SQL go to [`HybridStore::sql`].
#[derive(Debug)]
pub struct HybridStore {
    files: Arc<FileStore>,
    sql: Arc<SqlStore>,
    /// Present when files are written without flushing (the database commit is the flush).
    unflushed: Option<(Writer, Flusher)>,
    recovery: Recovery,
}

/// How a [`HybridStore`] works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HybridOptions {
    /// How often, at most, the background flusher syncs the files saved since its last sync
    /// (default 1 s). Longer means fewer syncs, and more files to check after a power loss.
    pub flush_every: std::time::Duration,
}

impl Default for HybridOptions {
    fn default() -> Self {
        Self {
            flush_every: flusher::PERIOD,
        }
    }
}

/// What opening a hybrid store did for the files the last saves before a power loss may have
/// left missing or torn.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Files written again from the database.
    pub rewritten: Vec<CheckpointId>,
    /// Files that could not be written again, and why (their records stay).
    pub failed: Vec<(CheckpointId, String)>,
}

impl HybridStore {
    /// Files and database, as they are (see [`SqlStore::sync_from`] to bring in files the
    /// database has not seen). Files the last saves before a power loss left missing or torn are
    /// written again from the database first ([`HybridStore::recovery`] says which).
    pub fn new(files: FileStore, sql: SqlStore) -> Result<Self> {
        Self::with_options(files, sql, HybridOptions::default())
    }

    /// [`HybridStore::new`] with options.
    pub fn with_options(files: FileStore, sql: SqlStore, options: HybridOptions) -> Result<Self> {
        let sql = Arc::new(sql);
        let meta_dir = files.root().join(".caf");
        let boot = unflushed::boot_id();
        // A directory whose store id cannot be made (read-only) keeps flushing its files.
        let store_id = unflushed::store_id(&meta_dir).ok();
        let mut files = files;
        if boot.is_some() {
            files.set_write_options(AtomicWriteOptions { durable: false });
        }
        let mut recovery = Recovery::default();
        if let Some(store_id) = &store_id {
            recovery = recover(&files, &sql, store_id, boot.as_deref())?;
            if !recovery.rewritten.is_empty() {
                // Open again, so that what was found damaged on open is no longer reported.
                files = FileStore::open_with(files.root(), files.options())?;
            }
            if recovery.failed.is_empty() {
                let earlier = unflushed::earlier_boots(&meta_dir, boot.as_deref());
                unflushed::clear_marks(&meta_dir, &earlier)?;
            }
        }
        let files = Arc::new(files);
        let unflushed = match (store_id, boot) {
            (Some(store_id), Some(boot_id)) => {
                unflushed::mark_boot(&meta_dir, &boot_id)?;
                let writer = Writer {
                    store_id,
                    boot_id,
                    writer: fastrand::i64(1..i64::MAX),
                    recorded: Default::default(),
                };
                let flusher = Flusher::start(flusher::Target {
                    files: Arc::clone(&files),
                    sql: Arc::clone(&sql),
                    writer: writer.writer,
                    period: options.flush_every,
                });
                Some((writer, flusher))
            }
            _ => None,
        };
        Ok(Self {
            files,
            sql,
            unflushed,
            recovery,
        })
    }

    /// The file store.
    pub fn files(&self) -> &FileStore {
        &self.files
    }

    /// The database.
    pub fn sql(&self) -> &SqlStore {
        &self.sql
    }

    /// What opening the store did after a power loss (nothing, usually).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// Flushes the files saved so far to disk now (the background flusher does it about once a
    /// second), and reports a background flush that failed since the last call.
    pub fn flush(&self) -> Result<()> {
        match &self.unflushed {
            Some((_, f)) => f.flush_now().map_err(|message| Error::Backend {
                backend: self.sql.backend().name(),
                message: format!("flushing saved files: {message}"),
                source: None,
            }),
            None => Ok(()),
        }
    }

    /// Drops the store as a power cut would leave it: the flusher stops without its last flush,
    /// so the records of unflushed files stay (for tests of what opening does after a power
    /// loss).
    #[cfg(feature = "test-support")]
    pub fn abandon(mut self) {
        if let Some((_, f)) = self.unflushed.as_mut() {
            f.abandon();
        }
    }

    /// Both stores back (after a last flush).
    pub fn into_parts(mut self) -> (FileStore, SqlStore) {
        if let Some((_, mut f)) = self.unflushed.take() {
            f.stop();
        }
        let sql = match Arc::try_unwrap(self.sql) {
            Ok(sql) => sql,
            // The flusher, the only other holder, has stopped.
            Err(_) => unreachable!("the flusher thread still holds the database"),
        };
        let mut files = match Arc::try_unwrap(self.files) {
            Ok(files) => files,
            Err(_) => unreachable!("the flusher thread still holds the files"),
        };
        files.set_write_options(AtomicWriteOptions::default());
        (files, sql)
    }

    /// Deletions stay durable: the file store writes without flushing here, and a deleted file
    /// that came back after a power loss would be a checkpoint the database lacks.
    fn sync_deletion(&self, deleted: bool) -> Result<()> {
        if deleted && self.unflushed.is_some() {
            sync_dir(self.files.root())?;
        }
        Ok(())
    }

    fn sql_error(&self, id: &CheckpointId, e: SqlError) -> Error {
        if matches!(e, SqlError::CommitUnknown { .. }) {
            // It says what happened to the save itself.
            return e.into();
        }
        Error::Backend {
            backend: self.sql.backend().name(),
            message: format!("checkpoint {id} was not saved: the database failed ({e})"),
            source: Some(Box::new(e)),
        }
    }
}

/// Checks the files recorded as unflushed: those of an earlier boot (a power loss came between)
/// against their database copy, byte for byte; those of this boot only for being there (a
/// writer killed between its commit and its rename). Any that differs is written again from
/// the database, and the file system is synced before the earlier boot's records are
/// forgotten.
fn recover(
    files: &FileStore,
    sql: &SqlStore,
    store_id: &str,
    boot: Option<&str>,
) -> Result<Recovery> {
    let rows = sql
        .with_conn(|c| unflushed::of_store(c, store_id))
        .map_err(SqlError::query(sql.backend(), "reading unflushed files"))?;
    let mut out = Recovery::default();
    let mut earlier_boot = false;
    for row in rows {
        let earlier = Some(row.boot_id.as_str()) != boot;
        earlier_boot |= earlier;
        let Ok(id) = CheckpointId::new(&row.checkpoint_id) else {
            continue;
        };
        let path = files.path_of(&id);
        if !earlier && std::fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        let checkpoint = match sql.load_checkpoint(&id) {
            Ok(c) => c,
            // Deleted since: nothing to write.
            Err(SqlError::NotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        let bytes = encode(&checkpoint).map_err(|error| Error::Encode {
            id: id.to_string(),
            error,
        })?;
        let whole = read_regular_file(&path, bytes.len() as u64).is_ok_and(|b| b == bytes);
        if whole {
            continue;
        }
        match files.save_encoded(&checkpoint, &bytes) {
            Ok(_) => out.rewritten.push(id),
            Err(e) => out.failed.push((id, e.to_string())),
        }
    }
    if !out.rewritten.is_empty() || earlier_boot {
        unflushed::sync_file_system(files.root())?;
    }
    if earlier_boot && out.failed.is_empty() {
        sql.with_conn(|c| unflushed::forget_earlier_boots(c, store_id, boot.unwrap_or("")))
            .map_err(SqlError::query(sql.backend(), "forgetting checked files"))?;
    }
    Ok(out)
}

impl CheckpointStore for HybridStore {
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary> {
        let bytes = self.files.encode(checkpoint)?;
        self.save_encoded(checkpoint, &bytes)
    }

    fn save_encoded(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<CheckpointSummary> {
        let id = &checkpoint.id;
        let enc = Encoded::from_bytes(bytes).ok_or_else(|| Error::Encode {
            id: id.to_string(),
            error: caf_core::format::EncodeError::Invalid {
                pointer: String::new(),
                message: "no integrity line".into(),
            },
        })?;
        let staged = self.files.stage_encoded(checkpoint, bytes)?;
        // The row of its file recorded by the last attempt of the transaction.
        let recorded = AtomicI64::new(0);
        let stored = self
            .sql
            .store_encoded_then(checkpoint, &enc, |conn| match &self.unflushed {
                Some((w, _)) => {
                    let n = w.recorded.fetch_add(1, Ordering::Relaxed) + 1;
                    recorded.store(n, Ordering::Relaxed);
                    unflushed::record(conn, w, n, id.as_str())
                        .map(|_| Some(n))
                        .map_err(SqlError::query(conn.backend(), "recording its file"))
                }
                None => Ok(None),
            });
        let (outcome, seq) = match stored {
            Ok(stored) => {
                if let Some((_, f)) = &self.unflushed {
                    f.release();
                }
                stored
            }
            Err(e) => {
                if let (Some((_, f)), SqlError::CommitUnknown { .. }) = (&self.unflushed, &e) {
                    f.hold(recorded.load(Ordering::Relaxed));
                }
                return Err(self.sql_error(id, e));
            }
        };
        match self.files.publish(staged) {
            Ok(summary) => {
                if let (Some((_, f)), Some(seq)) = (&self.unflushed, seq) {
                    f.written(seq);
                }
                Ok(summary)
            }
            Err(e) => {
                // Undo the commit of a new checkpoint, so that the database does not hold one
                // the files lack (a replaced one keeps its new version: `caf verify` reports it).
                if outcome == SyncOutcome::Added {
                    let _ = self.sql.delete_checkpoint(id);
                }
                Err(e)
            }
        }
    }

    fn load(&self, id: &CheckpointId) -> Result<Checkpoint> {
        self.load_with_source(id).map(|(c, _)| c)
    }

    fn load_with_source(&self, id: &CheckpointId) -> Result<(Checkpoint, LoadSource)> {
        match self.files.load(id) {
            Ok(c) => Ok((c, LoadSource::Primary)),
            Err(file_error @ (Error::Load { .. } | Error::NotRegularFile { .. })) => {
                match self.sql.copy_of_damaged_file(&self.files.path_of(id), id) {
                    Ok(Some(copy)) => Ok((
                        copy.checkpoint,
                        LoadSource::Database {
                            database: self.sql.location(),
                            file_error,
                        },
                    )),
                    // No intact copy, or the database fails too: the file's error is the news.
                    Ok(None) | Err(_) => Err(file_error),
                }
            }
            Err(e) => Err(e),
        }
    }

    fn damaged(&self) -> Result<Vec<DamagedCheckpoint>> {
        self.files.damaged()
    }

    fn record_pruned(&self, stones: &[caf_core::prune::Tombstone]) -> Result<()> {
        self.files.record_pruned(stones)
    }

    fn pruned(
        &self,
    ) -> Result<std::collections::HashMap<CheckpointId, caf_core::prune::Tombstone>> {
        self.files.pruned()
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>> {
        self.files.list(filter)
    }

    fn delete(&self, id: &CheckpointId) -> Result<bool> {
        let in_sql = self.sql.delete_checkpoint(id)?;
        let in_files = self.files.delete(id)?;
        self.sync_deletion(in_files)?;
        Ok(in_sql || in_files)
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize> {
        self.sql.delete_execution_checkpoints(execution_id)?;
        let removed = self.files.delete_execution(execution_id)?;
        self.sync_deletion(removed > 0)?;
        Ok(removed)
    }

    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        self.files.summary(id)
    }
}
