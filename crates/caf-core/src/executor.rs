//! [`Executor`]: runs a plan of named steps against a [`RuntimeState`], checkpointing after
//! each one, and resumes a run where it stopped.
//!
//! - **Start or resume.** [`Executor::run`] restores the latest valid checkpoint of the
//!   execution (a newer damaged one is skipped and reported) and skips the steps it records as
//!   completed or skipped: [`RunReport::steps_recovered`]. A resumed run first saves a
//!   checkpoint with reason `resumed`, so that the store records each resume (`caf log` shows
//!   it; [`crate::metrics`] counts it). Without a checkpoint it starts the plan, and
//!   checkpoints it once before the first step.
//! - **After each step** a checkpoint (`step_completed`) records the step completed with its
//!   result. A step that was running when the process died is run again: steps run at least
//!   once, and exactly once unless interrupted mid-way.
//! - **Failures.** Each step has a [`RetryPolicy`] (attempts and exponential backoff). When the
//!   last attempt fails, the step is marked failed, the run's last error set, and a checkpoint
//!   with reason `error` saved *before* [`ExecutorError::Step`] is returned. Running again
//!   retries the failed step.
//! - **Cancelling** ([`CancelToken`]) stops before the next step (or during a backoff) and saves
//!   a checkpoint with reason `paused`; the run can resume later.
//! - **In-flight tool calls.** A tool call that was started but not finished when the process
//!   died is never dropped silently: on resume each one is passed to the
//!   [`Executor::on_in_flight`] hook, which decides to retry it (the call is cancelled and the
//!   step runs again) or to reconcile it (its outcome, learned elsewhere, is recorded); without a
//!   hook they are cancelled with a note. Either way they are listed in
//!   [`RunReport::in_flight`], and the decision is in the next checkpoint.

use crate::error::{Error, Result};
use crate::format::{CheckpointReason, PlanStep, StepStatus, ToolCall};
use crate::id::{CheckpointId, ExecutionId};
use crate::manager::{CheckpointManager, CheckpointOptions};
use crate::runtime::RuntimeState;
use crate::store::CheckpointStore;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a step is tried, and how long to wait between tries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Tries in all (at least 1).
    pub attempts: u32,
    /// The wait after the first failure.
    pub backoff: Duration,
    /// Each further wait is the previous one times this.
    pub multiplier: f64,
    /// No wait is longer than this.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// One try, no retry.
    fn default() -> Self {
        Self::none()
    }
}

impl RetryPolicy {
    /// One try.
    pub fn none() -> Self {
        Self {
            attempts: 1,
            backoff: Duration::ZERO,
            multiplier: 1.0,
            max_backoff: Duration::ZERO,
        }
    }

    /// `attempts` tries, waiting `backoff`, then twice as long each time (at most 30 s).
    pub fn exponential(attempts: u32, backoff: Duration) -> Self {
        Self {
            attempts: attempts.max(1),
            backoff,
            multiplier: 2.0,
            max_backoff: Duration::from_secs(30),
        }
    }

    /// The wait before try `next` (2 for the first retry).
    pub fn wait_before(&self, next: u32) -> Duration {
        let exp = i32::try_from(next.saturating_sub(2)).unwrap_or(i32::MAX);
        let secs = self.backoff.as_secs_f64() * self.multiplier.max(1.0).powi(exp);
        Duration::try_from_secs_f64(secs)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff.max(self.backoff))
    }
}

/// Asks a running [`Executor`] to stop; clones share the request.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop (before its next step, or during a backoff).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether cancelling was asked.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a step function gets: the state to change, and its place in the run.
pub struct StepContext<'a> {
    /// The state; what the step changes is in the checkpoint taken after it.
    pub state: &'a mut RuntimeState,
    /// The step's id.
    pub step_id: &'a str,
    /// This try (1 for the first).
    pub attempt: u32,
    /// The step's parameters.
    pub parameters: &'a Map<String, Value>,
    save: &'a dyn Fn(&mut RuntimeState, CheckpointReason) -> Result<CheckpointId>,
    cancel: &'a CancelToken,
}

impl StepContext<'_> {
    /// Saves a checkpoint now, in the middle of the step: e.g. right after starting a tool call
    /// with side effects, so that a crash leaves it on record as in flight.
    pub fn checkpoint(&mut self, reason: CheckpointReason) -> Result<CheckpointId> {
        (self.save)(self.state, reason)
    }

    /// Whether the run was asked to stop (a long step may return early).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// A step's function: its result, or why it failed.
pub type StepFn = Box<dyn FnMut(&mut StepContext<'_>) -> std::result::Result<Value, String> + Send>;

/// One step of a plan.
pub struct Step {
    plan: PlanStep,
    retry: RetryPolicy,
    run: StepFn,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("plan", &self.plan)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Step {
    /// A step with an id (unique in the plan) and its function.
    pub fn new(
        id: impl Into<String>,
        run: impl FnMut(&mut StepContext<'_>) -> std::result::Result<Value, String> + Send + 'static,
    ) -> Self {
        Self {
            plan: PlanStep::new(id),
            retry: RetryPolicy::none(),
            run: Box::new(run),
        }
    }

    /// Describes the step.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.plan.description = Some(d.into());
        self
    }

    /// Names its action (a tool or routine).
    pub fn action(mut self, a: impl Into<String>) -> Self {
        self.plan.action = Some(a.into());
        self
    }

    /// Sets its parameters.
    pub fn parameters(mut self, p: Map<String, Value>) -> Self {
        self.plan.parameters = p;
        self
    }

    /// Makes it wait for other steps (by id).
    pub fn depends_on<I: IntoIterator<Item = S>, S: Into<String>>(mut self, ids: I) -> Self {
        self.plan.dependencies = ids.into_iter().map(Into::into).collect();
        self
    }

    /// Sets its retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }
}

/// What to do with a tool call that was in flight when the previous process died.
#[derive(Debug, Clone, PartialEq)]
pub enum InFlight {
    /// Give it up (it is cancelled, with this note); its step runs again and may call again.
    Retry(String),
    /// Its outcome is known (e.g. looked up in the remote system): record it.
    Reconcile(std::result::Result<Value, String>),
}

type InFlightHook = Box<dyn FnMut(&ToolCall) -> InFlight + Send>;
type StartHook = Box<dyn FnMut(&RunReport) + Send>;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every step is done.
    Completed,
    /// Cancelled; a `paused` checkpoint was saved.
    Paused,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The checkpoint the run resumed from, if it resumed.
    pub resumed_from: Option<CheckpointId>,
    /// Newer checkpoints that could not be loaded and were skipped, with why.
    pub skipped: Vec<(CheckpointId, String)>,
    /// Steps already done when the run started (the seed's `steps_recovered`).
    pub steps_recovered: usize,
    /// Steps that were running when the previous process died, and run again.
    pub steps_restarted: Vec<String>,
    /// The steps this run completed, in order.
    pub steps_run: Vec<String>,
    /// Tool calls that were in flight at the crash, as they were, with what was decided.
    pub in_flight: Vec<(ToolCall, InFlight)>,
    /// How it ended.
    pub outcome: Outcome,
    /// The last checkpoint saved.
    pub last_checkpoint: Option<CheckpointId>,
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// A step failed after all its tries; the failure was checkpointed first.
    #[error(
        "step {step:?} failed after {attempts} attempt(s): {message} (checkpoint {checkpoint})"
    )]
    Step {
        /// The step.
        step: String,
        /// The last error.
        message: String,
        /// Tries made in this run.
        attempts: u32,
        /// The `error` checkpoint that records it.
        checkpoint: CheckpointId,
    },
    /// The plan of the checkpoint does not match the steps given (a resumed run must run the
    /// same plan).
    #[error("execution {execution}: its checkpoint has a plan of steps {found:?}, this run has {expected:?}")]
    PlanMismatch {
        /// The execution.
        execution: ExecutionId,
        /// The step ids given.
        expected: Vec<String>,
        /// The step ids in the checkpoint.
        found: Vec<String>,
    },
    /// Two steps have one id, or a step depends on a step that is not before it.
    #[error("invalid plan: {0}")]
    InvalidPlan(String),
    /// The store failed (the state is as the last checkpoint left it).
    #[error(transparent)]
    Store(#[from] Error),
}

/// Runs a plan of steps against a [`RuntimeState`], checkpointing through a
/// [`CheckpointManager`]; see the [module docs](self).
pub struct Executor<'m, S> {
    manager: &'m CheckpointManager<S>,
    agent_id: String,
    execution_id: ExecutionId,
    task: Option<String>,
    steps: Vec<Step>,
    cancel: CancelToken,
    on_in_flight: Option<InFlightHook>,
    on_start: Option<StartHook>,
    sleep: Box<dyn Fn(Duration) + Send>,
}

impl<'m, S: CheckpointStore> Executor<'m, S> {
    /// An executor for `execution_id` of `agent_id`, saving through `manager`.
    pub fn new(
        manager: &'m CheckpointManager<S>,
        agent_id: impl Into<String>,
        execution_id: ExecutionId,
    ) -> Self {
        Self {
            manager,
            agent_id: agent_id.into(),
            execution_id,
            task: None,
            steps: Vec::new(),
            cancel: CancelToken::new(),
            on_in_flight: None,
            on_start: None,
            sleep: Box::new(std::thread::sleep),
        }
    }

    /// Records the run's query or task.
    pub fn task(mut self, task: impl Into<String>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// Adds a step at the end of the plan.
    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Uses `token` to cancel the run from elsewhere.
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }

    /// Decides, on resume, what to do with each tool call left in flight by a crash.
    pub fn on_in_flight(
        mut self,
        hook: impl FnMut(&ToolCall) -> InFlight + Send + 'static,
    ) -> Self {
        self.on_in_flight = Some(Box::new(hook));
        self
    }

    /// Calls `hook` once the run knows where it starts (what it resumed from, the steps
    /// recovered), before the first step runs.
    pub fn on_start(mut self, hook: impl FnMut(&RunReport) + Send + 'static) -> Self {
        self.on_start = Some(Box::new(hook));
        self
    }

    /// Waits with `sleep` between tries (tests use a fake).
    pub fn sleep_with(mut self, sleep: impl Fn(Duration) + Send + 'static) -> Self {
        self.sleep = Box::new(sleep);
        self
    }

    fn check_plan(&self) -> std::result::Result<(), ExecutorError> {
        for (i, s) in self.steps.iter().enumerate() {
            let before = &self.steps[..i];
            if before.iter().any(|b| b.plan.id == s.plan.id) {
                return Err(ExecutorError::InvalidPlan(format!(
                    "two steps have the id {:?}",
                    s.plan.id
                )));
            }
            if let Some(d) = s
                .plan
                .dependencies
                .iter()
                .find(|d| !before.iter().any(|b| &b.plan.id == *d))
            {
                return Err(ExecutorError::InvalidPlan(format!(
                    "step {:?} depends on {d:?}, which is not an earlier step",
                    s.plan.id
                )));
            }
        }
        Ok(())
    }

    fn save(&self, state: &mut RuntimeState, reason: CheckpointReason) -> Result<CheckpointId> {
        Ok(self
            .manager
            .checkpoint(state, CheckpointOptions::new(reason))?
            .id)
    }

    /// The state to run from: restored, or new with the plan; and what the restore reported.
    fn start(
        &mut self,
        report: &mut RunReport,
    ) -> std::result::Result<RuntimeState, ExecutorError> {
        let ids: Vec<String> = self.steps.iter().map(|s| s.plan.id.clone()).collect();
        match self.manager.restore_latest(&self.execution_id) {
            Ok(restored) => {
                let mut state = restored.state;
                report.resumed_from = Some(restored.checkpoint.id.clone());
                report.skipped = restored.skipped;
                let found: Vec<String> = state.plan().iter().map(|s| s.id.clone()).collect();
                if found != ids {
                    return Err(ExecutorError::PlanMismatch {
                        execution: self.execution_id.clone(),
                        expected: ids,
                        found,
                    });
                }
                report.steps_recovered = state.plan().iter().filter(|s| s.status.is_done()).count();
                report.steps_restarted = state
                    .plan()
                    .iter()
                    .filter(|s| s.status == StepStatus::Running)
                    .map(|s| s.id.clone())
                    .collect();
                self.settle_in_flight(&mut state, report)?;
                // The resume is recorded: `caf log` shows where the run picked up, and the
                // store's metrics count it (see `crate::metrics`).
                report.last_checkpoint = Some(self.save(
                    &mut state,
                    CheckpointReason::Other(crate::metrics::RESUMED_REASON.into()),
                )?);
                Ok(state)
            }
            Err(Error::NotFound { .. }) => {
                let mut state = RuntimeState::with_clock(
                    self.agent_id.clone(),
                    self.execution_id.clone(),
                    self.manager.clock().clone(),
                );
                if let Some(task) = &self.task {
                    state.set_task(task.clone());
                }
                state.set_plan_steps(self.steps.iter().map(|s| s.plan.clone()).collect());
                report.last_checkpoint =
                    Some(self.save(&mut state, CheckpointReason::Other("started".into()))?);
                Ok(state)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Decides what becomes of each tool call left in flight (recorded in the state; the
    /// `resumed` checkpoint saved next keeps the decisions).
    fn settle_in_flight(
        &mut self,
        state: &mut RuntimeState,
        report: &mut RunReport,
    ) -> std::result::Result<(), ExecutorError> {
        let calls: Vec<ToolCall> = state.in_flight_tool_calls().into_iter().cloned().collect();
        if calls.is_empty() {
            return Ok(());
        }
        for call in calls {
            let decision = match &mut self.on_in_flight {
                Some(hook) => hook(&call),
                None => InFlight::Retry(
                    "in flight when the process died; abandoned on resume (no on_in_flight hook)"
                        .into(),
                ),
            };
            // The calls are open (listed as in flight), so these cannot fail.
            let _ = match &decision {
                InFlight::Retry(note) => state.cancel_tool_call(&call.id, note.clone()),
                InFlight::Reconcile(Ok(v)) => state.complete_tool_call(&call.id, v.clone()),
                InFlight::Reconcile(Err(e)) => state.fail_tool_call(&call.id, e.clone()),
            };
            report.in_flight.push((call, decision));
        }
        Ok(())
    }

    /// Runs the plan to the end (or until cancelled, or a step fails for good), resuming from
    /// the execution's latest valid checkpoint if it has one.
    pub fn run(mut self) -> std::result::Result<RunReport, ExecutorError> {
        self.check_plan()?;
        let mut report = RunReport {
            execution_id: self.execution_id.clone(),
            resumed_from: None,
            skipped: Vec::new(),
            steps_recovered: 0,
            steps_restarted: Vec::new(),
            steps_run: Vec::new(),
            in_flight: Vec::new(),
            outcome: Outcome::Completed,
            last_checkpoint: None,
        };
        let mut state = self.start(&mut report)?;
        if let Some(hook) = &mut self.on_start {
            hook(&report);
        }
        let mut steps = std::mem::take(&mut self.steps);
        for step in &mut steps {
            let id = step.plan.id.clone();
            if state.plan_step(&id).is_some_and(|s| s.status.is_done()) {
                continue;
            }
            if self.cancel.is_cancelled() {
                return self.pause(state, report);
            }
            let mut attempt = 0;
            loop {
                attempt += 1;
                state.start_plan_step(&id).map_err(Error::State)?;
                let outcome = {
                    let save = |s: &mut RuntimeState, r: CheckpointReason| self.save(s, r);
                    let mut ctx = StepContext {
                        state: &mut state,
                        step_id: &id,
                        attempt,
                        parameters: &step.plan.parameters,
                        save: &save,
                        cancel: &self.cancel,
                    };
                    (step.run)(&mut ctx)
                };
                match outcome {
                    Ok(result) => {
                        state
                            .complete_plan_step(&id, Some(result))
                            .map_err(Error::State)?;
                        report.last_checkpoint =
                            Some(self.save(&mut state, CheckpointReason::StepCompleted)?);
                        report.steps_run.push(id.clone());
                        break;
                    }
                    Err(message) if attempt < step.retry.attempts => {
                        let wait = step.retry.wait_before(attempt + 1);
                        if self.wait_or_cancel(wait) {
                            state.fail_plan_step(&id, message).map_err(Error::State)?;
                            return self.pause(state, report);
                        }
                    }
                    Err(message) => {
                        state
                            .fail_plan_step(&id, message.clone())
                            .map_err(Error::State)?;
                        let checkpoint = self.save(&mut state, CheckpointReason::Error)?;
                        return Err(ExecutorError::Step {
                            step: id,
                            message,
                            attempts: attempt,
                            checkpoint,
                        });
                    }
                }
            }
        }
        report.last_checkpoint = Some(self.save(&mut state, CheckpointReason::Completed)?);
        Ok(report)
    }

    /// Waits `d` in short slices; `true` if cancelled meanwhile.
    fn wait_or_cancel(&self, d: Duration) -> bool {
        let slice = Duration::from_millis(20);
        let mut left = d;
        while !left.is_zero() {
            if self.cancel.is_cancelled() {
                return true;
            }
            let now = left.min(slice);
            (self.sleep)(now);
            left -= now;
        }
        self.cancel.is_cancelled()
    }

    fn pause(
        &self,
        mut state: RuntimeState,
        mut report: RunReport,
    ) -> std::result::Result<RunReport, ExecutorError> {
        report.last_checkpoint = Some(self.save(&mut state, CheckpointReason::Paused)?);
        report.outcome = Outcome::Paused;
        Ok(report)
    }
}
