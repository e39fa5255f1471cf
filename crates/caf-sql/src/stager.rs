//! [`Stager`]: a thread that writes a hybrid save's file while the caller writes its rows.
//!
//! A [`crate::HybridStore`] save writes its file beside its place (staging: on the agent-run
//! workload's median checkpoint, ~45 µs of opening a spare file and writing 84 KB into it) and
//! writes its rows in a database transaction (~200 µs). Neither needs the other until the
//! commit, which must not happen if the file could not be written. So the file goes to this
//! thread, the rows are written meanwhile, and the save waits for the file just before it
//! commits ([`Staging::wait`]): the same guarantees, one step fewer in series.
//!
//! A file may come unsealed ([`caf_core::format::Unsealed`]): the thread then hashes it too, so
//! that the checksum (~50 µs for the agent-run workload's median 84 KB) is computed while the
//! rows that do not need it are written: the usual save writes its `checkpoints` row first and
//! the checksum into it last, any other writes that row after the items
//! ([`crate::checkpoint::save`]); a save that replaces a checkpoint waits for it first.
//!
//! The thread takes a file only when it is not busy with another (nothing waits in a queue), so
//! a save never waits, holding its transaction's locks, for other saves' files: when the thread
//! is busy with another thread's save, or could not be started, the file is written in the
//! caller's thread before its rows, as before.
//!
//! Waking the blocked thread takes a while: on the 2-vCPU machine of docs/benchmarks.md it
//! started its job a median 40–50 µs after it was handed one, and the save then waited for the
//! file at its commit. So a save [`Stager::nudge`]s the thread before it redacts and encodes
//! the checkpoint: the thread wakes meanwhile, then waits for the file spinning (yielding its
//! core to whoever needs it), for at most [`SPIN`], rather than blocking again.

use caf_core::format::Unsealed;
use caf_core::store::{working_for, Fs, StagedFile};
use caf_core::{CheckpointSummary, Error, FileStore, Result};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A file to write.
type Job = Box<dyn FnOnce() + Send>;

/// A file's bytes: whole, or still to be sealed with their checksum.
pub(crate) enum FileBytes {
    Sealed(Vec<u8>),
    Unsealed(Unsealed),
}

impl FileBytes {
    /// The length of the file.
    pub fn len(&self) -> usize {
        match self {
            Self::Sealed(bytes) => bytes.len(),
            Self::Unsealed(unsealed) => unsealed.len(),
        }
    }

    fn into_sealed(self) -> Vec<u8> {
        match self {
            Self::Sealed(bytes) => bytes,
            Self::Unsealed(unsealed) => unsealed.seal(),
        }
    }
}

/// How long, at most, a nudged thread waits for its file, spinning, before it blocks again:
/// longer than encoding the agent-run workload's largest checkpoints takes.
const SPIN: Duration = Duration::from_micros(300);

/// Where the thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Blocked until it is nudged or handed a file.
    Idle,
    /// Nudged: waiting for a file, spinning (see the module docs).
    Awake,
    /// Handed a file: writing it.
    Busy,
}

/// The file handed to the thread, and where the thread is.
struct Slot {
    phase: Phase,
    job: Option<Job>,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    slot: Mutex<Slot>,
    wake: Condvar,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            phase: Phase::Idle,
            job: None,
            stop: false,
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The thread's loop: runs each file it is handed; blocked while idle; after a nudge, waits
/// for its file spinning, for at most [`SPIN`].
fn serve(shared: &Shared) {
    let mut slot = shared.lock();
    let mut spin_until: Option<Instant> = None;
    loop {
        if let Some(job) = slot.job.take() {
            drop(slot);
            job();
            slot = shared.lock();
            slot.phase = Phase::Idle;
            spin_until = None;
            continue;
        }
        if slot.stop {
            return;
        }
        if slot.phase == Phase::Idle {
            slot = shared
                .wake
                .wait(slot)
                .unwrap_or_else(PoisonError::into_inner);
            continue;
        }
        // Nudged: the file comes soon.
        let until = *spin_until.get_or_insert_with(|| Instant::now() + SPIN);
        if Instant::now() >= until {
            slot.phase = Phase::Idle;
            spin_until = None;
            continue;
        }
        drop(slot);
        std::thread::yield_now();
        slot = shared.lock();
    }
}

/// The thread, with the slot it takes its files from; see the module docs.
pub(crate) struct Stager {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Stager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stager")
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl Stager {
    /// Starts the thread (a stager without one writes every file in the caller's thread).
    pub fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("caf-stager".into())
                .spawn(move || serve(&shared))
                .ok()
        };
        Self { shared, thread }
    }

    /// Wakes the thread ahead of a file this thread is about to hand it (see the module docs);
    /// nothing if it is not idle.
    pub fn nudge(&self) {
        if self.thread.is_none() {
            return;
        }
        let mut slot = self.shared.lock();
        if slot.phase == Phase::Idle {
            slot.phase = Phase::Awake;
            drop(slot);
            self.shared.wake.notify_one();
        }
    }

    /// Starts writing the file of the checkpoint `summary` sums up, encoded as `bytes` (sealed
    /// first, if they are not), into `files`'s staging place ([`FileStore::stage_summarized`]).
    pub fn stage<F: Fs>(
        &self,
        files: &Arc<FileStore<F>>,
        summary: CheckpointSummary,
        bytes: FileBytes,
    ) -> Staging<F> {
        let path = files.path_of(&summary.id);
        let (done, result) = mpsc::sync_channel(1);
        let files = Arc::clone(files);
        let caller = std::thread::current().id();
        let job: Job = Box::new(move || {
            // Part of the caller's save (for the test double's faults, too).
            let staged = working_for(caller, || {
                let sealed = bytes.into_sealed();
                let staged = files.stage_summarized(summary, &sealed);
                files.give_back(sealed);
                staged
            });
            // Before the result is sent: a caller that has it may then take the file store
            // back ([`crate::HybridStore::into_parts`]).
            drop(files);
            let _ = done.send(staged);
        });
        let mut job = Some(job);
        if self.thread.is_some() {
            let mut slot = self.shared.lock();
            if slot.phase != Phase::Busy && !slot.stop {
                let idle = slot.phase == Phase::Idle;
                slot.job = job.take();
                slot.phase = Phase::Busy;
                drop(slot);
                if idle {
                    self.shared.wake.notify_one();
                }
            }
        }
        // The thread is busy (another thread's save) or was never started: write the file
        // here (its result waits in the channel all the same).
        if let Some(job) = job {
            job();
        }
        Staging {
            result: Some(result),
            path,
        }
    }
}

impl Drop for Stager {
    /// Stops the thread, after the file it was handed, if any.
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A file being written by the [`Stager`] (or already written by the caller).
pub(crate) struct Staging<F: Fs> {
    /// Where its result comes; taken by [`Staging::wait`].
    result: Option<Receiver<Result<StagedFile<F>>>>,
    /// Where the file goes (for the error of a writer that stopped).
    path: PathBuf,
}

impl<F: Fs> Staging<F> {
    /// The staged file, once written.
    pub fn wait(mut self) -> Result<StagedFile<F>> {
        match self.result.take().map(|r| r.recv()) {
            Some(Ok(staged)) => staged,
            // The job was dropped unrun: the thread stopped.
            Some(Err(_)) | None => Err(Error::io(
                &self.path,
                std::io::Error::other("the thread writing the checkpoint file stopped"),
            )),
        }
    }
}

impl<F: Fs> Drop for Staging<F> {
    /// A file nobody waits for (the save failed first) is still waited for, so that the
    /// thread no longer holds the file store when the save returns; the staged file is then
    /// dropped, which removes it.
    fn drop(&mut self) {
        if let Some(result) = &self.result {
            let _ = result.recv();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use caf_core::format::{encode, encode_unsealed, Checkpoint, CheckpointReason};
    use caf_core::{CheckpointId, ExecutionId, Timestamp};

    /// A checkpoint's summary, its file bytes, and what is handed to the stager: the bytes
    /// sealed, or (`unsealed`) still to be sealed.
    fn checkpoint(id: &str, unsealed: bool) -> (CheckpointSummary, Vec<u8>, FileBytes) {
        let c = Checkpoint::new(
            CheckpointId::new(id).unwrap(),
            ExecutionId::new("exec_a").unwrap(),
            "agent",
            Timestamp::now(),
            CheckpointReason::Manual,
        );
        let bytes = encode(&c).unwrap();
        let handed = match unsealed {
            true => FileBytes::Unsealed(encode_unsealed(&c, 0).unwrap()),
            false => FileBytes::Sealed(bytes.clone()),
        };
        assert_eq!(handed.len(), bytes.len());
        (CheckpointSummary::of(&c, bytes.len() as u64), bytes, handed)
    }

    /// Files staged on the thread, in the caller's (the thread busy, or no thread), and a
    /// staging dropped unwaited: each staged file has its bytes and goes in place; the one
    /// dropped leaves nothing behind, and the file store can be taken back at once. Bytes handed
    /// over unsealed are sealed: the file is exactly `encode`'s, with its checksum.
    #[test]
    fn stages_on_the_thread_or_in_line_and_lets_go_of_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(FileStore::open(dir.path()).unwrap());
        let stager = Stager::start();
        let pending: Vec<_> = (0..6)
            .map(|i| {
                let (summary, bytes, handed) = checkpoint(&format!("ckpt_{i}"), i % 2 == 1);
                (stager.stage(&files, summary, handed), bytes)
            })
            .collect();
        for (i, (staging, bytes)) in pending.into_iter().enumerate() {
            if i == 5 {
                drop(staging);
                continue;
            }
            let staged = staging.wait().unwrap();
            let stated = caf_core::store::stated_integrity(&bytes);
            assert_eq!(staged.integrity(), stated.as_deref());
            files.try_publish(staged).unwrap();
            let on_disk = std::fs::read(dir.path().join(format!("ckpt_{i}.json"))).unwrap();
            assert_eq!(on_disk, bytes);
        }
        assert!(!dir.path().join("ckpt_5.json").exists());
        let temp: Vec<_> = std::fs::read_dir(dir.path().join(".caf").join("tmp"))
            .unwrap()
            .collect();
        assert!(temp.is_empty(), "{temp:?}");
        assert!(
            Arc::try_unwrap(files).is_ok(),
            "the thread still holds the store"
        );

        let in_line = Stager {
            shared: Arc::default(),
            thread: None,
        };
        let files = Arc::new(FileStore::open(dir.path()).unwrap());
        let (summary, bytes, handed) = checkpoint("ckpt_7", true);
        let staged = in_line.stage(&files, summary, handed).wait().unwrap();
        files.try_publish(staged).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("ckpt_7.json")).unwrap(),
            bytes
        );
    }

    /// A nudged thread takes the file handed to it next, spinning; one nudged and given
    /// nothing goes back to sleep and takes a later file all the same; one nudged and then
    /// dropped stops.
    #[test]
    fn a_nudged_thread_takes_the_next_file_or_sleeps_again() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(FileStore::open(dir.path()).unwrap());
        let stager = Stager::start();
        let phase = |s: &Stager| s.shared.lock().phase;
        for (i, pause) in [0, 50, 2 * SPIN.as_micros() as u64].into_iter().enumerate() {
            stager.nudge();
            std::thread::sleep(Duration::from_micros(pause));
            if pause > SPIN.as_micros() as u64 {
                // Give the thread time to see that its spin is over.
                let deadline = Instant::now() + Duration::from_secs(5);
                while phase(&stager) != Phase::Idle && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                assert_eq!(phase(&stager), Phase::Idle, "back to sleep");
            }
            let (summary, bytes, handed) = checkpoint(&format!("ckpt_n{i}"), true);
            let staged = stager.stage(&files, summary, handed).wait().unwrap();
            files.try_publish(staged).unwrap();
            let path = dir.path().join(format!("ckpt_n{i}.json"));
            assert_eq!(std::fs::read(path).unwrap(), bytes);
        }
        stager.nudge();
        drop(stager);
        assert!(
            Arc::try_unwrap(files).is_ok(),
            "the thread let go of the store"
        );
    }
}
