//! [`AsyncStore`]: the `async` durability mode — saves written by a background writer.

use super::{CheckpointStore, CheckpointSummary, DamagedCheckpoint, ListFilter, LoadSource};
use crate::error::{Error, Result};
use crate::format::{Checkpoint, Encoder};
use crate::id::{CheckpointId, ExecutionId};
use crate::prune::Tombstone;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// When a save returns: the durability mode of a store's saves.
///
/// `sync` (the default): on disk when `save` returns, as durably as the store writes.
/// `async`: `save` returns once the checkpoint is handed to an [`AsyncStore`]'s background
/// writer; order is kept, reads wait for the queue, a failed write comes back from the next call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SaveMode {
    /// Durable when `save` returns.
    #[default]
    Sync,
    /// Written by a background writer, in order.
    Async,
}

impl SaveMode {
    /// `sync` or `async`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Async => "async",
        }
    }
}

impl std::fmt::Display for SaveMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SaveMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "sync" => Ok(Self::Sync),
            "async" => Ok(Self::Async),
            other => Err(format!("unknown durability {other:?}: use sync or async")),
        }
    }
}

/// How many encoded saves may wait for the writer before `save` waits too.
const QUEUE: usize = 256;

/// A checkpoint to write, with its encoding when the caller made it.
type Job = (Checkpoint, Option<Vec<u8>>);

struct Queue {
    /// Checkpoints to write, with their encoding when the caller made it.
    jobs: VecDeque<Job>,
    /// The writer is writing a job it took off the queue.
    busy: bool,
    /// The first failed save, not yet reported.
    error: Option<Error>,
    stop: bool,
}

struct Shared<S> {
    store: S,
    queue: Mutex<Queue>,
    /// Wakes the writer (a job, or stop).
    work: Condvar,
    /// Wakes those waiting for the writer (a job done).
    done: Condvar,
}

impl<S> Shared<S> {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A store whose saves return once the checkpoint is checked and encoded; a background thread
/// writes them to the inner store, in order, each as durably as the inner store writes.
///
/// - **Order** is kept: saves are written one at a time, as they were made.
/// - **Reads see every save made before them**: every other call (load, list, delete, …)
///   first waits until the queue is written.
/// - **Errors are never lost silently**: a failed write is returned by the next call (save,
///   read or [`flush`](Self::flush)) as [`Error::BackgroundSave`]; the saves queued after it are
///   dropped (writing them would leave a hole in their lineage), and the error says how many.
/// - **A crash loses at most the tail not yet written**, never an older checkpoint (the inner
///   store's own guarantees hold for what it wrote).
/// - [`flush`](Self::flush) waits for the queue; dropping the store waits for it too (call
///   `flush` first to see a last error).
pub struct AsyncStore<S: CheckpointStore + 'static> {
    shared: Arc<Shared<S>>,
    encoder: Mutex<Encoder>,
    writer: Option<JoinHandle<()>>,
}

impl<S: CheckpointStore + 'static> std::fmt::Debug for AsyncStore<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = self.shared.lock();
        f.debug_struct("AsyncStore")
            .field("queued", &q.jobs.len())
            .field("busy", &q.busy)
            .finish_non_exhaustive()
    }
}

impl<S: CheckpointStore + 'static> AsyncStore<S> {
    /// Starts the background writer for `store`.
    pub fn new(store: S) -> Self {
        let shared = Arc::new(Shared {
            store,
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                busy: false,
                error: None,
                stop: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let writer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("caf-async-writer".into())
                .spawn(move || write_queue(&shared))
                .ok()
        };
        Self {
            shared,
            encoder: Mutex::new(Encoder::default()),
            writer,
        }
    }

    /// Saves `checkpoint`, taking it: returns once it is queued, without copying or encoding
    /// it. The writer thread checks, encodes and writes it (a checkpoint that cannot be encoded
    /// fails there, and comes back from the next call as any failed write does). Returns its
    /// id. What [`save`](CheckpointStore::save) costs the caller, less the encoding and the
    /// copy: the hand-over LangGraph's `durability="async"` makes.
    pub fn save_owned(&self, checkpoint: Checkpoint) -> Result<CheckpointId> {
        let id = checkpoint.id.clone();
        match self.room()? {
            Some(q) => self.enqueue(q, (checkpoint, None)),
            None => return self.shared.store.save(&checkpoint).map(|_| id),
        }
        Ok(id)
    }

    /// Waits for room in the queue, first reporting a write that failed since the last call.
    /// `None` when there is no writer thread: the caller writes on its own thread.
    fn room(&self) -> Result<Option<MutexGuard<'_, Queue>>> {
        let mut q = self.shared.lock();
        if let Some(e) = q.error.take() {
            return Err(e);
        }
        if self.writer.is_none() {
            return Ok(None);
        }
        while q.jobs.len() >= QUEUE {
            q = self.shared.done.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        Ok(Some(q))
    }

    /// Queues a job for the writer thread.
    fn enqueue(&self, mut q: MutexGuard<'_, Queue>, job: Job) {
        q.jobs.push_back(job);
        drop(q);
        self.shared.work.notify_one();
    }

    /// Waits until the queue is empty and the writer idle.
    fn idle(&self) -> MutexGuard<'_, Queue> {
        let mut q = self.shared.lock();
        while !q.jobs.is_empty() || q.busy {
            q = self.shared.done.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        q
    }

    /// The inner store (reading it directly does not wait for the queue).
    pub fn inner(&self) -> &S {
        &self.shared.store
    }

    /// Waits until every save made so far is written; returns a failed one, if any.
    pub fn flush(&self) -> Result<()> {
        self.idle().error.take().map_or(Ok(()), Err)
    }

    /// Waits until every save made so far is written, leaving a failed one to be reported by
    /// the next call (reading the inner store directly after this sees every save).
    pub fn wait_idle(&self) {
        drop(self.idle());
    }

    /// [`flush`](Self::flush), then the inner store.
    fn settled(&self) -> Result<&S> {
        self.flush()?;
        Ok(&self.shared.store)
    }
}

impl<S: CheckpointStore + 'static> Drop for AsyncStore<S> {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.work.notify_all();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

fn write_queue<S: CheckpointStore>(shared: &Shared<S>) {
    loop {
        let (checkpoint, bytes) = {
            let mut q = shared.lock();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    q.busy = true;
                    break job;
                }
                if q.stop {
                    return;
                }
                q = shared.work.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let written = match &bytes {
            Some(bytes) => shared.store.save_encoded(&checkpoint, bytes),
            None => shared.store.save(&checkpoint),
        };
        let mut q = shared.lock();
        q.busy = false;
        if let Err(e) = written {
            let dropped = q.jobs.len();
            q.jobs.clear();
            if q.error.is_none() {
                q.error = Some(Error::BackgroundSave {
                    id: checkpoint.id.to_string(),
                    dropped,
                    source: Box::new(e),
                });
            }
        }
        drop(q);
        shared.done.notify_all();
    }
}

impl<S: CheckpointStore + 'static> CheckpointStore for AsyncStore<S> {
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary> {
        // A checkpoint that cannot be encoded fails here, at once.
        let bytes = self
            .encoder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .encode(checkpoint)
            .map_err(|error| Error::Encode {
                id: checkpoint.id.to_string(),
                error,
            })?;
        let summary = CheckpointSummary::of(checkpoint, bytes.len() as u64);
        match self.room()? {
            Some(q) => self.enqueue(q, (checkpoint.clone(), Some(bytes))),
            // No thread could be started: write on the caller's thread.
            None => return self.shared.store.save_encoded(checkpoint, &bytes),
        }
        Ok(summary)
    }

    fn load(&self, id: &CheckpointId) -> Result<Checkpoint> {
        self.settled()?.load(id)
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>> {
        self.settled()?.list(filter)
    }

    fn delete(&self, id: &CheckpointId) -> Result<bool> {
        self.settled()?.delete(id)
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize> {
        self.settled()?.delete_execution(execution_id)
    }

    fn latest(&self, execution_id: &ExecutionId) -> Result<Option<Checkpoint>> {
        self.settled()?.latest(execution_id)
    }

    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        self.settled()?.summary(id)
    }

    fn load_with_source(&self, id: &CheckpointId) -> Result<(Checkpoint, LoadSource)> {
        self.settled()?.load_with_source(id)
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
        self.inner().describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{FileStore, MemoryStore};
    use crate::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Checkpoints of one execution, each the child of the one before.
    fn run(n: usize) -> Vec<Checkpoint> {
        let m = CheckpointManager::new(Arc::new(MemoryStore::new()));
        let mut state = RuntimeState::new("agent");
        (0..n)
            .map(|i| {
                state.set_variable("i", serde_json::json!(i));
                let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
                m.checkpoint(&mut state, options).unwrap()
            })
            .collect()
    }

    /// A memory store whose `fail_at`-th save (from 1) fails, slowly enough that saves queue up.
    struct Failing {
        inner: MemoryStore,
        saves: AtomicUsize,
        fail_at: usize,
    }

    impl CheckpointStore for Failing {
        fn save(&self, c: &Checkpoint) -> Result<CheckpointSummary> {
            std::thread::sleep(std::time::Duration::from_millis(2));
            if self.saves.fetch_add(1, Ordering::SeqCst) + 1 == self.fail_at {
                return Err(Error::io(
                    "/injected",
                    std::io::Error::other("disk on fire"),
                ));
            }
            self.inner.save(c)
        }
        fn load(&self, id: &CheckpointId) -> Result<Checkpoint> {
            self.inner.load(id)
        }
        fn list(&self, f: &ListFilter) -> Result<Vec<CheckpointSummary>> {
            self.inner.list(f)
        }
        fn delete(&self, id: &CheckpointId) -> Result<bool> {
            self.inner.delete(id)
        }
        fn delete_execution(&self, e: &ExecutionId) -> Result<usize> {
            self.inner.delete_execution(e)
        }
    }

    #[test]
    fn reads_see_every_save_made_before_them_in_order() {
        let store = AsyncStore::new(MemoryStore::with_max_per_execution(1000));
        let run = run(40);
        for c in &run {
            store.save(c).unwrap();
        }
        let exec = &run[0].execution_id;
        assert_eq!(store.latest(exec).unwrap().as_ref(), run.last());
        assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 40);
        for c in &run {
            assert_eq!(&store.load(&c.id).unwrap(), c);
        }
    }

    #[test]
    fn a_failed_write_surfaces_on_the_next_call_with_what_was_dropped() {
        let store = AsyncStore::new(Failing {
            inner: MemoryStore::with_max_per_execution(1000),
            saves: AtomicUsize::new(0),
            fail_at: 3,
        });
        let run = run(8);
        let mut first_error = None;
        for c in &run[..6] {
            if let Err(e) = store.save(c) {
                first_error = Some(e);
                break;
            }
        }
        let e = match first_error {
            Some(e) => e,
            None => store.flush().unwrap_err(),
        };
        let Error::BackgroundSave { id, .. } = &e else {
            panic!("{e}");
        };
        assert_eq!(id, run[2].id.as_str(), "the third save failed");
        assert!(e.to_string().contains("disk on fire"), "{e}");
        // Reported once; what was written before it is there, nothing after it.
        store.flush().unwrap();
        let stored = store.list(&ListFilter::default()).unwrap();
        assert_eq!(stored.len(), 2, "{stored:?}");
        // Later saves are written again.
        store.save(&run[7]).unwrap();
        store.flush().unwrap();
        assert_eq!(store.load(&run[7].id).unwrap(), run[7]);
    }

    #[test]
    fn owned_saves_keep_their_order_among_encoded_ones_and_files_equal_encode() {
        let dir = tempfile::tempdir().unwrap();
        let run = run(30);
        {
            let store = AsyncStore::new(FileStore::open(dir.path()).unwrap());
            for (i, c) in run.iter().enumerate() {
                if i % 3 == 0 {
                    store.save(c).unwrap();
                } else {
                    assert_eq!(store.save_owned(c.clone()).unwrap(), c.id);
                }
            }
            assert_eq!(
                store.latest(&run[0].execution_id).unwrap().as_ref(),
                run.last()
            );
        }
        let files = FileStore::open(dir.path()).unwrap();
        for c in &run {
            let on_disk = std::fs::read(files.path_of(&c.id)).unwrap();
            assert_eq!(on_disk, crate::format::encode(c).unwrap(), "{}", c.id);
        }
    }

    #[test]
    fn an_owned_checkpoint_that_cannot_be_encoded_fails_on_the_next_call() {
        let store = AsyncStore::new(MemoryStore::with_max_per_execution(1000));
        let mut run = run(3);
        // Nested deeper than the format allows: refused when encoded.
        let mut deep = serde_json::json!(1);
        for _ in 0..300 {
            deep = serde_json::json!([deep]);
        }
        run[1].snapshot.context.variables.insert("x".into(), deep);
        store.save_owned(run[0].clone()).unwrap();
        store.save_owned(run[1].clone()).unwrap();
        let e = store.flush().unwrap_err();
        let Error::BackgroundSave { id, .. } = &e else {
            panic!("{e}");
        };
        assert_eq!(id, run[1].id.as_str());
        assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 1);
    }

    #[test]
    fn dropping_the_store_writes_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let run = run(30);
        {
            let store = AsyncStore::new(FileStore::open(dir.path()).unwrap());
            for c in &run {
                store.save(c).unwrap();
            }
        }
        let files = FileStore::open(dir.path()).unwrap();
        for c in &run {
            assert_eq!(&files.load(&c.id).unwrap(), c);
        }
    }
}
