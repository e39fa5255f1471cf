//! The resume crash test, with real processes: `caf-resume-agent` runs a plan of 30 steps, each
//! appending a line to a side-effect log, and is SIGKILLed at random moments at least 30 times,
//! restarted each time, until it finishes. Afterwards:
//!
//! - every step completed exactly once, except that a step interrupted mid-way may have started
//!   again (its line appears twice in a row, at most once per kill);
//! - the final state equals that of an uninterrupted run (same variables, same plan outcome,
//!   same completed steps and results);
//! - `steps_recovered` adds up: each run recovers what the runs before it completed.

#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use caf_core::{CheckpointId, CheckpointStore, FileStore};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KILLS: usize = 30;
const STEPS: usize = 30;

fn agent(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_caf-resume-agent"));
    c.arg(dir).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs the agent to the end without interruption; its final checkpoint.
fn finish(dir: &Path) -> caf_core::Checkpoint {
    let out = agent(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap();
    let store = FileStore::open(dir.join("store")).unwrap();
    store.load(&CheckpointId::new(id.trim()).unwrap()).unwrap()
}

/// What must not depend on interruptions: variables, the plan's ids, statuses and results, the
/// completed steps' names and results, the task.
fn outcome(c: &caf_core::Checkpoint) -> serde_json::Value {
    let p = &c.snapshot.progress;
    serde_json::json!({
        "variables": c.snapshot.context.variables,
        "plan": p.plan.iter().map(|s| (s.id.clone(), s.status, s.result.clone())).collect::<Vec<_>>(),
        "completed": p.completed_steps.iter().map(|s| (s.name.clone(), s.result.clone())).collect::<Vec<_>>(),
        "pending": p.pending_steps,
        "task": p.task,
        "reason": c.metadata.checkpoint_reason,
    })
}

#[test]
fn a_run_killed_at_random_finishes_as_an_uninterrupted_one() {
    let calm = tempfile::tempdir().unwrap();
    let expected = finish(calm.path());
    assert_eq!(lines(&calm.path().join("side-effects.log")).len(), STEPS);

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut kills = 0;
    let mut attempts = 0;
    let started = Instant::now();
    while kills < KILLS {
        attempts += 1;
        assert!(
            attempts < 10 * KILLS,
            "the agent keeps finishing before it is killed"
        );
        let log_before = lines(&dir.join("side-effects.log")).len();
        let mut child = agent(dir).spawn().unwrap();
        // Kill somewhere in the run: most often early (while it opens the store, restores and
        // settles), else right after its next side effect, in the middle of a step.
        if fastrand::u8(0..10) < 6 {
            std::thread::sleep(Duration::from_micros(fastrand::u64(0..3000)));
        } else {
            let deadline = Instant::now() + Duration::from_secs(20);
            while lines(&dir.join("side-effects.log")).len() <= log_before
                && Instant::now() < deadline
                && child.try_wait().unwrap().is_none()
            {
                std::thread::sleep(Duration::from_micros(200));
            }
            std::thread::sleep(Duration::from_micros(fastrand::u64(0..6000)));
        }
        if child.try_wait().unwrap().is_some() {
            // Finished before the kill: start over in a fresh directory would lose the count;
            // instead the run is simply over (the last run may finish).
            break;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
    }
    let last = finish(dir);
    eprintln!(
        "{kills} kills in {:?}, {} runs",
        started.elapsed(),
        lines(&dir.join("runs.log"))
            .iter()
            .filter(|l| l.starts_with("start"))
            .count()
    );
    assert!(kills >= KILLS, "only {kills} kills");

    // Every step ran, in order; a step appears again only right after itself (interrupted and
    // started again), at most once per kill.
    let log = lines(&dir.join("side-effects.log"));
    let mut collapsed = log.clone();
    collapsed.dedup();
    let all: Vec<String> = (1..=STEPS).map(|n| format!("step {n}")).collect();
    assert_eq!(collapsed, all, "side effects out of order: {log:?}");
    let repeats = log.len() - collapsed.len();
    assert!(repeats <= kills, "{repeats} repeats for {kills} kills");

    // The final state is the uninterrupted run's.
    assert_eq!(outcome(&last), outcome(&expected));
    assert_eq!(last.snapshot.context.variables["total"], 465);

    // steps_recovered adds up: each start recovers at least what the previous runs had
    // completed and checkpointed, never more than the side effects seen so far.
    let runs = lines(&dir.join("runs.log"));
    let starts: Vec<usize> = runs
        .iter()
        .filter_map(|l| l.strip_prefix("start "))
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(starts.first(), Some(&0), "{runs:?}");
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{runs:?}");
    let done = runs.iter().rev().find(|l| l.starts_with("done")).unwrap();
    let recovered = starts.last().unwrap();
    assert_eq!(
        done,
        &format!("done recovered={recovered} run={}", STEPS - recovered),
        "{runs:?}"
    );
    assert!(*recovered <= STEPS);
}
