//! [`SqlStore`]: checkpoints in SQLite or PostgreSQL.

use crate::checkpoint::line_cache::LineCache;
use crate::checkpoint::load::load_in_tx;
use crate::checkpoint::save::{save_in_tx, Encoded, SyncOutcome};
use crate::connection::{self, AnyConnection, Backend, SqlOptions, Target, TxMode};
use crate::delete::{delete_execution_in_tx, delete_in_tx};
use crate::error::{Result, SqlError};
use crate::group_commit::GroupCommit;
use crate::list::list_in;
use caf_core::format::{Checkpoint, Encoder};
use caf_core::redact::{RedactionRules, Redactor};
use caf_core::{CheckpointId, CheckpointStore, CheckpointSummary, ExecutionId, ListFilter};
use std::sync::{Mutex, MutexGuard};

/// How often a save that lost a race with another writer (PostgreSQL) is tried again.
const RETRIES: usize = 8;

pub(crate) struct Inner {
    pub conn: AnyConnection,
    pub cache: LineCache,
    /// The last call failed: check the connection first (see [`crate::reconnect`]).
    pub suspect: bool,
    /// Saves whose commit was cut off with the connection: taken out, if they went through,
    /// before the next call (see [`crate::reconnect`]).
    pub unknown: Vec<(CheckpointId, String)>,
}

/// Checkpoints in a SQL database: SQLite (a file, embedded) or PostgreSQL (a server).
///
/// Open one with [`SqlStore::open`]. It implements [`CheckpointStore`] (the same contract and
/// conformance suite as the memory and file stores) and adds analytics
/// ([`stats`](Self::stats), [`query_tool_calls`](Self::query_tool_calls),
/// [`query_thoughts`](Self::query_thoughts), [`read_only_sql`](Self::read_only_sql)) and the
/// bridges from a [`caf_core::FileStore`] ([`sync_from`](Self::sync_from),
/// [`reindex_from`](Self::reindex_from)).
///
/// A store holds one connection (behind a mutex, so the store is `Send + Sync` and threads take
/// turns); open several stores for parallel writers. Every save is one transaction. SQLite writers
/// take the write lock up front (`BEGIN IMMEDIATE`) and wait up to
/// [`SqlOptions::busy_timeout`] for each other, so concurrent processes do not fail with
/// "database is locked"; PostgreSQL writers of the same execution take turns on an advisory
/// lock, and a save that loses a race (a unique violation, a serialization failure, a deadlock)
/// is retried.
pub struct SqlStore {
    backend: Backend,
    pub(crate) target: Target,
    pub(crate) options: SqlOptions,
    inner: Mutex<Inner>,
    read_only: Mutex<Option<AnyConnection>>,
    /// Replaces secrets before a save writes anything (see [`caf_core::redact`]).
    redactor: Redactor,
    /// SQLite with [`crate::Durability::Default`]: commits flushed after the write lock is
    /// released, shared between concurrent writers.
    pub(crate) group: Option<GroupCommit>,
    /// How long the last group-commit flush took, in nanoseconds (for benchmarks).
    last_flush_ns: std::sync::atomic::AtomicU64,
    /// How long the last save's transaction took, its flush excluded, in nanoseconds.
    last_write_ns: std::sync::atomic::AtomicU64,
    /// How long the last save's transaction waited for its checksum, in nanoseconds.
    last_wait_ns: std::sync::atomic::AtomicU64,
    /// How many save transactions this store committed (see [`SqlStore::write_transactions`]).
    write_transactions: std::sync::atomic::AtomicU64,
    /// Called after each flush of the log (see [`SqlStore::on_log_flush`]).
    #[cfg(feature = "test-support")]
    log_flushed: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Encodes what [`save_checkpoint`](Self::save_checkpoint) is given, splicing the canonical
    /// text of thoughts and tool calls encoded before.
    encoder: Mutex<Encoder>,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &self.backend)
            .field("target", &self.target.display())
            .finish_non_exhaustive()
    }
}

/// How long a save waits, at most, for the hash helper to take its checksum (it does within a
/// few µs when it was woken at the start of the save and has a core to run on).
const HELPER_START: std::time::Duration = std::time::Duration::from_micros(10);

impl SqlStore {
    /// Opens the database at `url` with default [`SqlOptions`] and runs its pending migrations.
    ///
    /// `url` is `sqlite://PATH`, `sqlite:PATH` or a bare `PATH` (the file and its directory are
    /// created if needed), or `postgres://…` / `postgresql://…` (the database must exist).
    pub fn open(url: &str) -> Result<Self> {
        Self::open_with(url, SqlOptions::default())
    }

    /// Opens the database at `url` (see [`SqlStore::open`]) with `options`.
    pub fn open_with(url: &str, options: SqlOptions) -> Result<Self> {
        let target = Target::parse(url)?;
        let conn = connection::open(&target, &options)?;
        let group = match (&target, options.durability) {
            (Target::Sqlite(path), crate::Durability::Default) => Some(GroupCommit::new(path)),
            _ => None,
        };
        Ok(Self {
            group,
            last_flush_ns: std::sync::atomic::AtomicU64::new(0),
            last_write_ns: std::sync::atomic::AtomicU64::new(0),
            last_wait_ns: std::sync::atomic::AtomicU64::new(0),
            write_transactions: std::sync::atomic::AtomicU64::new(0),
            #[cfg(feature = "test-support")]
            log_flushed: std::sync::OnceLock::new(),
            encoder: Mutex::new(Encoder::default()),
            backend: target.backend(),
            target,
            options,
            inner: Mutex::new(Inner {
                conn,
                cache: LineCache::default(),
                suspect: false,
                unknown: Vec::new(),
            }),
            read_only: Mutex::new(None),
            redactor: Redactor::default(),
        })
    }

    /// Replaces the store's redaction rules (default: every built-in rule). They apply to
    /// [`save_checkpoint`](Self::save_checkpoint) (and so [`CheckpointStore::save`]); copying
    /// files into the database ([`sync_encoded`](Self::sync_encoded), `sync_from`,
    /// `reindex_from`) keeps what the files hold.
    pub fn set_redaction(&mut self, rules: RedactionRules) {
        self.redactor = Redactor::new(rules);
    }

    /// Which backend this store uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The database, for messages: the SQLite file path, or the PostgreSQL URL without its
    /// password.
    pub fn location(&self) -> String {
        self.target.display()
    }

    /// The connection, reconnected first if the last call found it lost (best effort: if the
    /// server cannot be reached, the call fails on the connection it gets). Calls that can
    /// return the connection error use [`SqlStore::ready`] instead.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        let mut inner = self.lock_raw();
        let _ = self.revive(&mut inner);
        inner
    }

    /// The connection as it is.
    pub(crate) fn lock_raw(&self) -> MutexGuard<'_, Inner> {
        // A panic while the lock was held leaves at worst a transaction that the next `BEGIN`
        // reports; the cache is only ever a hint. Recover the guard.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the ready connection (see [`SqlStore::ready`]); a failure marks it suspect.
    pub(crate) fn on_conn<T>(&self, f: impl FnOnce(&mut Inner) -> Result<T>) -> Result<T> {
        let mut inner = self.ready()?;
        let r = f(&mut inner);
        if r.is_err() {
            self.note_failure(&mut inner);
        }
        r
    }

    pub(crate) fn read_only_connection(&self) -> Result<MutexGuard<'_, Option<AnyConnection>>> {
        let mut guard = self.read_only.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(connection::open_read_only(&self.target, &self.options)?);
        }
        Ok(guard)
    }

    /// Runs `f` in a transaction of `mode` on the store's connection.
    pub(crate) fn with_tx<T>(
        &self,
        mode: TxMode,
        f: impl FnOnce(&mut AnyConnection, &mut LineCache) -> Result<T>,
    ) -> Result<T> {
        let mut inner = self.ready()?;
        let turn = match mode {
            TxMode::Write => self.group.as_ref().map(GroupCommit::turn),
            _ => None,
        };
        let Inner { conn, cache, .. } = &mut *inner;
        let r = conn.in_tx(mode, |conn| f(conn, cache));
        if r.is_err() {
            self.note_failure(&mut inner);
        }
        let value = r.map_err(|e| e.located(|| self.location()))?;
        drop(turn);
        drop(inner);
        if mode == TxMode::Write {
            self.flush_commits()?;
        }
        Ok(value)
    }

    /// Like [`SqlStore::with_tx`]; a transaction cut off by a lost connection before its commit
    /// is run once more on a new connection (see [`crate::reconnect`]).
    pub(crate) fn with_tx_again<T>(
        &self,
        mode: TxMode,
        f: impl Fn(&mut AnyConnection, &mut LineCache) -> Result<T>,
    ) -> Result<T> {
        match self.with_tx(mode, &f) {
            Err(e) if self.may_run_again(&e) => self.with_tx(mode, &f),
            other => other,
        }
    }

    /// Group commit: flushes SQLite's log once the write lock is released (see
    /// [`crate::group_commit`]); nothing for other durabilities and PostgreSQL.
    pub(crate) fn flush_commits(&self) -> Result<()> {
        let Some(group) = &self.group else {
            return Ok(());
        };
        let t = std::time::Instant::now();
        let flushed = group.flush();
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_flush_ns
            .store(ns, std::sync::atomic::Ordering::Relaxed);
        #[cfg(feature = "test-support")]
        if let (Ok(()), Some(hook)) = (&flushed, self.log_flushed.get()) {
            hook();
        }
        flushed
    }

    /// Calls `hook` after each flush of the log this store makes itself (group commit), on the
    /// flushing thread: a test can see where the database becomes durable. Once per store.
    #[cfg(feature = "test-support")]
    pub fn on_log_flush(&self, hook: impl Fn() + Send + Sync + 'static) {
        let _ = self.log_flushed.set(Box::new(hook));
    }

    /// How many transactions of saves this store has committed: one per save, except that a
    /// [`crate::JournaledStore`]'s writer saves the saves queued for it together (reindexing,
    /// [`SqlStore::reindex_from`], is not counted).
    pub fn write_transactions(&self) -> u64 {
        self.write_transactions
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether this store flushes its commits itself, after them (SQLite's group commit): a
    /// commit is then durable once [`SqlStore::flush_commits`] has run.
    pub(crate) fn flushes_after_commit(&self) -> bool {
        self.group.is_some()
    }

    /// How long the flush of the last write took, when this store flushes its commits itself
    /// (SQLite with [`crate::Durability::Default`], see [`crate::Durability`]); `None`
    /// otherwise. For benchmarks, which report the SQL work of a save apart from its flush.
    pub fn last_flush(&self) -> Option<std::time::Duration> {
        self.group.as_ref().map(|_| {
            std::time::Duration::from_nanos(
                self.last_flush_ns
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
        })
    }

    /// How long the last save's write took, for benchmarks (the SQL part of a save): its last
    /// attempt, from taking the store's connection and the writers' turn to the end of its
    /// commit, waiting for a checksum computed beside included, the flush that follows
    /// excluded. One figure per store, whichever thread saved last; a failed save leaves the
    /// figure of the last one that succeeded.
    pub fn last_write(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(
            self.last_write_ns
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Of [`last_write`](Self::last_write), how long the save waited for the checksum computed
    /// beside its rows (zero when it had it before its rows needed it, or computed it itself
    /// before the transaction), for benchmarks.
    pub fn last_checksum_wait(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(
            self.last_wait_ns.load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// The redactor every save goes through (for a caller that encodes what it saves itself,
    /// as the benchmark does).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Saves a checkpoint: redacts its secrets, checks and encodes it (to know its checksum and
    /// size), then [`sync_encoded`](Self::sync_encoded).
    pub fn save_checkpoint(
        &self,
        checkpoint: &Checkpoint,
    ) -> Result<(CheckpointSummary, SyncOutcome)> {
        // The checksum is computed on the hash helper while the rows are written, where the
        // backend allows it; woken now, the helper is up when the bytes come.
        let beside = self.backend.hashes_beside_rows();
        if beside {
            caf_core::format::prepare_checksum_beside();
        }
        let redacted = self.redactor.redact_for(checkpoint, self);
        let checkpoint = &*redacted.checkpoint;
        let unsealed = self
            .encoder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .encode_unsealed(checkpoint)
            .map_err(|error| caf_core::Error::Encode {
                id: checkpoint.id.to_string(),
                error,
            })?;
        if !beside {
            return self.sync_encoded(checkpoint, &unsealed.seal());
        }
        let len = unsealed.len() as u64;
        let pending = unsealed.checksum_beside();
        // A helper that has not taken the job by now (no core free for it, or busy with other
        // checksums) would leave it to this thread at the end of the transaction, holding the
        // writers' turn: hash here instead, before the turn, as a save without a helper does.
        self.last_wait_ns
            .store(0, std::sync::atomic::Ordering::Relaxed);
        let checksum = || {
            let waited = std::time::Instant::now();
            let checksum = pending.finish();
            let ns = u64::try_from(waited.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.last_wait_ns
                .store(ns, std::sync::atomic::Ordering::Relaxed);
            Ok(checksum)
        };
        let enc = if pending.started(HELPER_START) {
            Encoded::later(len, &checksum)
        } else {
            Encoded::with_integrity(len, pending.finish())
        };
        let outcome = self.store_encoded(checkpoint, &enc)?;
        Ok((CheckpointSummary::of(checkpoint, len), outcome))
    }

    /// Stores a checkpoint whose encoding ([`caf_core::format::encode`]) is `encoded` — what
    /// its file holds — without encoding it again (the hybrid store passes what it wrote).
    ///
    /// One transaction; idempotent (the same checkpoint again is [`SyncOutcome::Unchanged`] and
    /// writes nothing); another checkpoint under an existing id replaces it
    /// ([`SyncOutcome::Replaced`]). A checkpoint whose parent is the newest of its line
    /// continues that line and writes only the items that changed.
    pub fn sync_encoded(
        &self,
        checkpoint: &Checkpoint,
        encoded: &[u8],
    ) -> Result<(CheckpointSummary, SyncOutcome)> {
        let enc = Encoded::from_bytes(encoded).ok_or_else(|| SqlError::Corrupt {
            backend: self.backend,
            what: format!("encoding of {}", checkpoint.id),
            message: "no integrity line".into(),
        })?;
        let outcome = self.store_encoded(checkpoint, &enc)?;
        Ok((CheckpointSummary::of(checkpoint, enc.bytes), outcome))
    }

    /// Saves `checkpoint` whose encoding is `enc`, retrying a save that lost a race.
    pub(crate) fn store_encoded(
        &self,
        checkpoint: &Checkpoint,
        enc: &Encoded<'_>,
    ) -> Result<SyncOutcome> {
        self.store_encoded_then(checkpoint, enc, |_| Ok(()))
            .map(|(outcome, ())| outcome)
    }

    /// Like [`store_encoded`](Self::store_encoded), running `then` in the same transaction
    /// after the checkpoint is stored (it commits, or is rolled back, with the checkpoint).
    pub(crate) fn store_encoded_then<T>(
        &self,
        checkpoint: &Checkpoint,
        enc: &Encoded<'_>,
        then: impl Fn(&mut AnyConnection) -> Result<T>,
    ) -> Result<(SyncOutcome, T)> {
        let (outcomes, value) = self.store_all_then(&[(checkpoint, enc)], true, then)?;
        Ok((outcomes[0], value))
    }

    /// [`store_encoded_then`](Self::store_encoded_then) for several checkpoints, stored in
    /// order in one transaction (all or none), then `then`: what each save did. Without
    /// `flush`, a group commit's log is not flushed after it (the caller's journal holds the
    /// saves; [`SqlStore::flush_commits`] flushes later).
    pub(crate) fn store_all_then<T>(
        &self,
        saves: &[(&Checkpoint, &Encoded<'_>)],
        flush: bool,
        then: impl Fn(&mut AnyConnection) -> Result<T>,
    ) -> Result<(Vec<SyncOutcome>, T)> {
        let mut attempt = 0;
        loop {
            let started = std::time::Instant::now();
            let mut inner = self.ready()?;
            let turn = self.group.as_ref().map(GroupCommit::turn);
            let Inner { conn, cache, .. } = &mut *inner;
            // The cache as this transaction leaves it (a later save of a batch continues from
            // an earlier one's tip); put back once committed, and empty otherwise, panics
            // included: no tip of rows rolled back stays.
            let mut tips = std::mem::take(cache);
            let stored = conn.in_tx(TxMode::Write, |conn| {
                let mut outcomes = Vec::with_capacity(saves.len());
                for &(checkpoint, enc) in saves {
                    let saved = save_in_tx(conn, &mut tips, checkpoint, enc)?;
                    if let Some(tip) = saved.tip {
                        tips.put(tip);
                    }
                    outcomes.push(saved.outcome);
                }
                Ok((outcomes, then(conn)?))
            });
            match stored {
                Ok(stored) => {
                    *cache = tips;
                    self.write_transactions
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    drop(turn);
                    drop(inner);
                    let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    self.last_write_ns
                        .store(ns, std::sync::atomic::Ordering::Relaxed);
                    if flush {
                        self.flush_commits()?;
                    }
                    return Ok(stored);
                }
                Err(e) if e.is_retryable() && attempt < RETRIES => {
                    attempt += 1;
                    drop(turn);
                    drop(inner);
                    std::thread::sleep(std::time::Duration::from_millis(
                        fastrand::u64(1..=10) * attempt as u64,
                    ));
                }
                Err(e) => {
                    self.note_failure(&mut inner);
                    // A connection lost before the commit: run it again on a new one.
                    if self.may_run_again(&e) && attempt < RETRIES {
                        attempt += 1;
                        continue;
                    }
                    // A lost commit had its checksums (its rows were written with them); an
                    // error before that does not wait for them.
                    let ids: Vec<_> = saves
                        .iter()
                        .map(|(c, enc)| (&c.id, enc.known().unwrap_or_default().to_string()))
                        .collect();
                    let e = self.save_failed(&mut inner, e, &ids);
                    return Err(e.located(|| self.location()));
                }
            }
        }
    }

    /// Runs `f` on the store's connection, outside any transaction of its own (each statement
    /// commits by itself).
    /// A failure marks the connection suspect (see [`crate::reconnect`]).
    pub(crate) fn with_conn<T, E>(
        &self,
        f: impl FnOnce(&mut AnyConnection) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut inner = self.lock();
        let r = f(&mut inner.conn);
        if r.is_err() {
            self.note_failure(&mut inner);
        }
        r
    }

    /// Loads a checkpoint ([`SqlError::NotFound`] if there is none with this id). It equals
    /// what was saved.
    pub fn load_checkpoint(&self, id: &CheckpointId) -> Result<Checkpoint> {
        self.with_tx_again(TxMode::Read, |conn, _| load_in_tx(conn, id))?
            .ok_or_else(|| SqlError::NotFound {
                what: "checkpoint",
                id: id.to_string(),
            })
    }

    /// The newest checkpoint of an execution (the first it lists), found and loaded in one
    /// read transaction; `None` if it has none.
    pub fn latest_checkpoint(&self, execution: &ExecutionId) -> Result<Option<Checkpoint>> {
        let mut newest = ListFilter::execution(execution);
        newest.limit = Some(1);
        self.with_tx_again(TxMode::Read, |conn, _| {
            match list_in(conn, &newest)?.into_iter().next() {
                Some(s) => load_in_tx(conn, &s.id),
                None => Ok(None),
            }
        })
    }

    /// Lists summaries matching `filter`, newest first (timestamp, then id, descending).
    pub fn list_checkpoints(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>> {
        self.on_conn(|inner| list_in(&mut inner.conn, filter))
    }

    /// Deletes one checkpoint; `false` if there was none.
    pub fn delete_checkpoint(&self, id: &CheckpointId) -> Result<bool> {
        self.delete_checkpoint_then(id, |_| Ok(()))
            .map(|(deleted, ())| deleted)
    }

    /// Deletes every checkpoint of an execution; returns how many there were.
    pub fn delete_execution_checkpoints(&self, execution: &ExecutionId) -> Result<usize> {
        self.delete_execution_then(execution, |_| Ok(()))
            .map(|(deleted, ())| deleted)
    }

    /// Like [`delete_checkpoint`](Self::delete_checkpoint), running `then` in the same
    /// transaction.
    pub(crate) fn delete_checkpoint_then<T>(
        &self,
        id: &CheckpointId,
        then: impl Fn(&mut AnyConnection) -> Result<T>,
    ) -> Result<(bool, T)> {
        self.retrying(|conn, cache| Ok((delete_in_tx(conn, cache, id)?, then(conn)?)))
    }

    /// Like [`delete_execution_checkpoints`](Self::delete_execution_checkpoints), running
    /// `then` in the same transaction.
    pub(crate) fn delete_execution_then<T>(
        &self,
        execution: &ExecutionId,
        then: impl Fn(&mut AnyConnection) -> Result<T>,
    ) -> Result<(usize, T)> {
        self.retrying(|conn, cache| {
            Ok((delete_execution_in_tx(conn, cache, execution)?, then(conn)?))
        })
    }

    fn retrying<T>(
        &self,
        f: impl Fn(&mut AnyConnection, &mut LineCache) -> Result<T>,
    ) -> Result<T> {
        let mut attempt = 0;
        loop {
            match self.with_tx_again(TxMode::Write, &f) {
                Err(e) if e.is_retryable() && attempt < RETRIES => attempt += 1,
                other => return other,
            }
        }
    }
}

impl Drop for SqlStore {
    /// Takes out a save of unknown outcome, if the server can be reached (see
    /// [`crate::reconnect`]).
    fn drop(&mut self) {
        let mut inner = self.lock_raw();
        if !inner.unknown.is_empty() {
            let _ = self.revive(&mut inner);
        }
    }
}

impl CheckpointStore for SqlStore {
    fn save(&self, checkpoint: &Checkpoint) -> caf_core::Result<CheckpointSummary> {
        Ok(self.save_checkpoint(checkpoint)?.0)
    }

    fn load(&self, id: &CheckpointId) -> caf_core::Result<Checkpoint> {
        Ok(self.load_checkpoint(id)?)
    }

    fn list(&self, filter: &ListFilter) -> caf_core::Result<Vec<CheckpointSummary>> {
        Ok(self.list_checkpoints(filter)?)
    }

    fn latest(&self, execution_id: &ExecutionId) -> caf_core::Result<Option<Checkpoint>> {
        Ok(self.latest_checkpoint(execution_id)?)
    }

    fn delete(&self, id: &CheckpointId) -> caf_core::Result<bool> {
        Ok(self.delete_checkpoint(id)?)
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> caf_core::Result<usize> {
        Ok(self.delete_execution_checkpoints(execution_id)?)
    }

    /// In one write transaction, durable as a save is (with group commit, the log is flushed
    /// after it), retried as a save is.
    fn record_pruned(&self, stones: &[caf_core::prune::Tombstone]) -> caf_core::Result<()> {
        Ok(self.retrying(|conn, _| crate::pruned::record(conn, stones))?)
    }

    fn pruned(
        &self,
    ) -> caf_core::Result<std::collections::HashMap<CheckpointId, caf_core::prune::Tombstone>> {
        Ok(self.on_conn(|inner| crate::pruned::load(&mut inner.conn))?)
    }

    fn summary(&self, id: &CheckpointId) -> caf_core::Result<Option<CheckpointSummary>> {
        Ok(self.on_conn(|inner| crate::list::summary_in(&mut inner.conn, id))?)
    }

    fn describe(&self) -> String {
        self.location()
    }
}
