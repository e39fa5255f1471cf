//! A helper thread that works beside a caller on the same bytes: it computes an integrity
//! checksum while the caller parses them, and, for a restore, then types a part of the document
//! (see [`super::known`]).
//!
//! One thread, started on first use and then blocked on a short queue while there is nothing to
//! do, serves every caller. A caller hands it tasks and goes on with its own work; when done, it
//! takes back each task the helper has not started yet (the helper is busy with another caller's,
//! or has no core to run on) and does it on its own thread. So a caller waits only for a task that
//! is already running, never for the helper to be scheduled: on a loaded machine this costs what
//! doing everything in line costs, and on one with a free core the checksum is had for the price
//! of the parse. A caller that comes for a result the helper is still working on waits for it
//! yielding its core, for at most [`WAIT_SPIN`], rather than blocked: waking a blocked caller
//! took ~10 µs, a tenth of a restore (docs/benchmarks.md, 2026-11-25 19:06). (A scoped thread
//! per load was measured too: starting it costs ~30 µs, and joining it on a busy machine waits
//! for it to be scheduled, which doubled the median time of a restore.)
//!
//! Waking a blocked thread took about 50 µs on the 2-vCPU machine of docs/benchmarks.md, a
//! third of a restore. So a load that will hand over tasks [`nudge`]s the helper before it reads
//! the file: the helper wakes while the file is read, then waits for its tasks spinning (yielding
//! its core to whoever needs it), for at most [`SPIN`], rather than blocking again. Both a nudge
//! and a hand-over first keep the helper off the caller's core ([`super::cores`]).

use super::cores;
use super::integrity::digest;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The task is waiting for whoever takes it first.
const OPEN: u8 = 0;
/// The helper took it: its result will come.
const HELPER: u8 = 1;
/// The caller took it back.
const CALLER: u8 = 2;

/// A piece of work handed to the helper: run there unless its caller has taken it back (see
/// [`task`]).
struct Task(Box<dyn FnOnce() + Send>);

/// The result of a task handed to the helper: the helper's, or the caller's own if it takes the
/// task back first.
pub(super) struct Beside<T> {
    claim: Arc<AtomicU8>,
    result: Receiver<T>,
}

/// A task that does `work` on the helper once claimed there, and the caller's end of it.
fn task<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> (Task, Beside<T>) {
    let claim = Arc::new(AtomicU8::new(OPEN));
    let (done, result) = mpsc::sync_channel(1);
    let helpers_claim = Arc::clone(&claim);
    let run = move || {
        let taken =
            helpers_claim.compare_exchange(OPEN, HELPER, Ordering::AcqRel, Ordering::Acquire);
        if taken.is_ok() {
            // The caller waits on the other end; if it is gone, nobody needs the result.
            let _ = done.send(work());
        }
    };
    (Task(Box::new(run)), Beside { claim, result })
}

impl<T> Beside<T> {
    /// Whether the helper has taken the task (its result will come from there).
    pub(super) fn started(&self) -> bool {
        self.claim.load(Ordering::Acquire) == HELPER
    }

    /// The result: `here()` if the helper has not started the task (it is taken back), else
    /// the helper's, waited for.
    pub(super) fn finish(&self, here: impl FnOnce() -> T) -> T {
        let mine = self
            .claim
            .compare_exchange(OPEN, CALLER, Ordering::AcqRel, Ordering::Acquire);
        if mine.is_ok() {
            return here();
        }
        // The helper is running the task: its result comes soon, so wait for it yielding this
        // core each turn rather than blocked (waking a blocked thread costs more than the wait).
        let until = Instant::now() + WAIT_SPIN;
        loop {
            match self.result.try_recv() {
                Ok(result) => return result,
                Err(TryRecvError::Empty) if Instant::now() < until => std::thread::yield_now(),
                _ => break,
            }
        }
        // The helper sends exactly once for a task it took; if it died instead, do it here.
        self.result.recv().unwrap_or_else(|_| here())
    }
}

impl<T> Drop for Beside<T> {
    /// A task nobody needs any more (the parse failed) is taken back, so that the helper does
    /// not work for nothing.
    fn drop(&mut self) {
        let _ = self
            .claim
            .compare_exchange(OPEN, CALLER, Ordering::AcqRel, Ordering::Acquire);
    }
}

fn hash(bytes: &[u8], skip: &Range<usize>) -> String {
    digest(&[&bytes[..skip.start], &bytes[skip.end..]])
}

/// What the helper is handed.
enum Msg {
    /// Tasks to run, in order; with `linger`, the helper then waits spinning for the next ones
    /// (for at most [`SPIN`]) rather than blocking: restores that come one after another then
    /// find it awake, instead of waking it each time. Waking it was seen to leave it waiting
    /// behind its waker on the same core for a millisecond or more, now and then, on the
    /// 2-vCPU machine of docs/benchmarks.md; lingering was quicker on average there, though a
    /// helper that never sleeps is not placed again at a wake-up either, so a bad placement
    /// can last until the kernel balances its cores.
    Tasks { tasks: Vec<Task>, linger: bool },
    /// Tasks are coming soon: wake up and wait for them, spinning.
    Nudge,
}

/// How many messages may wait for the helper: more means it cannot keep up, and a caller does
/// better to do its tasks itself than to queue (a queued task keeps its bytes alive).
const QUEUE: usize = 2;

/// How long, at most, a caller waits for the result of a task the helper is running by polling
/// (and yielding its core) before it blocks.
const WAIT_SPIN: Duration = Duration::from_micros(200);

/// How long, at most, a nudged helper spins waiting for its tasks (reading a file of a few MB
/// takes about that long) before it blocks again.
const SPIN: Duration = Duration::from_micros(500);

/// Whether the helper is running or spinning (not blocked): no nudge is needed.
static AWAKE: AtomicBool = AtomicBool::new(false);

/// The helper's queue, `None` if no thread could be started.
fn helper() -> Option<&'static SyncSender<Msg>> {
    static HELPER_QUEUE: OnceLock<Option<SyncSender<Msg>>> = OnceLock::new();
    HELPER_QUEUE
        .get_or_init(|| {
            let (queue, messages) = mpsc::sync_channel::<Msg>(QUEUE);
            std::thread::Builder::new()
                .name("caf-integrity".into())
                .spawn(move || {
                    cores::register_helper();
                    serve(&messages)
                })
                .ok()
                .map(|_| queue)
        })
        .as_ref()
}

fn run(tasks: Vec<Task>) {
    for Task(work) in tasks {
        work();
    }
}

/// The helper's loop: blocked until a message comes; then, after a nudge or tasks that linger,
/// spinning until the next message comes or [`SPIN`] has passed.
fn serve(messages: &Receiver<Msg>) {
    while let Ok(first) = messages.recv() {
        AWAKE.store(true, Ordering::Release);
        let mut next = Some(first);
        let mut until = Instant::now() + SPIN;
        loop {
            match next.take() {
                Some(Msg::Tasks { tasks, linger }) => {
                    run(tasks);
                    if !linger {
                        break;
                    }
                    until = Instant::now() + SPIN;
                }
                Some(Msg::Nudge) | None => {}
            }
            match messages.try_recv() {
                Ok(msg) => next = Some(msg),
                Err(TryRecvError::Empty) if Instant::now() < until => {
                    // Yielding its core to whoever needs it: with more runnable threads than
                    // cores (eight processes saving on two), a plain spin took ~8 % of all the
                    // CPU from them.
                    std::thread::yield_now();
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        AWAKE.store(false, Ordering::Release);
    }
}

/// Starts the helper thread if it has not started yet, without giving it anything to do (it
/// waits, blocked, for work). A store calls this when it opens, so that its first restores do
/// not wait for a new thread to be scheduled: the first run of a new thread on an idle vCPU
/// took ~2 ms on the 2-vCPU machine of docs/benchmarks.md, longer than a loop of restores.
pub(crate) fn start_helper() {
    let _ = helper();
}

/// Hands `tasks` to the helper, to be run in order. If the queue is full or there is no helper,
/// they stay with their callers, unclaimed.
fn hand_over(tasks: Vec<Task>, linger: bool) {
    if let Some(queue) = helper() {
        cores::steer();
        let _ = queue.try_send(Msg::Tasks { tasks, linger });
    }
}

/// Wakes the helper ahead of tasks this thread is about to hand it (see the module docs): call
/// before reading bytes that [`start`] will get. Does nothing if the helper is awake already.
pub(crate) fn nudge() {
    // Awake or not, it may be on this thread's core.
    cores::steer();
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
    checksum: Beside<String>,
}

/// The task of hashing `bytes` without `skip`, and its caller's end.
fn checksum(bytes: &Arc<Vec<u8>>, skip: Range<usize>) -> (Task, Pending) {
    let (bytes_there, skip_there) = (Arc::clone(bytes), skip.clone());
    let (task, checksum) = task(move || hash(&bytes_there, &skip_there));
    let pending = Pending {
        bytes: Arc::clone(bytes),
        skip,
        checksum,
    };
    (task, pending)
}

/// Starts hashing `bytes` without `skip` on the helper thread (or leaves the task for
/// [`Pending::finish`] if there is no helper).
pub(super) fn start(bytes: &Arc<Vec<u8>>, skip: Range<usize>) -> Pending {
    let (task, pending) = checksum(bytes, skip);
    hand_over(vec![task], false);
    pending
}

/// Hands `work` to the helper; the caller does it itself if it comes to [`Beside::finish`]
/// before the helper has started it.
pub(super) fn one<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Beside<T> {
    let (task, beside) = task(work);
    hand_over(vec![task], true);
    beside
}

/// [`one`] for two pieces of work, done on the helper in this order.
pub(super) fn both<A: Send + 'static, B: Send + 'static>(
    first: impl FnOnce() -> A + Send + 'static,
    then: impl FnOnce() -> B + Send + 'static,
) -> (Beside<A>, Beside<B>) {
    let (first, a) = task(first);
    let (then, b) = task(then);
    hand_over(vec![first, then], true);
    (a, b)
}

impl Pending {
    /// Whether the helper has taken the task (its result will come from there).
    pub(super) fn started(&self) -> bool {
        self.checksum.started()
    }

    /// The checksum: hashed here if the helper has not started the task, else its result.
    pub(super) fn finish(&self) -> String {
        self.checksum.finish(|| hash(&self.bytes, &self.skip))
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
    fn a_task_taken_back_is_done_by_its_caller_and_skipped_by_the_helper() {
        let bytes = Arc::new(vec![7u8; 1000]);
        let pending = start(&bytes, 0..0);
        let want = digest(&[&bytes]);
        // Whoever wins the claim, the answer is the same.
        assert_eq!(pending.finish(), want);
        let ran = Arc::new(AtomicBool::new(false));
        let ran_there = Arc::clone(&ran);
        let (Task(work), beside) = task(move || ran_there.store(true, Ordering::Release));
        beside.finish(|| ());
        work();
        assert!(
            !ran.load(Ordering::Acquire),
            "the helper skips a task taken back"
        );
        // A task started on the helper gives the helper's result.
        let (Task(work), beside) = task(|| "there");
        work();
        assert!(beside.started());
        assert_eq!(beside.finish(|| "here"), "there");
    }

    #[test]
    fn a_caller_waits_for_a_running_task_however_long_it_takes() {
        for late in [Duration::ZERO, WAIT_SPIN / 4, WAIT_SPIN * 3] {
            let (Task(work), beside) = task(move || {
                std::thread::sleep(late);
                "there"
            });
            let helper = std::thread::spawn(work);
            while !beside.started() {
                std::thread::yield_now();
            }
            // Within the spin, or blocked after it: the helper's result either way.
            assert_eq!(beside.finish(|| "here"), "there", "{late:?}");
            helper.join().unwrap();
        }
    }

    #[test]
    fn two_tasks_give_one_answer_each_whoever_does_them() {
        let bytes = Arc::new((0..100_000u32).map(|i| (i % 7) as u8).collect::<Vec<u8>>());
        let want = digest(&[&bytes[..10], &bytes[20..]]);
        let sum = |b: &[u8]| b.iter().map(|&b| u64::from(b)).sum::<u64>();
        let here = sum(&bytes);
        for round in 0..50 {
            let (hashed, counted) = (Arc::clone(&bytes), Arc::clone(&bytes));
            let (checksum, total) = both(move || hash(&hashed, &(10..20)), move || sum(&counted));
            // Sometimes the second is taken back at once, before the helper comes to it.
            if round % 2 == 0 {
                assert_eq!(total.finish(|| here), here);
                assert_eq!(checksum.finish(|| hash(&bytes, &(10..20))), want);
            } else {
                assert_eq!(checksum.finish(|| hash(&bytes, &(10..20))), want);
                assert_eq!(total.finish(|| here), here);
            }
            let one = one(|| 7);
            assert_eq!(one.finish(|| 7), 7);
        }
    }
}
