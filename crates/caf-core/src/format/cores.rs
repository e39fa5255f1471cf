//! Keeping the helper thread of [`super::beside`] off its caller's core (Linux).
//!
//! The helper is useful only on another core than the thread that hands it work: on the same
//! core it waits behind its caller, which then takes its tasks back and does everything itself.
//! Left to itself the kernel sometimes woke the helper on its waker's core and left it queued
//! there for milliseconds while the other core sat idle (caught by an instrumented build on the
//! 2-vCPU machine of docs/benchmarks.md; restores then took the time of doing everything in
//! line). So before handing over work a caller [`steer`]s the helper: if the caller is on a core
//! the helper is not already kept off, the helper may from then on run on every core it was
//! allowed at its start but the caller's. That costs one `getcpu` call per hand-over, and a
//! `sched_setaffinity` only when the caller has moved to another core.
//!
//! Nothing is steered where the helper was allowed a single core, or on other systems.

#[cfg(target_os = "linux")]
mod linux {
    use rustix::thread::{gettid, sched_getaffinity, sched_getcpu, sched_setaffinity};
    use rustix::thread::{CpuSet, Pid};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;

    /// The helper's thread and the cores it was allowed at its start; unset if it had one only.
    static HELPER: OnceLock<(Pid, CpuSet)> = OnceLock::new();

    /// The core the helper is kept off ([`NONE`] at first).
    static AVOIDED: AtomicUsize = AtomicUsize::new(NONE);

    const NONE: usize = usize::MAX;

    /// Called on the helper thread when it starts: remembers it, if there is a core to steer
    /// it to.
    pub(crate) fn register_helper() {
        if let Ok(allowed) = sched_getaffinity(None) {
            if allowed.count() > 1 {
                let _ = HELPER.set((gettid(), allowed));
            }
        }
    }

    /// Keeps the helper off the calling thread's core (see the module docs).
    pub(crate) fn steer() {
        let Some((helper, allowed)) = HELPER.get() else {
            return;
        };
        let here = sched_getcpu();
        if AVOIDED.swap(here, Ordering::Relaxed) == here {
            return;
        }
        // A failure (the helper gone, a policy that forbids it) leaves the kernel to place it.
        let _ = keep_off(*helper, allowed, here);
    }

    /// Lets `thread` run on the cores of `allowed` but `core` (on all of them if that would
    /// leave none).
    fn keep_off(thread: Pid, allowed: &CpuSet, core: usize) -> rustix::io::Result<()> {
        let mut away = *allowed;
        if core < CpuSet::MAX_CPU {
            away.unset(core);
        }
        sched_setaffinity(
            Some(thread),
            if away.count() == 0 { allowed } else { &away },
        )
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_thread_kept_off_a_core_may_run_on_every_other_it_was_allowed() {
            let allowed = sched_getaffinity(None).unwrap();
            let cores: Vec<usize> = (0..CpuSet::MAX_CPU)
                .filter(|c| allowed.is_set(*c))
                .collect();
            let (tid_tx, tid_rx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let other = std::thread::spawn(move || {
                tid_tx.send(gettid()).unwrap();
                let _ = done_rx.recv();
            });
            let tid = tid_rx.recv().unwrap();
            keep_off(tid, &allowed, cores[0]).unwrap();
            let now = sched_getaffinity(Some(tid)).unwrap();
            if cores.len() > 1 {
                assert!(!now.is_set(cores[0]), "still allowed on core {}", cores[0]);
                assert_eq!(now.count() + 1, allowed.count());
                assert!(cores[1..].iter().all(|c| now.is_set(*c)));
            } else {
                // One core only: nothing to keep it off to, so it keeps that one.
                assert!(now.is_set(cores[0]) && now.count() == 1);
            }
            done_tx.send(()).unwrap();
            other.join().unwrap();
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{register_helper, steer};

/// Nothing to remember on other systems.
#[cfg(not(target_os = "linux"))]
pub(crate) fn register_helper() {}

/// Nothing is steered on other systems.
#[cfg(not(target_os = "linux"))]
pub(crate) fn steer() {}
