//! [`HybridStore`]: checkpoint files as the source of truth, a database as their index.

use crate::connection::Backend;
use crate::error::SqlError;
use crate::SqlStore;
use caf_core::format::{encode, Checkpoint};
use caf_core::{
    CheckpointId, CheckpointStore, CheckpointSummary, DamagedCheckpoint, Error, ExecutionId,
    FileStore, ListFilter, LoadSource, Result,
};

/// Files plus a database, kept in sync on every save.
///
/// - **save** encodes the checkpoint once, writes its file (atomically, durably), then indexes
///   it in the database with those same bytes. If the file is written but the database fails,
///   the error says so: the checkpoint is safe on disk and `caf sync`
///   ([`SqlStore::sync_from`]) brings the database up to date.
/// - **load** and **list** read the files (the file store's index: listing opens no
///   checkpoint). The files are the truth, and they also show checkpoints saved into the
///   directory by someone else that the database has not seen yet; both are fast.
/// - **The database is a second copy.** When a file cannot be loaded (corrupted, not a regular
///   file), **load** returns the database's copy instead, if the database holds an intact copy
///   of the same version ([`SqlStore::intact_copy`]); [`CheckpointStore::load_with_source`]
///   says which copy was used ([`LoadSource::Database`], with the file's error), and so do
///   [`caf_core::CheckpointManager::restore`] and `restore_latest` ([`caf_core::Restored`]'s
///   `source`). A missing file is not replaced: the files decide what exists.
/// - **delete** removes the checkpoint from the database first, then its file: a failure in
///   between leaves a file the database lacks, which `caf sync` puts back, rather than a
///   database row with no file.
///
/// Analytics and SQL go to [`HybridStore::sql`].
#[derive(Debug)]
pub struct HybridStore {
    files: FileStore,
    sql: SqlStore,
}

impl HybridStore {
    /// Files and database, as they are (see [`SqlStore::sync_from`] to bring in files the
    /// database has not seen).
    pub fn new(files: FileStore, sql: SqlStore) -> Self {
        Self { files, sql }
    }

    /// The file store.
    pub fn files(&self) -> &FileStore {
        &self.files
    }

    /// The database.
    pub fn sql(&self) -> &SqlStore {
        &self.sql
    }

    /// Both stores back.
    pub fn into_parts(self) -> (FileStore, SqlStore) {
        (self.files, self.sql)
    }

    fn sql_error(&self, done: String, e: SqlError) -> Error {
        let backend = match self.sql.backend() {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        };
        Error::Backend {
            backend,
            message: format!(
                "{done}, but the database failed ({e}); it is behind the files until synced"
            ),
            source: Some(Box::new(e)),
        }
    }
}

impl CheckpointStore for HybridStore {
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary> {
        let bytes = encode(checkpoint).map_err(|error| Error::Encode {
            id: checkpoint.id.to_string(),
            error,
        })?;
        let summary = self.files.save_encoded(checkpoint, &bytes)?;
        self.sql.sync_encoded(checkpoint, &bytes).map_err(|e| {
            self.sql_error(
                format!("checkpoint {} is saved to its file", checkpoint.id),
                e,
            )
        })?;
        Ok(summary)
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
        Ok(in_sql || in_files)
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize> {
        self.sql.delete_execution_checkpoints(execution_id)?;
        self.files.delete_execution(execution_id)
    }

    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        self.files.summary(id)
    }
}
