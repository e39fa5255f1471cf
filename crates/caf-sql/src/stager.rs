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
//! The thread takes a file only when it is idle (a rendezvous: nothing waits in a queue), so a
//! save never waits, holding its transaction's locks, for other saves' files: when the thread
//! is busy with another thread's save, or could not be started, the file is written in the
//! caller's thread before its rows, as before.

use caf_core::format::Unsealed;
use caf_core::store::{working_for, Fs, StagedFile};
use caf_core::{CheckpointSummary, Error, FileStore, Result};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

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

/// The thread, with its queue; see the module docs.
#[derive(Debug)]
pub(crate) struct Stager {
    queue: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Stager {
    /// Starts the thread (a stager without one writes every file in the caller's thread).
    pub fn start() -> Self {
        let (queue, jobs) = mpsc::sync_channel::<Job>(0);
        let thread = std::thread::Builder::new()
            .name("caf-stager".into())
            .spawn(move || {
                while let Ok(job) = jobs.recv() {
                    job();
                }
            })
            .ok();
        Self {
            queue: thread.as_ref().map(|_| queue),
            thread,
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
                files.stage_summarized(summary, &bytes.into_sealed())
            });
            // Before the result is sent: a caller that has it may then take the file store
            // back ([`crate::HybridStore::into_parts`]).
            drop(files);
            let _ = done.send(staged);
        });
        let sent = match &self.queue {
            Some(queue) => queue.try_send(job),
            None => Err(TrySendError::Disconnected(job)),
        };
        // The thread is busy (another thread's save), gone or was never started: write the
        // file here (its result waits in the channel all the same).
        if let Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) = sent {
            job();
        }
        Staging {
            result: Some(result),
            path,
        }
    }
}

impl Drop for Stager {
    fn drop(&mut self) {
        self.queue = None;
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
            queue: None,
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
}
