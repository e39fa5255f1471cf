//! [`JournaledStore`]: a hybrid store whose saves are durable after one append to a journal.

mod helper;

use crate::hash_pace::HashPace;
use crate::hybrid::{BatchFile, HybridStore};
use crate::journal::{Held, Kind, Record, Slot, Taken, DEFAULT_SLOT_BYTES, MIN_SLOT_BYTES};
use crate::journal_marks::JournalMark;
use crate::journal_revision::{self as revision, Bases};
use crate::stager::FileBytes;
use caf_core::format::{Checked, Checkpoint, Limits, Unsealed};
use caf_core::prune::Tombstone;
use caf_core::store::{Fs, RealFs};
use caf_core::{
    CheckpointId, CheckpointStore, CheckpointSummary, DamagedCheckpoint, Error, ExecutionId,
    ListFilter, LoadSource, Result,
};
use helper::Helper;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

/// A redacted checkpoint and its file (its bytes, or in place already), journaled, for the
/// writer thread, with the generation and number of its record.
type Job = (Checkpoint, BatchFile, u64, u64);

/// A save whose writer has at least this many saves queued puts its own file in place after
/// its flush (see [`JournaledStore::queue`]).
const PLACE_BEHIND: usize = 2;

struct Queue {
    jobs: VecDeque<Job>,
    /// The writer is writing jobs it took off the queue.
    busy: bool,
    /// Why the writer could not write a journaled save (the journal still holds it, and the
    /// saves queued after it).
    failed: Option<Error>,
    stop: bool,
    /// The writer is waiting for work (on `work`): only then does a job need to wake it.
    waiting: bool,
    /// A job was queued while the writer waited, and nobody has woken it yet (see
    /// [`JournaledStore::queue`]): the next save's helper, or the helper once idle, or
    /// whoever waits for the writer, wakes it.
    deferred: bool,
    /// The writer is waiting for work, as it does for a while after a batch, with a timeout
    /// ([`LINGER`]): it looks at the queue again by itself within [`DEFERRED_AT_MOST`], so a
    /// save that does its work on its own thread can leave its job to it (see [`Defer`]).
    lingering: bool,
}

impl Queue {
    /// Wakes the writer (through `work`) for a job queued without waking it
    /// ([`Queue::deferred`]).
    fn wake_deferred(&mut self, work: &Condvar) {
        if std::mem::take(&mut self.deferred) {
            work.notify_one();
        }
    }
}

/// [`Queue::wake_deferred`].
fn wake_deferred<F: Fs>(shared: &Shared<F>) {
    lock(&shared.queue).wake_deferred(&shared.work);
}

/// The helper's idle work: [`wake_deferred`], unless a save is under way (its slot locked),
/// which may yet defer its job (its helper's task done, its flush not). Whether to look again
/// later (a save held the slot).
fn wake_deferred_unless_saving<F: Fs>(shared: &Shared<F>) -> bool {
    match shared.slot.try_lock() {
        Err(std::sync::TryLockError::WouldBlock) => true,
        Ok(_) | Err(std::sync::TryLockError::Poisoned(_)) => {
            wake_deferred(shared);
            false
        }
    }
}

/// How long the helper waits for another save after a task before it wakes the writer for a
/// deferred job itself.
const DEFERRED_AT_MOST: std::time::Duration = std::time::Duration::from_millis(1);

/// How long after a batch the writer, waiting for work, looks at its queue by itself each
/// [`DEFERRED_AT_MOST`] ([`Queue::lingering`]), before it waits to be woken.
const LINGER: std::time::Duration = std::time::Duration::from_millis(20);

/// Who wakes the writer for a save's job, when it waits for work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Defer {
    /// The save, once queued.
    No,
    /// The next save's helper, during that save's flush, or the helper once idle.
    ToHelper,
    /// The next save, during its flush (its own work, written directly: [`Slot::overlaps`]),
    /// or the writer itself if it lingers ([`Queue::lingering`]); the save, if it does not.
    ToNextSave,
}

/// A save defers waking the writer only when the store's last append took less than this: its
/// helper's idle wait then ends after the save (not during a long flush, to look again), and
/// where appends take longer (many agents on one disk) a wake-up is a small part of a save.
const DEFER_BELOW: std::time::Duration = std::time::Duration::from_micros(500);

struct Shared<F: Fs> {
    hybrid: HybridStore<F>,
    /// The slot's name in the database's `journal_slots` (the store's id and the file's name).
    mark: String,
    /// The store's journal slot; held while a save is appended and queued, so that the queue
    /// keeps the journal's order.
    slot: Mutex<Slot<F>>,
    /// The checkpoint journaled last for each execution saved last (locked only while `slot`
    /// is).
    bases: Mutex<Bases>,
    queue: Mutex<Queue>,
    /// Wakes the writer (a job, or stop).
    work: Condvar,
    /// Wakes those waiting for the writer (a job done).
    done: Condvar,
    /// Whether a save hashes its file during its flush.
    pace: HashPace,
    /// Whether the writer lingers after a batch ([`Queue::lingering`]): while the slot's
    /// records are written directly, whose saves wake no helper.
    lingers: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A [`HybridStore`] whose saves are durable after **one flush: an append to the store's
/// journal** (`DIR/.caf/journal/`), the save in one record: its encoded bytes, or, mostly, a
/// revision of its execution's save before (what changed; the text is encoded by a helper
/// thread while the record is flushed, see `journal_revision.rs`). A writer thread
/// then writes the checkpoint's file and rows, without flushing them (a save behind a busy
/// writer writes its own file, see `JournaledStore::queue`); the saves queued while
/// it writes go together next time, their rows in one transaction.
///
/// - **Durable when `save` returns.** After a crash or a power loss, opening the store again
///   applies every journaled save the database lacks (its file written again, byte for byte),
///   then empties the journal. A record cut off by the power loss was not acknowledged.
/// - **The journal is emptied** once what it holds is on disk elsewhere: when it is full (16
///   MiB by default, see [`JournalOptions`]), before a delete (so that a deleted checkpoint
///   cannot come back from it), and when the store is dropped. Emptying waits for the writer
///   and flushes the database's log first.
/// - **Reads see every save made before them**: load, list and the rest first wait until the
///   writer has written what was queued. Other processes see a save once the writer has
///   written it: a save after a quick flush does not wake the writer itself (waking a thread
///   would cost it a few microseconds more), the next save's helper does during its own flush,
///   or the helper does a millisecond after the save when no other comes; a save after a slow
///   flush wakes the writer itself (see `JournaledStore::queue`).
/// - **A save the writer could not write** (the disk full, say) is still in the journal: the
///   next call tries the journal's saves again, through the hybrid store's own flushed save,
///   and returns the error if that fails too. Nothing acknowledged is dropped.
/// - Each store holds one slot (a file, locked) of the journal, so that processes sharing a
///   directory never share one; the slots of stores that are gone are applied and emptied by
///   the next store opened on the directory.
pub struct JournaledStore<F: Fs = RealFs> {
    shared: Arc<Shared<F>>,
    writer: Option<JoinHandle<()>>,
    /// Encodes a save's text while its record is flushed.
    helper: Helper,
    replayed: usize,
}

impl<F: Fs> std::fmt::Debug for JournaledStore<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = lock(&self.shared.queue);
        f.debug_struct("JournaledStore")
            .field("queued", &q.jobs.len())
            .field("busy", &q.busy)
            .finish_non_exhaustive()
    }
}

/// How a [`JournaledStore`] journals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalOptions {
    /// The size of the store's journal slot, in bytes, written in full (zeros) when it is made
    /// (16 MiB by default; from 8 KiB to 1 GiB). A smaller slot made earlier grows to it, its
    /// records kept. A save larger than an empty slot (or than a checkpoint file may be, 64
    /// MiB) is saved as the hybrid store saves, with its own flushes. Most records are
    /// revisions of the execution's save before, a few KB.
    pub slot_bytes: u64,
    /// Whether records are written straight to the disk (`O_DIRECT` with `RWF_DSYNC`, through
    /// io_uring: the `caf-uring` crate) where the kernel and the file system allow it, the
    /// save's own work (its file's text) done on its own thread while the disk writes and
    /// flushes. Otherwise, or where they do not (not Linux, no io_uring, no `O_DIRECT`), a
    /// record is written, then flushed (`fdatasync`) while a helper thread does that work. On
    /// by default, unless the environment variable `CAF_JOURNAL_DIRECT` is `0`, `off` or
    /// `false`.
    pub direct: bool,
}

impl Default for JournalOptions {
    fn default() -> Self {
        let off = std::env::var("CAF_JOURNAL_DIRECT")
            .is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false"));
        Self {
            slot_bytes: DEFAULT_SLOT_BYTES,
            direct: !off,
        }
    }
}

impl<F: Fs> JournaledStore<F> {
    /// Journals the saves of `hybrid`. First applies what the journal slots of stores that are
    /// gone hold (saves acknowledged before a crash), and empties them.
    pub fn open(hybrid: HybridStore<F>) -> Result<Self> {
        Self::open_with(hybrid, JournalOptions::default())
    }

    /// [`JournaledStore::open`] with `options`.
    pub fn open_with(hybrid: HybridStore<F>, options: JournalOptions) -> Result<Self> {
        Self::open_or_back_with(hybrid, options)?.map_err(|(_, e)| e)
    }

    /// [`JournaledStore::open`], or the hybrid store back, with the reason, when its journal
    /// cannot be made (no space for it, a read-only directory).
    #[allow(clippy::type_complexity)]
    pub fn open_or_back(
        hybrid: HybridStore<F>,
    ) -> Result<std::result::Result<Self, (HybridStore<F>, Error)>> {
        Self::open_or_back_with(hybrid, JournalOptions::default())
    }

    /// [`JournaledStore::open_or_back`] with `options`.
    #[allow(clippy::type_complexity)]
    pub fn open_or_back_with(
        hybrid: HybridStore<F>,
        options: JournalOptions,
    ) -> Result<std::result::Result<Self, (HybridStore<F>, Error)>> {
        let dir = journal_dir(&hybrid);
        if !hybrid.sql().flushes_after_commit() {
            // Emptying the journal would not put its saves on disk.
            let e = std::io::Error::other("the database does not flush its own commits");
            return Ok(Err((hybrid, Error::io(&dir, e))));
        }
        let store_id = match store_id(&hybrid) {
            Ok(id) => id,
            Err(e) => return Ok(Err((hybrid, e))),
        };
        let size = options.slot_bytes.max(MIN_SLOT_BYTES);
        let (mut ours, mut others, records) = match Slot::take_all(hybrid.files().fs(), &dir, size)
        {
            Ok(Taken {
                ours: Some(ours),
                others,
                records,
            }) => (ours, others, records),
            Ok(_) => {
                let e = std::io::Error::other("no journal slot");
                return Ok(Err((hybrid, Error::io(&dir, e))));
            }
            Err(e) => return Ok(Err((hybrid, Error::io(&dir, e)))),
        };
        let lingers = options.direct && ours.write_directly();
        let held = ours.holds_records() || !others.is_empty();
        let replayed = apply(&hybrid, records, &store_id, &dir)?;
        let shared = Arc::new(Shared {
            mark: format!("{store_id}/{}", ours.name()),
            hybrid,
            slot: Mutex::new(ours),
            bases: Mutex::new(Bases::default()),
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                busy: false,
                failed: None,
                stop: false,
                waiting: false,
                deferred: false,
                lingering: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            pace: HashPace::default(),
            lingers: AtomicBool::new(lingers),
        });
        if held {
            let mut slot = lock(&shared.slot);
            empty(&shared, &mut slot)?;
            for other in &mut others {
                other.empty().map_err(|e| Error::io(other.path(), e))?;
            }
        }
        let writer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("caf-journaled".into())
                .spawn(move || write_queue(&shared))
                .map_err(|e| Error::io(&dir, e))?
        };
        // The helper wakes the writer for a job deferred when no save has come for a while.
        let helper = {
            let shared = Arc::downgrade(&shared);
            Helper::start_with_idle(DEFERRED_AT_MOST, move || {
                shared
                    .upgrade()
                    .is_some_and(|shared| wake_deferred_unless_saving(&shared))
            })
        };
        Ok(Ok(Self {
            shared,
            writer: Some(writer),
            helper,
            replayed,
        }))
    }

    /// How many journaled saves opening the store applied (saves acknowledged before a crash
    /// that had not reached the database).
    pub fn replayed(&self) -> usize {
        self.replayed
    }

    /// The hybrid store (reading it directly does not wait for the writer).
    pub fn hybrid(&self) -> &HybridStore<F> {
        &self.shared.hybrid
    }

    /// The hybrid store, once the writer has written every save made so far (a failed write
    /// is left for the next call to report).
    pub fn settled_hybrid(&self) -> &HybridStore<F> {
        drop(idle(&self.shared));
        &self.shared.hybrid
    }

    /// Waits until every save made so far is written, flushes the files (see
    /// [`HybridStore::flush`]) and reports a save that could not be written.
    pub fn flush(&self) -> Result<()> {
        self.settled()?.flush()
    }

    /// Stops as a power cut would: the writer drops what it has not written, the journal is
    /// not emptied, the hybrid store's files are not flushed (for tests of what opening does
    /// after one).
    #[cfg(feature = "test-support")]
    pub fn abandon(mut self) {
        {
            let mut q = lock(&self.shared.queue);
            q.jobs.clear();
            q.stop = true;
        }
        self.shared.work.notify_all();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        self.shared.hybrid.keep_unflushed_records();
        // Dropped without emptying its slot: the writer is gone.
    }

    /// Waits until the writer is idle; then, if it failed, writes the journal's saves again
    /// on this thread (the error, if that fails too).
    fn settled(&self) -> Result<&HybridStore<F>> {
        self.catch_up(&mut lock(&self.shared.slot))?;
        Ok(&self.shared.hybrid)
    }

    /// Waits for the writer; if it failed, saves what the journal holds the database lacks
    /// through the hybrid store's flushed save, and empties the journal. On failure, the
    /// next call tries again.
    fn catch_up(&self, slot: &mut Slot<F>) -> Result<()> {
        let Some(failed) = idle(&self.shared).failed.take() else {
            return Ok(());
        };
        let hybrid = &self.shared.hybrid;
        let again = slot
            .read()
            .map_err(|e| Error::io(slot.path(), e))
            .and_then(|records| {
                let held = Held {
                    name: slot.name(),
                    generation: slot.generation(),
                    records: (0..).zip(records).collect(),
                };
                apply(hybrid, vec![held], &store_id(hybrid)?, slot.path())
            })
            .and_then(|_| empty(&self.shared, slot));
        if again.is_err() {
            lock(&self.shared.queue).failed = Some(failed);
        }
        again
    }

    /// Waits for the writer, then empties the journal (before a delete: a deleted checkpoint
    /// must not come back from it).
    fn emptied(&self) -> Result<&HybridStore<F>> {
        let mut slot = lock(&self.shared.slot);
        self.catch_up(&mut slot)?;
        if slot.holds_records() {
            empty(&self.shared, &mut slot)?;
        }
        Ok(&self.shared.hybrid)
    }
}

fn journal_dir<F: Fs>(hybrid: &HybridStore<F>) -> std::path::PathBuf {
    crate::journal::dir(hybrid.files().root())
}

/// The directory's store id, which names its slots in the database.
fn store_id<F: Fs>(hybrid: &HybridStore<F>) -> Result<String> {
    let meta = hybrid.files().root().join(".caf");
    crate::unflushed::store_id(hybrid.files().fs(), &meta)
}

/// Applies and empties the journal slots of stores that are gone, for a store opened without
/// a journal of its own: how many saves it applied.
pub(crate) fn apply_left<F: Fs>(hybrid: &HybridStore<F>) -> Result<usize> {
    let dir = journal_dir(hybrid);
    let Taken {
        mut others,
        records,
        ..
    } = Slot::take_left(hybrid.files().fs(), &dir, None).map_err(|e| Error::io(&dir, e))?;
    if records.is_empty() {
        return Ok(0);
    }
    let applied = apply(hybrid, records, &store_id(hybrid)?, &dir)?;
    hybrid.sql().flush_commits().map_err(Error::from)?;
    for slot in &mut others {
        slot.empty().map_err(|e| Error::io(slot.path(), e))?;
    }
    Ok(applied)
}

/// Waits until the queue is empty and the writer idle.
fn idle<F: Fs>(shared: &Shared<F>) -> MutexGuard<'_, Queue> {
    let mut q = lock(&shared.queue);
    q.wake_deferred(&shared.work);
    while !q.jobs.is_empty() || q.busy {
        q = shared.done.wait(q).unwrap_or_else(|p| p.into_inner());
    }
    q
}

/// Empties `slot` once what it holds is on disk elsewhere: the writer idle, the database's log
/// flushed.
fn empty<F: Fs>(shared: &Shared<F>, slot: &mut Slot<F>) -> Result<()> {
    if let Some(failed) = &idle(shared).failed {
        // A save the writer could not write: only the journal holds it.
        return Err(Error::Backend {
            backend: shared.hybrid.sql().backend().name(),
            message: format!("the journal is not emptied: a save in it is not written ({failed})"),
            source: None,
        });
    }
    shared.hybrid.sql().flush_commits().map_err(Error::from)?;
    slot.empty().map_err(|e| Error::io(slot.path(), e))
}

/// Saves again what the journal slots `held` hold after their writer's mark (see
/// [`crate::journal_marks`]): the last record of each checkpoint, unless the database and the
/// checkpoint's file both hold exactly it, through the hybrid store's flushed save. A text is
/// saved as it is; a revision is applied to the checkpoint its base record holds (which may
/// come before the mark: those records are read too, and only those) and encoded. A slot's
/// last record that is a revision whose checkpoint cannot be encoded was never acknowledged
/// (its save withdrew it, or was cut off while doing so): it is left out. How many it saved.
fn apply<F: Fs>(
    hybrid: &HybridStore<F>,
    held: Vec<Held>,
    store_id: &str,
    journal: &std::path::Path,
) -> Result<usize> {
    let mut last: HashMap<CheckpointId, usize> = HashMap::new();
    // Each checkpoint to save again, with its file's bytes when they are known.
    let mut decoded: Vec<(Checkpoint, Option<Vec<u8>>)> = Vec::new();
    for slot in held {
        let mark = hybrid
            .sql()
            .journal_mark(&format!("{store_id}/{}", slot.name))
            .map_err(Error::from)?;
        let from = match mark {
            Some((generation, applied)) if generation == slot.generation => applied,
            _ => 0,
        };
        // The records revisions name (kept once read, for the revisions after them).
        let named: HashSet<u64> = slot
            .records
            .iter()
            .filter_map(|(_, r)| match r {
                Record::Revision(payload) => revision::base_of(payload).ok(),
                Record::Text(_) => None,
            })
            .collect();
        let end = slot.records.last().map(|(n, _)| *n);
        let mut bases: HashMap<u64, Checkpoint> = HashMap::new();
        for (n, record) in slot.records {
            if n < from && !named.contains(&n) {
                continue;
            }
            let unreadable = |message: String| Error::Backend {
                backend: hybrid.sql().backend().name(),
                message: format!(
                    "{}: journaled save {n} of {} cannot be applied: {message}",
                    journal.display(),
                    slot.name
                ),
                source: None,
            };
            let (checkpoint, mut sealed) = match record {
                Record::Text(text) => {
                    let sealed = Unsealed::from_text(text)
                        .ok_or_else(|| unreadable("no integrity line".into()))?
                        .seal();
                    let checkpoint = caf_core::format::decode(&sealed, &Limits::default())
                        .map_err(|e| unreadable(e.to_string()))?
                        .checkpoint;
                    (checkpoint, Some(sealed))
                }
                Record::Revision(payload) => {
                    let base =
                        revision::base_of(&payload).map_err(|e| unreadable(e.to_string()))?;
                    let base = bases.get(&base).filter(|_| base < n).ok_or_else(|| {
                        unreadable(format!("its base, record {base}, is not before it"))
                    })?;
                    let checkpoint =
                        revision::apply(base, &payload).map_err(|e| unreadable(e.to_string()))?;
                    (checkpoint, None)
                }
            };
            if sealed.is_none() && Some(n) == end {
                match encoded(&checkpoint) {
                    Ok(bytes) => sealed = Some(bytes),
                    // Never acknowledged: its save withdrew it.
                    Err(_) => continue,
                }
            }
            if named.contains(&n) {
                bases.insert(n, checkpoint.clone());
            }
            if n >= from {
                last.insert(checkpoint.id.clone(), decoded.len());
                decoded.push((checkpoint, sealed));
            }
        }
    }
    if decoded.is_empty() {
        return Ok(0);
    }
    let have = hybrid.sql().checksums().map_err(Error::from)?;
    let mut applied = 0;
    for (n, (checkpoint, sealed)) in decoded.into_iter().enumerate() {
        if last.get(&checkpoint.id) != Some(&n) {
            continue;
        }
        let sealed = match sealed {
            Some(sealed) => sealed,
            None => encoded(&checkpoint).map_err(|error| Error::Encode {
                id: checkpoint.id.to_string(),
                error,
            })?,
        };
        let integrity =
            caf_core::store::stated_integrity(&sealed).ok_or_else(|| Error::Backend {
                backend: hybrid.sql().backend().name(),
                message: format!(
                    "{}: journaled save {} has no checksum",
                    journal.display(),
                    checkpoint.id
                ),
                source: None,
            })?;
        let in_file = crate::files::checksum_in_file(&hybrid.files().path_of(&checkpoint.id));
        if have.get(&checkpoint.id) == Some(&integrity) && in_file.as_ref() == Some(&integrity) {
            continue;
        }
        hybrid.save_redacted(&checkpoint, FileBytes::Sealed(sealed))?;
        applied += 1;
    }
    Ok(applied)
}

/// The file bytes of a checkpoint rebuilt from a revision (an encoder's panic an error too).
fn encoded(checkpoint: &Checkpoint) -> std::result::Result<Vec<u8>, caf_core::format::EncodeError> {
    std::panic::catch_unwind(|| caf_core::format::encode(checkpoint))
        .unwrap_or_else(|_| Err(stopped_short()))
}

/// Why an encoding that panicked gave nothing.
fn stopped_short() -> caf_core::format::EncodeError {
    of_the_whole("encoding stopped short")
}

/// A save's encoding refused for the checkpoint as a whole (no one place in it).
fn of_the_whole(message: impl Into<String>) -> caf_core::format::EncodeError {
    caf_core::format::EncodeError::Invalid {
        pointer: String::new(),
        message: message.into(),
    }
}

/// At most this many queued saves go into one transaction of the writer.
const BATCH_SAVES: usize = 64;
/// A batch takes no more queued saves once it holds this many bytes.
const BATCH_BYTES: usize = 8 << 20;

/// Queued saves the writer writes together: records of one slot generation, in order.
struct Batch {
    saves: Vec<(Checkpoint, BatchFile)>,
    generation: u64,
    /// The number of its last record.
    last: u64,
}

/// The bytes a queued save's file holds in memory (none once in place).
fn held(file: &BatchFile) -> usize {
    match file {
        BatchFile::Text(text) => text.len(),
        BatchFile::Sealed(bytes) => bytes.len(),
        BatchFile::Placed(_) => 0,
    }
}

/// Drops the queued saves (the journal holds them: the next call writes them again) and takes
/// out the files their saves put in place. The writer is busy meanwhile, so that nobody who
/// waits for it to be idle writes those saves again from the journal while their files are
/// taken out. The queue, locked again, and not busy.
fn drop_queued<'a, F: Fs>(
    shared: &'a Shared<F>,
    mut q: MutexGuard<'a, Queue>,
) -> MutexGuard<'a, Queue> {
    let placed: Vec<CheckpointId> = q
        .jobs
        .drain(..)
        .filter(|(_, file, _, _)| matches!(file, BatchFile::Placed(_)))
        .map(|(c, _, _, _)| c.id)
        .collect();
    if !placed.is_empty() {
        q.busy = true;
        drop(q);
        for id in &placed {
            shared.hybrid.take_out_file(id);
        }
        q = lock(&shared.queue);
    }
    q.busy = false;
    q
}

impl Queue {
    /// Takes the next batch off the queue: the first job and those that follow it in the same
    /// slot generation, numbered one after another, at most [`BATCH_SAVES`] and about
    /// [`BATCH_BYTES`].
    fn take_batch(&mut self) -> Option<Batch> {
        let (checkpoint, file, generation, mut number) = self.jobs.pop_front()?;
        let mut bytes = held(&file);
        let mut batch = vec![(checkpoint, file)];
        while batch.len() < BATCH_SAVES
            && bytes < BATCH_BYTES
            && self
                .jobs
                .front()
                .is_some_and(|&(_, _, g, n)| g == generation && n == number + 1)
        {
            let Some((checkpoint, file, _, n)) = self.jobs.pop_front() else {
                break;
            };
            bytes += held(&file);
            number = n;
            batch.push((checkpoint, file));
        }
        Some(Batch {
            saves: batch,
            generation,
            last: number,
        })
    }
}

/// The writer's loop: takes the queued saves (those of one slot generation, in order, a batch at
/// most [`BATCH_SAVES`] and about [`BATCH_BYTES`]) and saves them in one transaction with the
/// mark after the last ([`HybridStore::save_batch`]). The agent does not wait for them, so when
/// it saves faster than they are written, the queue's saves share a commit.
fn write_queue<F: Fs>(shared: &Shared<F>) {
    // When the writer last finished a batch.
    let mut wrote: Option<Instant> = None;
    loop {
        let Batch {
            saves: batch,
            generation,
            last,
        } = {
            let mut q = lock(&shared.queue);
            loop {
                if q.failed.is_some() {
                    // Saves queued after one that failed wait in the journal for the next call
                    // to write them, in order. A caller may be waiting for the queue to empty
                    // ([`idle`]): it now is.
                    if !q.jobs.is_empty() {
                        q = drop_queued(shared, q);
                        shared.done.notify_all();
                        continue;
                    }
                } else if let Some(batch) = q.take_batch() {
                    q.busy = true;
                    q.deferred = false;
                    break batch;
                }
                if q.stop {
                    return;
                }
                q.waiting = true;
                q.lingering = shared.lingers.load(Ordering::Relaxed)
                    && wrote.is_some_and(|t| t.elapsed() < LINGER);
                q = if q.lingering {
                    shared
                        .work
                        .wait_timeout(q, DEFERRED_AT_MOST)
                        .map_or_else(|p| p.into_inner().0, |(q, _)| q)
                } else {
                    shared.work.wait(q).unwrap_or_else(|p| p.into_inner())
                };
                q.waiting = false;
                q.lingering = false;
            }
        };
        let hybrid = &shared.hybrid;
        let mark = JournalMark {
            slot: &shared.mark,
            generation,
            applied: last + 1,
        };
        let last_id = batch.last().map(|(c, _)| c.id.clone());
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            hybrid.save_batch(batch, &mark)
        }))
        .unwrap_or_else(|_| {
            Err(Error::Backend {
                backend: hybrid.sql().backend().name(),
                message: format!(
                    "writing checkpoint {} stopped short",
                    last_id.map_or_else(String::new, |id| id.to_string())
                ),
                source: None,
            })
        });
        let mut q = lock(&shared.queue);
        if let Err(e) = written {
            // The journal holds these saves and those queued after them: they are written
            // again, in order, by the next call.
            q.failed.get_or_insert(e);
            q = drop_queued(shared, q);
        }
        q.busy = false;
        drop(q);
        shared.done.notify_all();
        wrote = Some(Instant::now());
    }
}

impl<F: Fs> Drop for JournaledStore<F> {
    fn drop(&mut self) {
        lock(&self.shared.queue).stop = true;
        self.shared.work.notify_all();
        if let Some(w) = self.writer.take() {
            // It writes what is queued first.
            if w.join().is_err() {
                return;
            }
            // What the journal holds is on disk elsewhere after this, unless a write failed:
            // then the next store opened on the directory applies it.
            let mut slot = lock(&self.shared.slot);
            if lock(&self.shared.queue).failed.is_none() && slot.holds_records() {
                let _ = self
                    .shared
                    .hybrid
                    .sql()
                    .flush_commits()
                    .map(|()| slot.empty());
            }
        }
    }
}

/// A journaled save, ready for the writer.
struct Done {
    /// The writer's copy of the checkpoint.
    owned: Checkpoint,
    /// The next revision's base.
    base: Checked,
    text: Unsealed,
}

/// What a save does once its text is encoded: the checkpoint's copy for the next revision; and
/// the file's checksum when the writer is behind and the flush is long enough (see
/// [`HashPace`]).
fn after_flush(pace: &HashPace, writer_behind: bool, checked: Checked, mut text: Unsealed) -> Done {
    let base = checked.clone();
    let owned = checked.into_inner();
    if pace.hash_during_flush(text.len(), writer_behind) {
        let started = Instant::now();
        let checksum = text.compute_checksum();
        pace.hashed(text.len(), started.elapsed());
        text.keep_checksum(checksum);
    }
    Done { base, owned, text }
}

impl<F: Fs> JournaledStore<F> {
    /// Queues record `number`, journaled, for the writer; keeps its checkpoint as its
    /// execution's next base: the save's summary.
    ///
    /// A save that may `defer` (its text encoded by the helper, which then waits for idle
    /// work; see [`DEFER_BELOW`]) does not wake a waiting writer: the next save's helper does,
    /// during that save's flush (or the helper, once idle, [`DEFERRED_AT_MOST`] later; or
    /// whoever waits for the writer).
    ///
    /// When the writer has [`PLACE_BEHIND`] saves or more queued and `helped`, the save puts
    /// its file in place itself first (not flushed, as the writer would): the writer then has
    /// only its rows to write. A writer that is behind (waiting for the database, which other
    /// processes are writing) would otherwise hold every queued save's text, and the saves
    /// meanwhile would encode into new memory, not into buffers given back (under eight
    /// writers, two fifths of the helper's CPU went to page faults: docs/benchmarks.md). A
    /// file the save cannot put in place is queued sealed: the writer tries again, and fails
    /// as it fails on any file it cannot write (the journal holds the save).
    fn queue(
        &self,
        slot: &Slot<F>,
        bases: &mut Bases,
        number: u64,
        done: Done,
        helped: bool,
        defer: Defer,
    ) -> CheckpointSummary {
        let len = done.text.len();
        let summary = CheckpointSummary::of(&done.owned, len as u64);
        bases.keep(slot.epoch(), number, done.base, len);
        let behind = helped && lock(&self.shared.queue).jobs.len() >= PLACE_BEHIND;
        let file = if behind {
            self.shared.hybrid.try_place(&done.owned, done.text)
        } else {
            BatchFile::Text(done.text)
        };
        let job = (done.owned, file, slot.generation(), number);
        let mut q = lock(&self.shared.queue);
        q.jobs.push_back(job);
        if q.waiting {
            // Woken by the next save (its helper, or itself) while that save's record is
            // flushed, or by the helper once idle, or by the writer itself if it lingers (within
            // [`DEFERRED_AT_MOST`]): waking a thread costs the waker a few microseconds, which
            // this save would pay after its flush.
            let deferred = match defer {
                Defer::No => false,
                Defer::ToHelper => true,
                Defer::ToNextSave => q.lingering,
            };
            if deferred {
                q.deferred = true;
            } else {
                self.shared.work.notify_one();
            }
        }
        summary
    }
}

impl<F: Fs> CheckpointStore for JournaledStore<F> {
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary> {
        let hybrid = &self.shared.hybrid;
        let files = hybrid.files();
        let encode_error = |error| Error::Encode {
            id: checkpoint.id.to_string(),
            error,
        };
        let mut owned = files
            .redactor()
            .redact_for(checkpoint, self)
            .checkpoint
            .into_owned();
        let mut slot = lock(&self.shared.slot);
        let (failed, writer_behind) = {
            let q = lock(&self.shared.queue);
            // A job deferred is not a writer behind: it waits for this save's helper.
            (
                q.failed.is_some(),
                q.busy || q.jobs.len() > usize::from(q.deferred),
            )
        };
        if failed {
            self.catch_up(&mut slot)?;
        }
        let mut bases = lock(&self.shared.bases);
        // A revision of the execution's save before, when the slot holds it: the helper encodes
        // its text while the disk flushes the record.
        let revised = match bases.take(&owned.execution_id, slot.epoch()) {
            Some((number, base)) => {
                let mut record = Vec::with_capacity(16 << 10);
                revision::encode_into(number, base.get(), &mut owned, &mut record)
                    .map_err(|e| encode_error(of_the_whole(e.to_string())))?;
                Some((record, base))
            }
            None => None,
        };
        // What encoding would refuse, refused before anything is journaled (what the base
        // holds was checked when it was saved).
        let checked = match &revised {
            Some((_, base)) => Checked::revising(owned, base),
            None => Checked::new(owned),
        };
        let mut checked = Some(checked.map_err(encode_error)?);
        if let Some((record, base)) = revised {
            let mut pending = None;
            let quick = self.shared.pace.appends_quicker(DEFER_BELOW);
            // Written directly, the record needs no thread to wait for its flush: this one does
            // the work meanwhile, and no helper is woken (docs/benchmarks.md, 2026-11-29).
            let inline = slot.overlaps();
            let mut defer = match (quick, inline) {
                (false, _) => Defer::No,
                (true, false) => Defer::ToHelper,
                (true, true) => Defer::ToNextSave,
            };
            let started = Instant::now();
            let appended = slot.append_then(Kind::Revision, &record, || {
                if let Some(checked) = checked.take() {
                    let shared = Arc::clone(&self.shared);
                    let task = move || {
                        // The base's memory is given back here, not on the saving thread (or
                        // during the flush, on it).
                        drop(base);
                        let text = shared.hybrid.files().encode_checked_unsealed(&checked)?;
                        let done = after_flush(&shared.pace, writer_behind, checked, text);
                        wake_deferred(&shared);
                        Ok(done)
                    };
                    let running = if inline {
                        helper::Pending::Done(
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).ok(),
                        )
                    } else {
                        self.helper.run_idle(task, defer == Defer::ToHelper)
                    };
                    // Without a helper thread, nobody would wake the writer later.
                    if defer == Defer::ToHelper && !running.on_helper() {
                        defer = Defer::No;
                    }
                    pending = Some(running);
                }
            });
            if inline && !slot.overlaps() {
                // A direct write failed: the slot writes as any other from now on, its saves
                // waking the helper.
                self.shared.lingers.store(false, Ordering::Relaxed);
            }
            let appended = appended.map_err(|e| Error::io(slot.path(), e))?;
            if let (Some(number), Some(pending)) = (appended, pending) {
                // The append's time is the disk's unless the work outlasted it.
                if slot.waited_for_the_disk() {
                    self.shared.pace.appended(started.elapsed());
                }
                let done = pending
                    .wait()
                    .unwrap_or_else(|| Err(encode_error(stopped_short())));
                return match done {
                    Ok(done) => Ok(self.queue(&slot, &mut bases, number, done, true, defer)),
                    Err(e) => {
                        // Not saved: not journaled either.
                        slot.withdraw_last(number)
                            .map_err(|e| Error::io(slot.path(), e))?;
                        Err(e)
                    }
                };
            }
            // No room: the text, in the slot emptied.
        }
        let Some(checked) = checked else {
            // Handed to the helper only when the revision was appended.
            return Err(encode_error(of_the_whole(
                "the checkpoint went to a save that did not happen",
            )));
        };
        // The save's text.
        let text = files.encode_checked_unsealed(&checked)?;
        let started = Instant::now();
        let mut appended = slot.append_then(Kind::Text, text.text(), || {});
        if let Ok(Some(_)) = appended {
            self.shared.pace.appended(started.elapsed());
        } else if matches!(appended, Ok(None)) && slot.holds_records() {
            // Full: emptied once the writer has written what it holds.
            self.catch_up(&mut slot)?;
            empty(&self.shared, &mut slot)?;
            appended = slot.append_then(Kind::Text, text.text(), || {});
        }
        match appended.map_err(|e| Error::io(slot.path(), e))? {
            Some(number) => {
                // After the flush here: hashing now would only add to the save's time.
                let done = after_flush(&self.shared.pace, false, checked, text);
                Ok(self.queue(&slot, &mut bases, number, done, false, Defer::No))
            }
            // Larger than the journal: saved as the hybrid store saves (the writer is idle).
            None => hybrid.save_redacted(checked.get(), FileBytes::Unsealed(text)),
        }
    }

    fn save_encoded(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<CheckpointSummary> {
        self.settled()?.save_encoded(checkpoint, bytes)
    }

    fn load(&self, id: &CheckpointId) -> Result<Checkpoint> {
        self.settled()?.load(id)
    }

    fn latest(&self, execution_id: &ExecutionId) -> Result<Option<Checkpoint>> {
        self.settled()?.latest(execution_id)
    }

    fn load_with_source(&self, id: &CheckpointId) -> Result<(Checkpoint, LoadSource)> {
        self.settled()?.load_with_source(id)
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>> {
        self.settled()?.list(filter)
    }

    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        self.settled()?.summary(id)
    }

    fn delete(&self, id: &CheckpointId) -> Result<bool> {
        self.emptied()?.delete(id)
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize> {
        self.emptied()?.delete_execution(execution_id)
    }

    fn damaged(&self) -> Result<Vec<DamagedCheckpoint>> {
        self.settled()?.damaged()
    }

    fn record_pruned(&self, stones: &[Tombstone]) -> Result<()> {
        self.settled()?.record_pruned(stones)
    }

    fn pruned(&self) -> Result<HashMap<CheckpointId, Tombstone>> {
        self.settled()?.pruned()
    }

    fn describe(&self) -> String {
        self.shared.hybrid.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqlStore;
    use caf_core::format::encode_unsealed;
    use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, MemoryStore};
    use caf_core::{FileStore, RuntimeState};
    use std::time::Duration;

    /// A journaled store in `dir` (files in `files/`), and its database's URL.
    fn journaled_in(dir: &std::path::Path) -> (JournaledStore, String) {
        journaled_with(dir, JournalOptions::default().direct)
    }

    /// [`journaled_in`], its records written `direct`ly where the disk allows.
    fn journaled_with(dir: &std::path::Path, direct: bool) -> (JournaledStore, String) {
        let url = format!("sqlite://{}", dir.join("caf.db").display());
        let hybrid = HybridStore::new(
            FileStore::open(dir.join("files")).unwrap(),
            SqlStore::open(&url).unwrap(),
        )
        .unwrap();
        let options = JournalOptions {
            direct,
            ..JournalOptions::default()
        };
        (JournaledStore::open_with(hybrid, options).unwrap(), url)
    }

    /// A store whose records are written directly, or `None` (said) where this machine's
    /// kernel or file system cannot.
    fn direct_or_skip(dir: &std::path::Path) -> Option<(JournaledStore, String)> {
        let (store, url) = journaled_with(dir, true);
        if lock(&store.shared.slot).overlaps() {
            Some((store, url))
        } else {
            eprintln!("SKIPPED: no direct appends on this machine (io_uring, O_DIRECT)");
            None
        }
    }

    /// A save queued after the writer failed is dropped from the queue by the writer (the
    /// journal keeps it): whoever waits for the queue to empty meanwhile is woken.
    #[test]
    fn a_caller_waiting_for_the_queue_is_woken_when_a_failed_writer_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = journaled_in(dir.path());
        let manager = CheckpointManager::new(MemoryStore::new());
        let mut state = RuntimeState::new("agent");
        let options = CheckpointOptions::new(CheckpointReason::Manual);
        let checkpoint = manager.checkpoint(&mut state, options).unwrap();
        let unsealed = encode_unsealed(&checkpoint, 0).unwrap();
        {
            // As when the writer failed just after a save checked for it and before that
            // save queued its job.
            let mut q = lock(&store.shared.queue);
            q.failed = Some(Error::Backend {
                backend: "sqlite",
                message: "a failure for the test".into(),
                source: None,
            });
            q.jobs
                .push_back((checkpoint, BatchFile::Text(unsealed), 0, 0));
        }
        let shared = Arc::clone(&store.shared);
        let (woken, waiting) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let q = idle(&shared);
            woken.send(q.jobs.len()).unwrap();
        });
        // Give the waiter time to wait before the writer is woken.
        std::thread::sleep(Duration::from_millis(50));
        store.shared.work.notify_all();
        let left = waiting.recv_timeout(Duration::from_secs(10));
        assert_eq!(
            left,
            Ok(0),
            "the caller waiting for the queue was not woken"
        );
        waiter.join().unwrap();
        // The next call writes the journal's saves again; nothing was journaled here.
        lock(&store.shared.queue).failed = None;
    }

    /// A save that hashed its file during its flush (as under load) writes the same files and
    /// rows as one whose writer hashed it: every file proves its checksum, and the database
    /// agrees with the files.
    #[test]
    fn files_hashed_during_the_flush_are_the_files_the_writer_would_write() {
        let dir = tempfile::tempdir().unwrap();
        let (store, url) = journaled_in(dir.path());
        store.shared.pace.always();
        let saved = crate::journal_revision::tests::steps(5);
        for checkpoint in &saved {
            store.save(checkpoint).unwrap();
        }
        store.flush().unwrap();
        assert!(
            store.shared.pace.hashed_any(),
            "no save hashed during its flush"
        );
        let files = FileStore::open(dir.path().join("files")).unwrap();
        let sql = SqlStore::open(&url).unwrap();
        for c in &saved {
            let bytes = std::fs::read(files.path_of(&c.id)).unwrap();
            assert_eq!(bytes, caf_core::format::encode(c).unwrap(), "{}", c.id);
            let decoded = caf_core::format::decode(&bytes, &Limits::default()).unwrap();
            assert_eq!(&decoded.checkpoint, c);
            assert_eq!(&sql.load_checkpoint(&c.id).unwrap(), c);
        }
    }

    /// Holds the database's writer lock (`DB-writer.lock`, see `group_commit.rs`) as another
    /// process writing would: the store's writer waits for it before each transaction.
    fn hold_writer_lock(dir: &std::path::Path) -> std::fs::File {
        let lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("caf.db-writer.lock"))
            .unwrap();
        lock.lock().unwrap();
        lock
    }

    /// Waits until the writer has taken a batch and is waiting for its turn (the batch's files
    /// are in place by then).
    fn writer_waiting<F: Fs>(store: &JournaledStore<F>) {
        for _ in 0..1000 {
            if lock(&store.shared.queue).busy {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("the writer took no batch");
    }

    /// Waits until the writer waits for work, the queue empty.
    fn writer_idle<F: Fs>(store: &JournaledStore<F>) {
        for _ in 0..2000 {
            let q = lock(&store.shared.queue);
            if q.waiting && q.jobs.is_empty() && !q.busy {
                return;
            }
            drop(q);
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("the writer did not come to wait for work");
    }

    /// How many checkpoints another connection to the database sees, once it sees `want` (or
    /// after ten seconds).
    fn seen_by_another(url: &str, want: usize) -> usize {
        let other = SqlStore::open(url).unwrap();
        let mut seen = 0;
        for _ in 0..2000 {
            seen = other
                .list_checkpoints(&ListFilter::default())
                .unwrap()
                .len();
            if seen >= want {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        seen
    }

    /// A store in a new directory (with a helper that is never idle unless `helper_idles`)
    /// that has saved the first of `steps` steps, then, its writer waiting for work and its
    /// last append as if it took `append`, the second: the directory, the store, its
    /// database's URL and the steps.
    fn second_save_after(
        steps: usize,
        helper_idles: bool,
        append: Duration,
    ) -> (tempfile::TempDir, JournaledStore, String, Vec<Checkpoint>) {
        let dir = tempfile::tempdir().unwrap();
        // The helper's part: records written, then flushed.
        let (mut store, url) = journaled_with(dir.path(), false);
        if !helper_idles {
            store.helper = Helper::start();
        }
        let saved = crate::journal_revision::tests::steps(steps);
        store.save(&saved[0]).unwrap();
        writer_idle(&store);
        store.shared.pace.appended(append);
        store.save(&saved[1]).unwrap();
        (dir, store, url, saved)
    }

    /// A revision's save does not wake a waiting writer; with no save after it and no read,
    /// the helper wakes the writer once idle, and other processes see the save.
    #[test]
    fn a_save_the_writer_was_not_woken_for_is_written_once_the_helper_is_idle() {
        // As after a quick flush, whatever this disk's flushes take: the save defers.
        let (_dir, store, url, _) = second_save_after(2, true, Duration::ZERO);
        assert_eq!(
            seen_by_another(&url, 2),
            2,
            "the second save was never written"
        );
        assert!(!lock(&store.shared.queue).deferred);
    }

    /// After a slow append (many agents on one disk), a save wakes a waiting writer itself
    /// (the helper, never idle, cannot).
    #[test]
    fn after_a_slow_append_a_save_wakes_the_writer_itself() {
        let (_dir, store, url, _) = second_save_after(2, false, DEFER_BELOW);
        assert!(!lock(&store.shared.queue).deferred);
        assert_eq!(
            seen_by_another(&url, 2),
            2,
            "the save did not wake the writer"
        );
    }

    /// With a helper that is never idle, a save the writer was not woken for waits in the
    /// queue until the next save's helper wakes the writer, or until a read waits for the
    /// writer: both see it written.
    #[test]
    fn the_next_saves_helper_or_a_read_wakes_the_writer_for_a_save_it_was_not_woken_for() {
        let (dir, store, url, saved) = second_save_after(4, false, Duration::ZERO);
        {
            let q = lock(&store.shared.queue);
            assert!(q.deferred && q.waiting, "the writer was not woken");
            assert_eq!(q.jobs.len(), 1);
        }
        assert_eq!(
            SqlStore::open(&url)
                .unwrap()
                .list_checkpoints(&ListFilter::default())
                .unwrap()
                .len(),
            1
        );
        // The next save's helper wakes the writer for it.
        store.shared.pace.appended(Duration::ZERO);
        store.save(&saved[2]).unwrap();
        assert!(
            seen_by_another(&url, 2) >= 2,
            "the next save's helper did not wake the writer"
        );
        // A read waits for the writer, which it wakes (for the third save, when that was
        // deferred in turn).
        assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 3);
        writer_idle(&store);
        store.shared.pace.appended(Duration::ZERO);
        store.save(&saved[3]).unwrap();
        assert!(lock(&store.shared.queue).deferred);
        assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 4);
        all_saved(&store, dir.path(), &url, &saved);
    }

    /// The database and the files hold exactly `saved`, and nothing is damaged.
    fn all_saved(store: &JournaledStore, dir: &std::path::Path, url: &str, saved: &[Checkpoint]) {
        assert!(store.damaged().unwrap().is_empty());
        let files = FileStore::open(dir.join("files")).unwrap();
        let sql = SqlStore::open(url).unwrap();
        for c in saved {
            let bytes = std::fs::read(files.path_of(&c.id)).unwrap();
            assert_eq!(bytes, caf_core::format::encode(c).unwrap(), "{}", c.id);
            assert_eq!(&sql.load_checkpoint(&c.id).unwrap(), c);
        }
        assert_eq!(sql.list(&ListFilter::default()).unwrap().len(), saved.len());
    }

    /// While the writer waits for the database (held by another writer), the saves queued
    /// behind it put their own files in place: their texts are not held meanwhile. Once the
    /// writer gets its turn it writes their rows, and the store holds every save.
    #[test]
    fn saves_behind_a_waiting_writer_put_their_files_in_place_and_the_writer_adds_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (store, url) = journaled_in(dir.path());
        let saved = crate::journal_revision::tests::steps(8);
        let held = hold_writer_lock(dir.path());
        store.save(&saved[0]).unwrap();
        writer_waiting(&store);
        for c in &saved[1..] {
            store.save(c).unwrap();
        }
        let files = FileStore::open(dir.path().join("files")).unwrap();
        {
            let q = lock(&store.shared.queue);
            assert!(q.busy, "the writer is waiting for its turn");
            let placed: Vec<bool> = q
                .jobs
                .iter()
                .map(|(_, file, _, _)| matches!(file, BatchFile::Placed(_)))
                .collect();
            // Those queued behind PLACE_BEHIND others or more placed their files.
            let expected: Vec<bool> = (0..placed.len()).map(|i| i >= PLACE_BEHIND).collect();
            assert_eq!(placed, expected);
        }
        let last = saved.last().unwrap();
        assert_eq!(
            std::fs::read(files.path_of(&last.id)).unwrap(),
            caf_core::format::encode(last).unwrap(),
            "the last save's file is in place before its rows"
        );
        drop(held);
        store.flush().unwrap();
        all_saved(&store, dir.path(), &url, &saved);
    }

    /// A save behind a waiting writer whose file cannot be put in place queues its sealed
    /// bytes: the writer tries again and fails, as on any file it cannot write (the journal
    /// holds the save), taking out the files of its batch, those the saves placed included.
    /// The next call writes the journal's saves again and reports why it cannot; once it can,
    /// every save is in the store.
    #[test]
    fn a_file_a_save_behind_cannot_place_is_left_to_the_writer_and_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let (store, url) = journaled_in(dir.path());
        let saved = crate::journal_revision::tests::steps(8);
        let files = FileStore::open(dir.path().join("files")).unwrap();
        // A directory where the sixth save's file goes: no file can be renamed over it.
        let blocked = files.path_of(&saved[5].id);
        std::fs::create_dir_all(&blocked).unwrap();
        let held = hold_writer_lock(dir.path());
        store.save(&saved[0]).unwrap();
        writer_waiting(&store);
        for c in &saved[1..6] {
            store.save(c).unwrap();
        }
        {
            let q = lock(&store.shared.queue);
            assert!(q.failed.is_none(), "the save left its file to the writer");
            let (last, file, _, _) = q.jobs.back().unwrap();
            assert_eq!(last.id, saved[5].id);
            assert!(matches!(file, BatchFile::Sealed(_)), "queued sealed");
            let placed = q
                .jobs
                .iter()
                .filter(|j| matches!(j.1, BatchFile::Placed(_)));
            assert!(placed.count() > 0, "saves before it placed theirs");
        }
        drop(held);
        // The writer's batch of the rest failed: none of its files stays without its rows.
        assert!(idle(&store.shared).failed.is_some());
        for c in &saved[1..5] {
            assert!(!files.path_of(&c.id).exists(), "{} taken out", c.id);
        }
        let error = store.flush().unwrap_err().to_string();
        assert!(error.contains(&saved[5].id.to_string()), "{error}");
        std::fs::remove_dir(&blocked).unwrap();
        for c in &saved[6..] {
            store.save(c).unwrap();
        }
        store.flush().unwrap();
        all_saved(&store, dir.path(), &url, &saved);
    }

    /// Written directly, a save does its own work during the flush (no helper), and a store
    /// abandoned after such saves (a crash: nothing of them reached the database or the files)
    /// gives them all back when opened again, from records the buffered reader reads.
    #[cfg(feature = "test-support")]
    #[test]
    fn records_written_directly_are_applied_when_the_store_opens_again() {
        let dir = tempfile::tempdir().unwrap();
        let Some((store, url)) = direct_or_skip(dir.path()) else {
            return;
        };
        let saved = crate::journal_revision::tests::steps(12);
        // Held by another connection: the writer writes nothing while the saves are made.
        let held = hold_writer_lock(dir.path());
        store.save(&saved[0]).unwrap();
        writer_waiting(&store);
        for c in &saved[1..] {
            store.save(c).unwrap();
        }
        assert!(
            lock(&store.shared.slot).overlaps(),
            "still written directly"
        );
        // The writer writes the batch it holds (the first save) once the lock is let go, then
        // stops; the others are dropped.
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        store.abandon();
        release.join().unwrap();
        let (again, _) = journaled_with(dir.path(), true);
        assert_eq!(
            again.replayed(),
            saved.len() - 1,
            "the saves dropped applied"
        );
        all_saved(&again, dir.path(), &url, &saved);
    }

    /// A save written directly leaves its job to a writer that lingers after a batch: the
    /// writer writes it by itself, with no other call. A writer that waits to be woken (no
    /// batch lately) is woken by the save.
    #[test]
    fn a_lingering_writer_takes_a_direct_saves_job_by_itself_and_a_waiting_one_is_woken() {
        let dir = tempfile::tempdir().unwrap();
        let Some((store, url)) = direct_or_skip(dir.path()) else {
            return;
        };
        let saved = crate::journal_revision::tests::steps(3);
        store.save(&saved[0]).unwrap();
        writer_idle(&store);
        store.shared.pace.appended(Duration::ZERO);
        store.save(&saved[1]).unwrap();
        assert_eq!(seen_by_another(&url, 2), 2, "the lingering writer wrote it");
        // Long after the last batch the writer no longer lingers: the save wakes it.
        std::thread::sleep(LINGER + Duration::from_millis(30));
        writer_idle(&store);
        assert!(!lock(&store.shared.queue).lingering);
        store.shared.pace.appended(Duration::ZERO);
        store.save(&saved[2]).unwrap();
        assert!(
            !lock(&store.shared.queue).deferred,
            "not left to a writer that waits to be woken"
        );
        assert_eq!(seen_by_another(&url, 3), 3, "the save woke the writer");
        all_saved(&store, dir.path(), &url, &saved);
    }

    /// Records written directly, then the slot written by other means (a record withdrawn),
    /// then directly again: the journal reads back exactly the records that count.
    #[test]
    fn a_withdrawn_record_between_direct_appends_leaves_the_slot_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slots");
        let mut taken = Slot::take_all(&caf_core::store::RealFs, &path, 64 << 10).unwrap();
        let slot = taken.ours.as_mut().unwrap();
        if !slot.write_directly() {
            eprintln!("SKIPPED: no direct appends on this machine (io_uring, O_DIRECT)");
            return;
        }
        let mut ran = 0;
        let a = slot.append_then(Kind::Text, b"first", || ran += 1).unwrap();
        let b = slot
            .append_then(Kind::Text, &[b'x'; 5000], || ran += 1)
            .unwrap();
        assert_eq!((a, b, ran), (Some(0), Some(1), 2));
        slot.withdraw_last(1).unwrap();
        slot.append_then(Kind::Text, b"second", || ran += 1)
            .unwrap();
        assert!(slot.overlaps(), "still written directly");
        drop(taken);
        let mut again = Slot::take_all(&caf_core::store::RealFs, &path, 64 << 10).unwrap();
        let texts: Vec<Vec<u8>> = again.records[0]
            .records
            .iter()
            .map(|(_, r)| match r {
                crate::journal::Record::Text(t) => t.clone(),
                other => panic!("not a text: {other:?}"),
            })
            .collect();
        assert_eq!(texts, vec![b"first".to_vec(), b"second".to_vec()]);
        again.ours.as_mut().unwrap().empty().unwrap();
    }
}
