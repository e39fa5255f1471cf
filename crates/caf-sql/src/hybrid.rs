//! [`HybridStore`]: checkpoint files as the source of truth, a database as their index.

use crate::checkpoint::save::{Encoded, SyncOutcome};
use crate::connection::AnyConnection;
use crate::error::SqlError;
use crate::flusher::{self, Flusher, Reserved};
use crate::journal_marks::JournalMark;
use crate::recover::{recover, Recovery};
use crate::stager::{FileBytes, Stager};
use crate::unflushed::{self, Writer};
use crate::SqlStore;
use caf_core::format::{Checkpoint, Unsealed};
use caf_core::store::{AtomicWriteOptions, Fs, RealFs, StagedFile};
use caf_core::{
    CheckpointId, CheckpointStore, CheckpointSummary, DamagedCheckpoint, Error, ExecutionId,
    FileStore, ListFilter, LoadSource, Result,
};
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

/// Files plus a database, kept in sync on every save.
///
/// - **save** encodes the checkpoint once and writes its file beside its place (a temporary
///   file, on a thread of its own while the rows are written), commits it to the database
///   with those same bytes once the file is written, then renames the file into place.
///   **The commit is the save's one flush**: the file is not flushed itself. The commit also
///   records that the file is not yet on disk (the `unflushed_files` table); a background
///   thread syncs the file system about once a second and forgets those records. A power loss
///   may then leave the newest files missing or torn, never the database: opening the store in
///   the next boot checks each recorded file and writes it again from the database, byte for
///   byte (a checkpoint loaded from the database encodes to exactly its file). Where the boot
///   cannot be told (not Linux), files are flushed as well, as a [`FileStore`] does.
///   If the database refuses the save, nothing is saved (no file appears); if the file cannot
///   be put in place after the commit, the commit of a new checkpoint is undone (a failure
///   after the file is in place, appending to the index, leaves the checkpoint saved in both).
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
///
/// `F` is the file system the files go through: the real one, unless a test gives its double.
#[derive(Debug)]
pub struct HybridStore<F: Fs = RealFs> {
    files: Arc<FileStore<F>>,
    sql: Arc<SqlStore>,
    /// Present when files are written without flushing (the database commit is the flush).
    unflushed: Option<(Writer, Flusher<F>)>,
    recovery: Recovery,
    /// Writes a save's file while its rows are written (started by the first save; a
    /// journal's writer, which nobody waits for, writes its files itself).
    stager: OnceLock<Stager>,
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

impl<F: Fs> HybridStore<F> {
    /// Files and database, as they are (see [`SqlStore::sync_from`] to bring in files the
    /// database has not seen). Files the last saves before a power loss left missing or torn are
    /// written again from the database first ([`HybridStore::recovery`] says which).
    pub fn new(files: FileStore<F>, sql: SqlStore) -> Result<Self> {
        Self::with_options(files, sql, HybridOptions::default())
    }

    /// [`HybridStore::new`] with options.
    pub fn with_options(
        files: FileStore<F>,
        sql: SqlStore,
        options: HybridOptions,
    ) -> Result<Self> {
        let sql = Arc::new(sql);
        let meta_dir = files.root().join(".caf");
        let boot = unflushed::boot_id();
        // A directory whose store id cannot be made (read-only) keeps flushing its files.
        let store_id = unflushed::store_id(files.fs(), &meta_dir).ok();
        let mut files = files;
        if boot.is_some() {
            files.set_write_options(AtomicWriteOptions { durable: false });
        }
        let mut recovery = Recovery::default();
        if let Some(store_id) = &store_id {
            recovery = recover(&files, &sql, store_id, boot.as_deref())?;
            if recovery.changed_files() {
                // Open again, so that what was found damaged on open is no longer reported.
                files = FileStore::open_with_fs(files.fs().clone(), files.root(), files.options())?;
            }
            if recovery.failed.is_empty() {
                let earlier = unflushed::earlier_boots(&meta_dir, boot.as_deref());
                unflushed::clear_marks(files.fs(), &meta_dir, &earlier)?;
            }
        }
        let files = Arc::new(files);
        let unflushed = match (store_id, boot) {
            (Some(store_id), Some(boot_id)) => {
                unflushed::mark_boot(files.fs(), &meta_dir, &boot_id)?;
                let writer = Writer {
                    store_id,
                    boot_id,
                    writer: fastrand::i64(1..i64::MAX),
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
            stager: OnceLock::new(),
        })
    }

    /// The file store.
    pub fn files(&self) -> &FileStore<F> {
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
            Some((_, f)) => f.flush_now().map_err(|e| Error::Backend {
                backend: self.sql.backend().name(),
                message: format!("flushing saved files: {e}"),
                source: Some(Box::new(e)),
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

    /// Keeps the records of the files written so far however the store ends (a power cut's
    /// view, for tests of what opening does after one), where [`HybridStore::abandon`] cannot
    /// take the store.
    #[cfg(feature = "test-support")]
    pub fn keep_unflushed_records(&self) {
        if let Some((_, f)) = &self.unflushed {
            f.forget_written();
        }
    }

    /// Both stores back (after a last flush).
    pub fn into_parts(mut self) -> (FileStore<F>, SqlStore) {
        if let Some((_, mut f)) = self.unflushed.take() {
            f.stop();
        }
        // The stager holds the files only while it writes one, and every save waits for that.
        drop(self.stager);
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
            let root = self.files.root();
            self.files
                .fs()
                .sync_dir(root)
                .map_err(|e| Error::io(root, e))?;
        }
        Ok(())
    }

    /// Numbers the records of a save or a delete of `count` files (`None` for a store that
    /// flushes its files): see [`Flusher::reserve`].
    fn reserve(&self, count: usize) -> Option<Reserved<'_>> {
        self.unflushed.as_ref().map(|(_, f)| f.reserve(count))
    }

    /// Records, in the transaction of a save or a delete, that the files of `ids` change
    /// without being flushed, under the numbers `reserved` holds.
    fn record_unflushed(
        &self,
        conn: &mut AnyConnection,
        reserved: Option<&Reserved<'_>>,
        ids: &[&str],
    ) -> crate::Result<()> {
        let (Some((w, _)), Some(r)) = (&self.unflushed, reserved) else {
            return Ok(());
        };
        for (n, id) in (r.first..=r.last).zip(ids) {
            unflushed::record(conn, w, n, id)
                .map_err(SqlError::query(conn.backend(), "recording its file"))?;
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

impl<F: Fs> HybridStore<F> {
    /// Saves a checkpoint already redacted by the file store's redactor, encoded as `bytes`
    /// (sealed, or still to be sealed with their checksum): stages its file (as it is: not
    /// redacted again) on the [`Stager`]'s thread, which seals it first, while its rows are
    /// written; commits them once the file is staged, then puts the file in place.
    pub(crate) fn save_redacted(
        &self,
        checkpoint: &Checkpoint,
        bytes: FileBytes,
    ) -> Result<CheckpointSummary> {
        let id = &checkpoint.id;
        let len = bytes.len() as u64;
        let known = match &bytes {
            FileBytes::Sealed(sealed) => {
                Some(Encoded::from_bytes(sealed).ok_or_else(|| Error::Encode {
                    id: id.to_string(),
                    error: caf_core::format::EncodeError::Invalid {
                        pointer: String::new(),
                        message: "no integrity line".into(),
                    },
                })?)
            }
            FileBytes::Unsealed(_) => None,
        };
        // The file is sealed and written on the stager's thread while the rows are written
        // here; the commit waits for it, and does not happen if it could not be written.
        let summary = CheckpointSummary::of(checkpoint, len);
        let stager = self.stager.get_or_init(Stager::start);
        let staging = RefCell::new(Some(stager.stage(&self.files, summary, bytes)));
        // The staged file, or why it could not be written.
        let staged: RefCell<Option<Result<StagedFile<F>>>> = RefCell::new(None);
        // Waits for the file (once: a retried transaction finds it written) and fails the
        // transaction if it could not be written: rolled back, nothing is saved (the error
        // returned is the file's, below).
        let file_written = || {
            if let Some(staging) = staging.borrow_mut().take() {
                *staged.borrow_mut() = Some(staging.wait());
            }
            match &*staged.borrow() {
                Some(Err(e)) => Err(SqlError::Refused {
                    backend: self.sql.backend(),
                    reason: format!("the file of checkpoint {id} could not be written: {e}"),
                }),
                _ => Ok(()),
            }
        };
        // The checksum the stager sealed the file with.
        let integrity = || {
            file_written()?;
            let staged = staged.borrow();
            let stated = staged.as_ref().and_then(|s| s.as_ref().ok());
            stated
                .and_then(StagedFile::integrity)
                .map(str::to_string)
                .ok_or_else(|| SqlError::Refused {
                    backend: self.sql.backend(),
                    reason: format!("the file of checkpoint {id} states no checksum"),
                })
        };
        let enc = known.unwrap_or_else(|| Encoded::later(len, &integrity));
        let reserved = self.reserve(1);
        let stored = self.sql.store_encoded_then(checkpoint, &enc, |conn| {
            file_written()?;
            self.record_unflushed(conn, reserved.as_ref(), &[id.as_str()])
        });
        drop(staging);
        let staged = match staged.into_inner() {
            Some(Err(e)) => return Err(e),
            other => other.and_then(Result::ok),
        };
        let outcome = match stored {
            Ok((outcome, ())) => {
                if let Some((_, f)) = &self.unflushed {
                    f.release();
                }
                outcome
            }
            Err(e) => {
                // A commit whose outcome is unknown: its row is kept (not forgotten by a flush)
                // until the store has settled it, so that after a crash the next open still
                // writes the file of one that went through.
                if let (Some((_, f)), Some(r), SqlError::CommitUnknown { .. }) =
                    (&self.unflushed, reserved.as_ref(), &e)
                {
                    f.hold(r.first);
                }
                return Err(self.sql_error(id, e));
            }
        };
        let published = match staged {
            Some(staged) => self.files.try_publish(staged),
            // Not seen: a commit runs the closure above, which stages the file or fails.
            None => Err(caf_core::store::Unpublished {
                in_place: false,
                error: Error::io(
                    self.files.root(),
                    std::io::Error::other("committed without its file staged"),
                ),
            }),
        };
        if let Some(r) =
            reserved.filter(|_| published.as_ref().map_or_else(|u| u.in_place, |_| true))
        {
            r.done();
        }
        published.map_err(|u| {
            // A file that did not get in place: undo the commit of a new checkpoint, so that
            // the database does not hold one the files lack (a replaced one keeps its new
            // version: `caf verify` reports it). A file in place (what failed came after the
            // rename: flushing its directory) is a saved checkpoint, in both copies.
            if !u.in_place && outcome == SyncOutcome::Added {
                let _ = self.sql.delete_checkpoint(id);
            }
            u.error
        })
    }
}

/// The file of a save in a journal writer's batch ([`HybridStore::save_batch`]).
pub(crate) enum BatchFile {
    /// Its text, for the batch to seal and write.
    Text(Unsealed),
    /// Its sealed bytes, for the batch to write (a save could not put them in place itself:
    /// [`HybridStore::try_place`]).
    Sealed(Vec<u8>),
    /// Already in place ([`HybridStore::try_place`]).
    Placed(PlacedFile),
}

/// A journaled save's file, in place (not flushed): what its rows need of it.
pub(crate) struct PlacedFile {
    /// Its length.
    bytes: u64,
    /// Its checksum, as its integrity line states it.
    integrity: String,
    /// What failed once it was in place (flushing its directory): the checkpoint is saved,
    /// the error is reported once its rows are in.
    error: Option<Error>,
}

impl<F: Fs> HybridStore<F> {
    /// Saves a journal's writer's queued saves (redacted and encoded, in order) together, with
    /// the journal's `mark`: each file is sealed, written and put in place (not flushed), then
    /// the rows of all and the mark go in one transaction. Nobody waits for these saves (the
    /// journal holds them), so what counts is their work: one writers' turn, one commit and one
    /// write of the pages they share for the batch rather than one each.
    ///
    /// The files go in place before the commit, not after as in
    /// [`HybridStore::save_redacted`]: an error anywhere leaves the mark where it was, so that
    /// the journal's next pass ([`crate::JournaledStore`]) saves again every one of them the
    /// database or the files lack — all were acknowledged. Until then the files this batch put
    /// in place are taken out again (best effort), so that none stays without its rows. A
    /// journaled store's database is SQLite, whose commits are not lost with a connection, so
    /// no commit here has an unknown outcome.
    pub(crate) fn save_batch(
        &self,
        batch: Vec<(Checkpoint, BatchFile)>,
        mark: &JournalMark<'_>,
    ) -> Result<()> {
        let mut encoded = Vec::with_capacity(batch.len());
        let mut checkpoints = Vec::with_capacity(batch.len());
        // An error after a file got in place (flushing its directory): the checkpoint is
        // saved, the error is still reported once the rows are in.
        let mut late = None;
        let mut placed = Vec::with_capacity(batch.len());
        let mut batch = batch.into_iter();
        while let Some((checkpoint, file)) = batch.next() {
            let PlacedFile {
                bytes,
                integrity,
                error,
            } = match self.place_file(&checkpoint, file) {
                Ok(done) => done,
                Err(e) => {
                    // The files its saves put in place after it go too.
                    placed.extend(
                        batch
                            .filter(|(_, file)| matches!(file, BatchFile::Placed(_)))
                            .map(|(c, _)| c.id),
                    );
                    return Err(self.take_out(&placed, e));
                }
            };
            placed.push(checkpoint.id.clone());
            if let Some(e) = error {
                late.get_or_insert(e);
            }
            encoded.push(Encoded::with_integrity(bytes, integrity));
            checkpoints.push(checkpoint);
        }
        let ids: Vec<&str> = checkpoints.iter().map(|c| c.id.as_str()).collect();
        let saves: Vec<_> = checkpoints.iter().zip(&encoded).collect();
        let reserved = self.reserve(saves.len());
        let stored = self.sql.store_all_then(&saves, false, |conn| {
            self.record_unflushed(conn, reserved.as_ref(), &ids)?;
            crate::journal_marks::record_in(conn, mark)
        });
        if let Err(e) = stored {
            let (first, last) = (ids.first(), ids.last());
            let e = Error::Backend {
                backend: self.sql.backend().name(),
                message: format!(
                    "{} journaled save(s), checkpoints {} to {}, were not written to the \
                     database ({e}); the journal holds them",
                    ids.len(),
                    first.unwrap_or(&""),
                    last.unwrap_or(&"")
                ),
                source: Some(Box::new(e)),
            };
            return Err(self.take_out(&placed, e));
        }
        if let Some((_, f)) = &self.unflushed {
            f.release();
        }
        if let Some(r) = reserved {
            r.done();
        }
        late.map_or(Ok(()), Err)
    }

    /// Puts a batch's file in place, not flushed (the first half of
    /// [`HybridStore::save_batch`], which writes the rows): what the rows need of it. The
    /// text's memory goes back to the files' store for a later encoding.
    fn place_file(&self, checkpoint: &Checkpoint, file: BatchFile) -> Result<PlacedFile> {
        let bytes = match file {
            BatchFile::Text(unsealed) => unsealed.seal(),
            BatchFile::Sealed(bytes) => bytes,
            BatchFile::Placed(placed) => return Ok(placed),
        };
        let placed = self.place_sealed(checkpoint, &bytes);
        self.files.give_back(bytes);
        placed
    }

    /// Seals a journaled save's text and puts its file in place, not flushed, as
    /// [`HybridStore::save_batch`] would, for a save to do before it queues its rows: the file
    /// in place, or, should that fail, its sealed bytes, for the batch to try again (and report
    /// why it cannot, as it reports any file it cannot write).
    pub(crate) fn try_place(&self, checkpoint: &Checkpoint, unsealed: Unsealed) -> BatchFile {
        let bytes = unsealed.seal();
        match self.place_sealed(checkpoint, &bytes) {
            Ok(placed) => {
                self.files.give_back(bytes);
                BatchFile::Placed(placed)
            }
            Err(_) => BatchFile::Sealed(bytes),
        }
    }

    /// Writes the file `bytes` of `checkpoint` and puts it in place, not flushed.
    fn place_sealed(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<PlacedFile> {
        let len = bytes.len() as u64;
        let summary = CheckpointSummary::of(checkpoint, len);
        let file = self.files.stage_summarized(summary, bytes)?;
        let integrity = file.integrity().map(str::to_string).ok_or_else(|| {
            Error::io(
                self.files.path_of(&checkpoint.id),
                std::io::Error::other("the staged file states no checksum"),
            )
        })?;
        let error = match self.files.try_publish(file) {
            Err(u) if !u.in_place => return Err(u.error),
            Err(u) => Some(u.error),
            Ok(_) => None,
        };
        Ok(PlacedFile {
            bytes: len,
            integrity,
            error,
        })
    }

    /// Takes the file of a save [`HybridStore::try_place`] put in place out again (best
    /// effort), when its rows will not go in with it.
    pub(crate) fn take_out_file(&self, id: &CheckpointId) {
        let _ = self.files.delete(id);
    }

    /// Takes out the files of a batch that failed before its rows went in (best effort), so
    /// that none is left in place without its rows until the journal's next pass writes it
    /// again (meanwhile another process could delete it, and that pass would bring it back).
    /// Returns `error`.
    fn take_out(&self, placed: &[CheckpointId], error: Error) -> Error {
        for id in placed {
            self.take_out_file(id);
        }
        error
    }
}

impl<F: Fs> CheckpointStore for HybridStore<F> {
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary> {
        // Woken now, the stager is up by the time the file is handed to it.
        self.stager.get_or_init(Stager::start).nudge();
        let (redacted, unsealed) = self.files.redact_and_encode_unsealed(checkpoint, self)?;
        // The stager hashes (seals) while the rows are written, where the backend allows it.
        let bytes = if self.sql.backend().hashes_beside_rows() {
            FileBytes::Unsealed(unsealed)
        } else {
            FileBytes::Sealed(unsealed.seal())
        };
        self.save_redacted(&redacted, bytes)
    }

    /// Redacts the checkpoint with the file store's rules (encoding it again if that changed
    /// it), so that file and database hold the same redacted copy.
    fn save_encoded(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<CheckpointSummary> {
        self.stager.get_or_init(Stager::start).nudge();
        let (redacted, bytes) = self
            .files
            .redact_and_encode(checkpoint, Some(bytes), self)?;
        self.save_redacted(&redacted, FileBytes::Sealed(bytes.into_owned()))
    }

    fn load(&self, id: &CheckpointId) -> Result<Checkpoint> {
        self.load_with_source(id).map(|(c, _)| c)
    }

    /// The file store's newest (found from its index, read on the fast path); when that file is
    /// damaged, the newest through [`load`](CheckpointStore::load), which falls back to the
    /// database's intact copy.
    fn latest(&self, execution_id: &ExecutionId) -> Result<Option<Checkpoint>> {
        match self.files.latest(execution_id) {
            Err(Error::Load { .. } | Error::NotRegularFile { .. }) => {
                let mut filter = ListFilter::execution(execution_id);
                filter.limit = Some(1);
                match self.list(&filter)?.into_iter().next() {
                    Some(s) => self.load(&s.id).map(Some),
                    None => Ok(None),
                }
            }
            other => other,
        }
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

    fn describe(&self) -> String {
        self.files.describe()
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>> {
        self.files.list(filter)
    }

    /// The database first, with a record of the file about to go (so that a power loss
    /// between the two cannot leave a file the database lacks: see [`crate::Recovery`]), then
    /// the file, and its directory is flushed.
    fn delete(&self, id: &CheckpointId) -> Result<bool> {
        let reserved = self.reserve(1);
        let (in_sql, ()) = self.sql.delete_checkpoint_then(id, |conn| {
            self.record_unflushed(conn, reserved.as_ref(), &[id.as_str()])
        })?;
        let in_files = self.files.delete(id)?;
        self.sync_deletion(in_files)?;
        if let Some(r) = reserved {
            r.done();
        }
        Ok(in_sql || in_files)
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize> {
        // The files to record as about to go, when files are written unflushed.
        let files = match self.unflushed {
            Some(_) => self.files.list(&ListFilter::execution(execution_id))?,
            None => Vec::new(),
        };
        let ids: Vec<&str> = files.iter().map(|s| s.id.as_str()).collect();
        let reserved = self.reserve(ids.len());
        let (_, ()) = self.sql.delete_execution_then(execution_id, |conn| {
            self.record_unflushed(conn, reserved.as_ref(), &ids)
        })?;
        let removed = self.files.delete_execution(execution_id)?;
        self.sync_deletion(removed > 0)?;
        if let Some(r) = reserved {
            r.done();
        }
        Ok(removed)
    }

    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        self.files.summary(id)
    }
}
