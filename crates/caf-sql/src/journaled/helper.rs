//! [`Helper`]: a thread that does a save's work while the saving thread waits for its flush.
//!
//! A durable save waits for the disk to flush its journal record. Whatever else the save has
//! to do that the record does not need (encode the checkpoint's text from the revision
//! journaled, copy it for the writer) costs it no time if another thread does it during that
//! wait. Work done on the saving thread before the flush only overlapped the record's write (a
//! small part: the device's cache flush starts with the `fdatasync`). The saving thread hands
//! the helper its own copy of the checkpoint. The flush stays on the
//! saving thread: handing it to another thread made each save wait for two wake-ups more,
//! which cost more than the work (measured: saves twice as long on a 2-vCPU VM).
//!
//! The helper also wakes the store's writer for the save before (the saving thread does not,
//! after its flush: see `JournaledStore::queue`), and, when no save comes for a while after
//! one, runs the store's idle work, which wakes it then.

use std::sync::mpsc::{self, RecvError, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

/// A task, and whether the helper then waits for the next one only so long before it runs
/// its idle work.
type Task = (Box<dyn FnOnce() + Send>, bool);

/// Runs tasks on a thread of its own, one after another.
pub(super) struct Helper {
    tasks: Option<mpsc::Sender<Task>>,
    thread: Option<JoinHandle<()>>,
}

/// A task's result, to wait for.
pub(super) enum Pending<T> {
    /// Running on the helper.
    Running(mpsc::Receiver<T>),
    /// Done on the calling thread (no helper): `None` if it panicked.
    Done(Option<T>),
}

impl<T> Pending<T> {
    /// Whether the task went to the helper's thread (the helper has one).
    pub(super) fn on_helper(&self) -> bool {
        matches!(self, Pending::Running(_))
    }

    /// Waits for the task: its result, or `None` if it stopped short (it panicked).
    pub(super) fn wait(self) -> Option<T> {
        match self {
            Pending::Running(result) => result.recv().ok(),
            Pending::Done(t) => t,
        }
    }
}

/// The next task from `queue`, running `idle` each `after` that passes without one while
/// `idle` asks to be run again (returns `true`), then waiting as long as it takes. An error
/// once the helper is dropped.
fn next_after_idle(
    queue: &mpsc::Receiver<Task>,
    after: Duration,
    idle: &impl Fn() -> bool,
) -> Result<Task, RecvError> {
    loop {
        match queue.recv_timeout(after) {
            Ok(task) => return Ok(task),
            Err(RecvTimeoutError::Timeout) => {
                let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(idle));
                if !matches!(again, Ok(true)) {
                    return queue.recv();
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Err(RecvError),
        }
    }
}

impl Helper {
    /// A helper; one that runs its tasks on the calling thread when its thread cannot start.
    #[cfg(test)]
    pub(super) fn start() -> Self {
        Self::start_with_idle(Duration::MAX, || false)
    }

    /// A helper that runs `idle` on its thread when no task has come for `after` since the
    /// last one run by [`Helper::run_idle`] with `then_idle`, and again each `after` while
    /// `idle` says so ([`next_after_idle`]). Where the thread cannot start, tasks run on the
    /// calling thread, and `idle` never.
    pub(super) fn start_with_idle(
        after: Duration,
        idle: impl Fn() -> bool + Send + 'static,
    ) -> Self {
        let (tasks, queue) = mpsc::channel::<Task>();
        let thread = std::thread::Builder::new()
            .name("caf-journaled-helper".into())
            .spawn(move || {
                let mut next = queue.recv();
                while let Ok((task, then_idle)) = next {
                    // A task that panics loses its result (its waiter sees it), not the helper.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                    next = if then_idle {
                        next_after_idle(&queue, after, &idle)
                    } else {
                        queue.recv()
                    };
                }
            })
            .ok();
        Self {
            tasks: thread.as_ref().map(|_| tasks),
            thread,
        }
    }

    /// Runs `task` on the helper's thread (on this one if it has none).
    #[cfg(test)]
    pub(super) fn run<T: Send + 'static>(
        &self,
        task: impl FnOnce() -> T + Send + 'static,
    ) -> Pending<T> {
        self.run_idle(task, false)
    }

    /// [`Helper::run`], then, if `then_idle`, the idle work once no task has come for a while
    /// (see [`Helper::start_with_idle`]; not where the task ran on the calling thread: see
    /// [`Pending::on_helper`]).
    pub(super) fn run_idle<T: Send + 'static>(
        &self,
        task: impl FnOnce() -> T + Send + 'static,
        then_idle: bool,
    ) -> Pending<T> {
        let Some(tasks) = &self.tasks else {
            return Pending::Done(
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).ok(),
            );
        };
        let (done, result) = mpsc::sync_channel(1);
        let task: Task = (
            Box::new(move || {
                let _ = done.send(task());
            }),
            then_idle,
        );
        match tasks.send(task) {
            Ok(()) => Pending::Running(result),
            // The thread is gone: the task comes back, run here.
            Err(mpsc::SendError((task, _))) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                Pending::Done(result.try_recv().ok())
            }
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.tasks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_run_on_the_helper_in_order_and_a_panic_loses_only_its_result() {
        let helper = Helper::start();
        let here = std::thread::current().id();
        let first = helper.run(move || std::thread::current().id() != here);
        let panicked = helper.run(|| -> u32 { panic!("a task that fails") });
        let after = helper.run(|| 7);
        assert_eq!(first.wait(), Some(true), "ran on another thread");
        assert_eq!(panicked.wait(), None);
        assert_eq!(after.wait(), Some(7), "the helper goes on");
    }

    #[test]
    fn the_idle_work_runs_after_a_task_when_no_other_comes_and_again_while_it_asks() {
        let (idled, idles) = mpsc::channel();
        let again = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
        let more = std::sync::Arc::clone(&again);
        let helper = Helper::start_with_idle(Duration::from_millis(1), move || {
            let _ = idled.send(std::thread::current().name().map(str::to_owned));
            // Asks to be run again this many times.
            more.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) > 0
        });
        assert!(
            idles.recv_timeout(Duration::from_millis(50)).is_err(),
            "not before a task"
        );
        assert_eq!(helper.run(|| 0).wait(), Some(0));
        assert!(
            idles.recv_timeout(Duration::from_millis(50)).is_err(),
            "not after a task that asks for none"
        );
        let first = helper.run_idle(|| 1, true);
        assert!(first.on_helper());
        assert_eq!(first.wait(), Some(1));
        let on = idles
            .recv_timeout(Duration::from_secs(10))
            .expect("idle work after a task");
        assert_eq!(on.as_deref(), Some("caf-journaled-helper"));
        assert!(
            idles.recv_timeout(Duration::from_millis(50)).is_err(),
            "once per quiet spell"
        );
        again.store(2, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(helper.run_idle(|| 2, true).wait(), Some(2));
        for n in 0..3 {
            assert!(
                idles.recv_timeout(Duration::from_secs(10)).is_ok(),
                "idle work {n} after the next task"
            );
        }
        assert!(
            idles.recv_timeout(Duration::from_millis(50)).is_err(),
            "run again only while asked"
        );
    }
}
