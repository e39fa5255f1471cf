//! The resumable executor ([`caf_core::Executor`]): checkpoints after each step, resumes past
//! completed steps, checkpoints a failure before returning it, retries with backoff, pauses on
//! cancel, and reports tool calls left in flight. On files, SQLite and (with
//! `CAF_TEST_POSTGRES_URL`) PostgreSQL.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::executor::{ExecutorError, InFlight, Outcome};
use caf_core::format::{StepStatus, ToolStatus};
use caf_core::{
    CancelToken, CheckpointManager, CheckpointReason, CheckpointStore, ExecutionId, Executor,
    ListFilter, RetryPolicy, Step,
};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn exec() -> ExecutionId {
    ExecutionId::new("exec_executor").unwrap()
}

/// A step that records its id in `log` and returns its number.
fn counting(id: &str, log: &Arc<Mutex<Vec<String>>>) -> Step {
    let (id2, log) = (id.to_string(), log.clone());
    Step::new(id, move |ctx| {
        log.lock().unwrap().push(id2.clone());
        ctx.state.set_variable(&id2, json!(ctx.attempt));
        Ok(json!(id2))
    })
}

fn reasons<S: CheckpointStore>(m: &CheckpointManager<S>) -> Vec<String> {
    let mut l = m.store().list(&ListFilter::execution(&exec())).unwrap();
    l.reverse();
    l.iter().map(|s| s.checkpoint_reason.to_string()).collect()
}

fn runs_and_resumes<S: CheckpointStore>(store: S) {
    let m = CheckpointManager::new(store);
    let log = Arc::new(Mutex::new(Vec::new()));
    let fail_c = Arc::new(Mutex::new(true));
    let make = |fail_c: Arc<Mutex<bool>>| {
        Executor::new(&m, "agent", exec())
            .task("three steps")
            .step(counting("a", &log))
            .step(counting("b", &log).depends_on(["a"]))
            .step(Step::new("c", move |_| {
                if *fail_c.lock().unwrap() {
                    Err("the tool is down".to_string())
                } else {
                    Ok(json!("c done"))
                }
            }))
    };
    // First run: a and b complete, c fails; the failure is checkpointed before it is returned.
    let err = make(fail_c.clone()).run().unwrap_err();
    let ExecutorError::Step {
        step, checkpoint, ..
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!(step, "c");
    let failed = m.store().load(&checkpoint).unwrap();
    assert_eq!(failed.metadata.checkpoint_reason, CheckpointReason::Error);
    let last_error = failed.snapshot.progress.last_error.clone().unwrap();
    assert_eq!(last_error.step.as_deref(), Some("c"));
    assert_eq!(last_error.message, "the tool is down");
    assert_eq!(failed.snapshot.progress.plan[2].status, StepStatus::Failed);
    assert_eq!(
        failed.snapshot.progress.task.as_deref(),
        Some("three steps")
    );
    assert_eq!(
        reasons(&m),
        ["started", "step_completed", "step_completed", "error"]
    );
    // Second run: resumes past a and b, runs c only.
    *fail_c.lock().unwrap() = false;
    let report = make(fail_c).run().unwrap();
    assert_eq!(report.steps_recovered, 2);
    assert_eq!(report.steps_run, ["c"]);
    assert_eq!(report.outcome, Outcome::Completed);
    assert_eq!(*log.lock().unwrap(), ["a", "b"], "a and b ran once");
    let done = m
        .store()
        .load(report.last_checkpoint.as_ref().unwrap())
        .unwrap();
    assert_eq!(done.metadata.checkpoint_reason, CheckpointReason::Completed);
    assert!(done.snapshot.progress.pending_steps.is_empty());
    assert!(done
        .snapshot
        .progress
        .plan
        .iter()
        .all(|s| s.status == StepStatus::Completed));
    // A third run has nothing to do.
    let again = Executor::new(&m, "agent", exec())
        .step(counting("a", &log))
        .step(counting("b", &log))
        .step(counting("c", &log))
        .run()
        .unwrap();
    assert_eq!(again.steps_recovered, 3);
    assert!(again.steps_run.is_empty());
}

#[test]
fn runs_and_resumes_on_files() {
    let tmp = tempfile::tempdir().unwrap();
    runs_and_resumes(caf_core::FileStore::open(tmp.path()).unwrap());
}

#[test]
fn runs_and_resumes_on_sqlite() {
    runs_and_resumes(sql_common::TempSql::sqlite());
}

#[test]
fn runs_and_resumes_on_hybrid() {
    runs_and_resumes(sql_common::TempHybrid::new());
}

#[test]
fn runs_and_resumes_on_postgres() {
    let Some(base) = sql_common::pg_base("runs_and_resumes_on_postgres") else {
        return;
    };
    runs_and_resumes(sql_common::TempSql::postgres(&base));
}

#[test]
fn a_step_is_retried_with_growing_backoff() {
    let m = CheckpointManager::new(caf_core::MemoryStore::new());
    let waits = Arc::new(Mutex::new(Vec::new()));
    let w = waits.clone();
    let report = Executor::new(&m, "agent", exec())
        .sleep_with(move |d| w.lock().unwrap().push(d))
        .step(
            Step::new("flaky", |ctx| {
                if ctx.attempt < 3 {
                    Err(format!("try {}", ctx.attempt))
                } else {
                    Ok(json!(ctx.attempt))
                }
            })
            .retry(RetryPolicy::exponential(3, Duration::from_millis(40))),
        )
        .run()
        .unwrap();
    assert_eq!(report.steps_run, ["flaky"]);
    let total: Duration = waits.lock().unwrap().iter().sum();
    assert_eq!(total, Duration::from_millis(40 + 80), "{waits:?}");
    let c = m
        .store()
        .load(report.last_checkpoint.as_ref().unwrap())
        .unwrap();
    assert_eq!(c.snapshot.progress.plan[0].attempts, 3);
    assert_eq!(c.snapshot.progress.plan[0].result, Some(json!(3)));
}

#[test]
fn cancelling_leaves_a_paused_checkpoint_and_the_run_resumes() {
    let m = CheckpointManager::new(caf_core::MemoryStore::new());
    let token = CancelToken::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let t = token.clone();
    let report = Executor::new(&m, "agent", exec())
        .cancel_token(token)
        .step(Step::new("first", move |_| {
            t.cancel();
            Ok(json!(1))
        }))
        .step(counting("second", &log))
        .run()
        .unwrap();
    assert_eq!(report.outcome, Outcome::Paused);
    assert_eq!(report.steps_run, ["first"]);
    let paused = m
        .store()
        .load(report.last_checkpoint.as_ref().unwrap())
        .unwrap();
    assert_eq!(paused.metadata.checkpoint_reason, CheckpointReason::Paused);
    assert!(log.lock().unwrap().is_empty());
    let report = Executor::new(&m, "agent", exec())
        .step(counting("first", &log))
        .step(counting("second", &log))
        .run()
        .unwrap();
    assert_eq!(report.steps_recovered, 1);
    assert_eq!(*log.lock().unwrap(), ["second"]);
}

#[test]
fn tool_calls_in_flight_at_a_crash_are_reported_and_settled() {
    let m = CheckpointManager::new(caf_core::MemoryStore::new());
    // A step starts a call, checkpoints (write-ahead), and the process "dies" (the step fails
    // for good here, leaving the call open in the last checkpoint).
    let first = Executor::new(&m, "agent", exec())
        .step(Step::new("pay", |ctx| {
            ctx.state.start_tool_call("payments", json!({"amount": 10}));
            ctx.checkpoint(CheckpointReason::ToolExecuted).unwrap();
            Err("connection reset".to_string())
        }))
        .run();
    assert!(first.is_err());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let report = Executor::new(&m, "agent", exec())
        .on_in_flight(move |call| {
            s2.lock().unwrap().push(call.tool_id.clone());
            InFlight::Reconcile(Ok(json!({"paid": true})))
        })
        .step(Step::new("pay", |ctx| {
            // The reconciled call is done: nothing to pay again.
            assert!(ctx.state.in_flight_tool_calls().is_empty());
            Ok(json!("reconciled"))
        }))
        .run()
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), ["payments"]);
    assert_eq!(report.in_flight.len(), 1);
    assert_eq!(report.in_flight[0].0.status, ToolStatus::Running);
    let c = m
        .store()
        .load(report.last_checkpoint.as_ref().unwrap())
        .unwrap();
    assert_eq!(c.snapshot.tool_state.calls[0].status, ToolStatus::Completed);

    // Without a hook the call is cancelled with a note, and still reported.
    let m = CheckpointManager::new(caf_core::MemoryStore::new());
    let _ = Executor::new(&m, "agent", exec())
        .step(Step::new("pay", |ctx| {
            ctx.state.start_tool_call("payments", json!({}));
            ctx.checkpoint(CheckpointReason::ToolExecuted).unwrap();
            Err("died".to_string())
        }))
        .run();
    let report = Executor::new(&m, "agent", exec())
        .step(Step::new("pay", |_| Ok(json!(1))))
        .run()
        .unwrap();
    assert!(matches!(report.in_flight[0].1, InFlight::Retry(_)));
    let c = m
        .store()
        .load(report.last_checkpoint.as_ref().unwrap())
        .unwrap();
    assert_eq!(c.snapshot.tool_state.calls[0].status, ToolStatus::Cancelled);
    assert!(c.snapshot.tool_state.calls[0].error.is_some());
}

#[test]
fn a_resumed_run_must_have_the_same_plan() {
    let m = CheckpointManager::new(caf_core::MemoryStore::new());
    Executor::new(&m, "agent", exec())
        .step(Step::new("a", |_| Ok(json!(1))))
        .run()
        .unwrap();
    let err = Executor::new(&m, "agent", exec())
        .step(Step::new("b", |_| Ok(json!(1))))
        .run()
        .unwrap_err();
    assert!(matches!(err, ExecutorError::PlanMismatch { .. }), "{err}");
    let err = Executor::new(&m, "agent", ExecutionId::new("other").unwrap())
        .step(Step::new("a", |_| Ok(json!(1))).depends_on(["z"]))
        .run()
        .unwrap_err();
    assert!(matches!(err, ExecutorError::InvalidPlan(_)), "{err}");
}

#[test]
fn checkpoint_if_changed_uses_dirty_tracking() {
    let m = CheckpointManager::new(caf_core::MemoryStore::new());
    let mut state = caf_core::RuntimeState::new("agent");
    let opts = || caf_core::CheckpointOptions::new(CheckpointReason::Periodic);
    // The first checkpoint is always taken.
    assert!(m
        .checkpoint_if_changed(&mut state, opts())
        .unwrap()
        .is_some());
    assert!(m
        .checkpoint_if_changed(&mut state, opts())
        .unwrap()
        .is_none());
    state.set_variable("x", json!(1));
    assert!(m
        .checkpoint_if_changed(&mut state, opts())
        .unwrap()
        .is_some());
    assert!(m
        .checkpoint_if_changed(&mut state, opts())
        .unwrap()
        .is_none());
    state.add_tokens(5);
    assert!(m
        .checkpoint_if_changed(&mut state, opts())
        .unwrap()
        .is_some());
    let listed = m
        .store()
        .list(&ListFilter::execution(state.execution_id()))
        .unwrap();
    assert_eq!(listed.len(), 3);
}
