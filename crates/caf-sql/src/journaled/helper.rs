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

use std::sync::mpsc;
use std::thread::JoinHandle;

type Task = Box<dyn FnOnce() + Send>;

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
    /// Waits for the task: its result, or `None` if it stopped short (it panicked).
    pub(super) fn wait(self) -> Option<T> {
        match self {
            Pending::Running(result) => result.recv().ok(),
            Pending::Done(t) => t,
        }
    }
}

impl Helper {
    /// A helper; one that runs its tasks on the calling thread when its thread cannot start.
    pub(super) fn start() -> Self {
        let (tasks, queue) = mpsc::channel::<Task>();
        let thread = std::thread::Builder::new()
            .name("caf-journaled-helper".into())
            .spawn(move || {
                for task in queue {
                    // A task that panics loses its result (its waiter sees it), not the helper.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                }
            })
            .ok();
        Self {
            tasks: thread.as_ref().map(|_| tasks),
            thread,
        }
    }

    /// Runs `task` on the helper's thread (on this one if it has none).
    pub(super) fn run<T: Send + 'static>(
        &self,
        task: impl FnOnce() -> T + Send + 'static,
    ) -> Pending<T> {
        let Some(tasks) = &self.tasks else {
            return Pending::Done(
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).ok(),
            );
        };
        let (done, result) = mpsc::sync_channel(1);
        let task: Task = Box::new(move || {
            let _ = done.send(task());
        });
        match tasks.send(task) {
            Ok(()) => Pending::Running(result),
            // The thread is gone: the task comes back, run here.
            Err(mpsc::SendError(task)) => {
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
}
