//! A helper thread that computes an integrity checksum while the caller parses the same bytes.
//!
//! One thread, started on first use and then blocked on a short queue while there is nothing to
//! do, serves every caller. A caller hands it a job and parses; when done, it takes the job back if
//! the helper has not started it yet (the helper is busy with another job, or has no core to run
//! on) and hashes on its own thread. So a caller waits only for a job that is already running,
//! never for the helper to be scheduled: on a loaded machine this costs what hashing in line
//! costs, and on one with a free core the checksum is had for the price of the parse. (A scoped
//! thread per load was measured too: starting it costs ~30 µs, and joining it on a busy machine
//! waits for it to be scheduled, which doubled the median time of a restore.)
//!
//! Waking a blocked thread took about 50 µs on the 2-vCPU machine of docs/benchmarks.md, a
//! third of a restore. So a load that will hand over a job [`nudge`]s the helper before it reads
//! the file: the helper wakes while the file is read, then waits for the job spinning (yielding
//! its core to whoever needs it), for at most [`SPIN`], rather than blocking again.

use super::integrity::digest;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The job is waiting for whoever takes it first.
const OPEN: u8 = 0;
/// The helper took it: its result will come.
const HELPER: u8 = 1;
/// The caller took it back.
const CALLER: u8 = 2;

/// The bytes to hash: `bytes` without the range `skip` (the integrity line).
struct Job {
    bytes: Arc<Vec<u8>>,
    skip: Range<usize>,
    claim: Arc<AtomicU8>,
    done: SyncSender<String>,
}

fn hash(bytes: &[u8], skip: &Range<usize>) -> String {
    digest(&[&bytes[..skip.start], &bytes[skip.end..]])
}

impl Job {
    fn run(self) {
        let taken = self
            .claim
            .compare_exchange(OPEN, HELPER, Ordering::AcqRel, Ordering::Acquire);
        if taken.is_ok() {
            // The caller waits on the other end; if it is gone, nobody needs the result.
            let _ = self.done.send(hash(&self.bytes, &self.skip));
        }
    }
}

/// What the helper is handed.
enum Msg {
    /// A checksum to compute.
    Job(Job),
    /// A job is coming soon: wake up and wait for it, spinning.
    Nudge,
}

/// How many messages may wait for the helper: more means it cannot keep up, and a caller does
/// better to hash itself than to queue (a queued job keeps its bytes alive).
const QUEUE: usize = 2;

/// How long, at most, a nudged helper spins waiting for its job (reading a file of a few MB
/// takes about that long) before it blocks again.
const SPIN: Duration = Duration::from_micros(500);

/// Whether the helper is running or spinning (not blocked): no nudge is needed.
static AWAKE: AtomicBool = AtomicBool::new(false);

/// The helper's queue, `None` if no thread could be started.
fn helper() -> Option<&'static SyncSender<Msg>> {
    static HELPER_QUEUE: OnceLock<Option<SyncSender<Msg>>> = OnceLock::new();
    HELPER_QUEUE
        .get_or_init(|| {
            let (queue, jobs) = mpsc::sync_channel::<Msg>(QUEUE);
            std::thread::Builder::new()
                .name("caf-integrity".into())
                .spawn(move || serve(&jobs))
                .ok()
                .map(|_| queue)
        })
        .as_ref()
}

/// The helper's loop: blocked until a message comes; after a nudge, spinning until its job
/// comes or [`SPIN`] has passed.
fn serve(messages: &Receiver<Msg>) {
    while let Ok(msg) = messages.recv() {
        AWAKE.store(true, Ordering::Release);
        match msg {
            Msg::Job(job) => job.run(),
            Msg::Nudge => {
                let until = Instant::now() + SPIN;
                loop {
                    match messages.try_recv() {
                        Ok(Msg::Job(job)) => {
                            job.run();
                            break;
                        }
                        Ok(Msg::Nudge) => {}
                        Err(TryRecvError::Empty) if Instant::now() < until => {
                            // Yielding its core to whoever needs it: with more runnable threads
                            // than cores (eight processes saving on two), a plain spin took
                            // ~8 % of all the CPU from them.
                            std::thread::yield_now();
                        }
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => return,
                    }
                }
            }
        }
        AWAKE.store(false, Ordering::Release);
    }
}

/// Wakes the helper ahead of a job this thread is about to hand it (see the module docs): call
/// before reading bytes that [`start`] will get. Does nothing if the helper is awake already.
pub(crate) fn nudge() {
    if AWAKE.load(Ordering::Acquire) {
        return;
    }
    if let Some(queue) = helper() {
        let _ = queue.try_send(Msg::Nudge);
    }
}

/// A checksum being computed beside the caller.
pub(super) struct Pending {
    bytes: Arc<Vec<u8>>,
    skip: Range<usize>,
    claim: Arc<AtomicU8>,
    result: Receiver<String>,
}

/// Starts hashing `bytes` without `skip` on the helper thread (or leaves the job for
/// [`Pending::finish`] if there is no helper).
pub(super) fn start(bytes: &Arc<Vec<u8>>, skip: Range<usize>) -> Pending {
    let claim = Arc::new(AtomicU8::new(OPEN));
    let (done, result) = mpsc::sync_channel(1);
    if let Some(queue) = helper() {
        // If the queue is full or the helper is gone, the job stays here, unclaimed.
        let _ = queue.try_send(Msg::Job(Job {
            bytes: Arc::clone(bytes),
            skip: skip.clone(),
            claim: Arc::clone(&claim),
            done,
        }));
    }
    Pending {
        bytes: Arc::clone(bytes),
        skip,
        claim,
        result,
    }
}

impl Pending {
    /// Whether the helper has taken the job (its result will come from there).
    pub(super) fn started(&self) -> bool {
        self.claim.load(Ordering::Acquire) == HELPER
    }

    /// The checksum: hashed here if the helper has not started the job, else its result.
    pub(super) fn finish(&self) -> String {
        let mine = self
            .claim
            .compare_exchange(OPEN, CALLER, Ordering::AcqRel, Ordering::Acquire);
        if mine.is_ok() {
            return hash(&self.bytes, &self.skip);
        }
        // The helper sends exactly once for a job it took; if it died instead, hash here.
        self.result
            .recv()
            .unwrap_or_else(|_| hash(&self.bytes, &self.skip))
    }
}

impl Drop for Pending {
    /// A job nobody needs any more (the parse failed) is taken back, so that the helper does not
    /// hash for nothing.
    fn drop(&mut self) {
        let _ = self
            .claim
            .compare_exchange(OPEN, CALLER, Ordering::AcqRel, Ordering::Acquire);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_the_digest_of_the_bytes_without_the_skipped_range() {
        let bytes = Arc::new(
            (0..200_000u32)
                .map(|i| (i % 251) as u8)
                .collect::<Vec<u8>>(),
        );
        let skip = 1000..1100;
        let want = digest(&[&bytes[..1000], &bytes[1100..]]);
        for _ in 0..50 {
            assert_eq!(start(&bytes, skip.clone()).finish(), want);
        }
        // Many callers at once: every job is answered, by the helper or by its caller.
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20 {
                        assert_eq!(start(&bytes, skip.clone()).finish(), want);
                    }
                });
            }
        });
    }

    #[test]
    fn a_nudged_helper_answers_jobs_that_come_soon_late_or_never() {
        let bytes = Arc::new(vec![3u8; 100_000]);
        let want = digest(&[&bytes]);
        // The job right after the nudge (the helper spinning or still waking up).
        nudge();
        assert_eq!(start(&bytes, 0..0).finish(), want);
        // A nudge whose job never came: the helper blocks again after its spin, and the next
        // job (or nudge and job) is still answered.
        nudge();
        std::thread::sleep(SPIN * 4);
        assert_eq!(start(&bytes, 0..0).finish(), want);
        nudge();
        nudge();
        std::thread::sleep(SPIN / 2);
        assert_eq!(
            start(&bytes, 10..20).finish(),
            digest(&[&bytes[..10], &bytes[20..]])
        );
    }

    #[test]
    fn a_job_taken_back_is_hashed_by_its_caller() {
        let bytes = Arc::new(vec![7u8; 1000]);
        let pending = start(&bytes, 0..0);
        let want = digest(&[&bytes]);
        // Whoever wins the claim, the answer is the same.
        assert_eq!(pending.finish(), want);
        let (done, result) = mpsc::sync_channel(1);
        let claim = Arc::new(AtomicU8::new(CALLER));
        Job {
            bytes: Arc::clone(&bytes),
            skip: 0..0,
            claim,
            done,
        }
        .run();
        assert!(
            result.try_recv().is_err(),
            "the helper skips a job taken back"
        );
    }
}
