//! [`RuntimeState`]: the agent's live state and its typed mutation API.

use super::events::{ContextOp, Event};
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::format::json::pointer_of;
use crate::format::{
    Checkpoint, CompletedStep, LastError, PlanStep, Snapshot, StepStatus, Thought, ToolCall,
    ToolStatus,
};
use crate::id::{CheckpointId, ExecutionId};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// A mutation that refers to something that is not there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// No tool call has this id.
    #[error("no tool call with id {0:?}")]
    UnknownToolCall(String),
    /// The tool call has already finished.
    #[error("tool call {id:?} is already {status}")]
    ToolCallFinished {
        /// The call.
        id: String,
        /// Its status.
        status: &'static str,
    },
    /// No thought has this id.
    #[error("no thought with id {0:?}")]
    UnknownThought(String),
    /// No plan step has this id.
    #[error("no plan step with id {0:?}")]
    UnknownStep(String),
}

/// What changed since the last checkpoint (for incremental writers such as the SQL layer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirty {
    /// Thoughts added, in order.
    pub thoughts_added: Vec<String>,
    /// Tool calls added or changed.
    pub tool_calls_changed: BTreeSet<String>,
    /// Whether the context changed.
    pub context_changed: bool,
    /// Whether the progress changed.
    pub progress_changed: bool,
    /// Whether the counters (tokens) changed.
    pub counters_changed: bool,
}

impl Dirty {
    /// Whether nothing changed.
    pub fn is_clean(&self) -> bool {
        self == &Self::default()
    }
}

type Subscriber = Box<dyn FnMut(&Event) + Send>;

/// The mutable state of one agent execution.
pub struct RuntimeState {
    execution_id: ExecutionId,
    agent_id: String,
    snapshot: Snapshot,
    tokens_used: u64,
    duration_base_ms: u64,
    resumed_at: Timestamp,
    last_checkpoint: Option<CheckpointId>,
    dirty: Dirty,
    clock: Arc<dyn Clock>,
    subscribers: Vec<Subscriber>,
    next_seq: u64,
}

impl fmt::Debug for RuntimeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeState")
            .field("execution_id", &self.execution_id)
            .field("agent_id", &self.agent_id)
            .field("snapshot", &self.snapshot)
            .field("tokens_used", &self.tokens_used)
            .field("last_checkpoint", &self.last_checkpoint)
            .field("dirty", &self.dirty)
            .field("subscribers", &self.subscribers.len())
            .finish()
    }
}

impl RuntimeState {
    /// A fresh state for a new execution of `agent_id`, on the system clock.
    pub fn new(agent_id: impl Into<String>) -> Self {
        Self::with_clock(agent_id, ExecutionId::generate(), Arc::new(SystemClock))
    }

    /// A fresh state with a chosen execution id and clock.
    pub fn with_clock(
        agent_id: impl Into<String>,
        execution_id: ExecutionId,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let resumed_at = clock.now();
        Self {
            execution_id,
            agent_id: agent_id.into(),
            snapshot: Snapshot::default(),
            tokens_used: 0,
            duration_base_ms: 0,
            resumed_at,
            last_checkpoint: None,
            dirty: Dirty::default(),
            clock,
            subscribers: Vec::new(),
            next_seq: 1,
        }
    }

    /// The state a checkpoint captured, ready to continue: counters (tokens, duration) go on from
    /// where the checkpoint left them, and the next checkpoint's parent is this one.
    pub fn from_checkpoint(ckpt: &Checkpoint, clock: Arc<dyn Clock>) -> Self {
        let mut s = Self::with_clock(ckpt.agent_id.clone(), ckpt.execution_id.clone(), clock);
        s.snapshot = ckpt.snapshot.clone();
        s.tokens_used = ckpt.metadata.tokens_used;
        s.duration_base_ms = ckpt.metadata.duration_ms;
        s.last_checkpoint = Some(ckpt.id.clone());
        s.next_seq = next_seq_after(&s.snapshot);
        s
    }

    // ---- reading ------------------------------------------------------------------------------

    /// The execution this state belongs to.
    pub fn execution_id(&self) -> &ExecutionId {
        &self.execution_id
    }

    /// The agent.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// The four parts, as they would be stored.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The thoughts, oldest first (each shared with the checkpoints taken since it last
    /// changed).
    pub fn thoughts(&self) -> &[Arc<Thought>] {
        &self.snapshot.thought_chain.thoughts
    }

    /// The tool calls, in the order they were made (each shared with the checkpoints taken
    /// since it last changed).
    pub fn tool_calls(&self) -> &[Arc<ToolCall>] {
        &self.snapshot.tool_state.calls
    }

    /// A context variable.
    pub fn variable(&self, key: &str) -> Option<&Value> {
        self.snapshot.context.variables.get(key)
    }

    /// The plan steps still to do.
    pub fn remaining_steps(&self) -> &[String] {
        &self.snapshot.progress.pending_steps
    }

    /// The current step number.
    pub fn step_number(&self) -> u64 {
        self.snapshot.progress.step_number
    }

    /// Tokens used so far.
    pub fn tokens_used(&self) -> u64 {
        self.tokens_used
    }

    /// Milliseconds spent in the execution so far (across resumes).
    pub fn duration_ms(&self) -> u64 {
        let since = (self.clock.now().as_micros() - self.resumed_at.as_micros()).max(0) / 1000;
        self.duration_base_ms
            .saturating_add(u64::try_from(since).unwrap_or(0))
    }

    /// The last checkpoint taken of (or restored into) this state.
    pub fn last_checkpoint(&self) -> Option<&CheckpointId> {
        self.last_checkpoint.as_ref()
    }

    /// What changed since the last checkpoint.
    pub fn dirty(&self) -> &Dirty {
        &self.dirty
    }

    /// The clock this state reads time from.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    // ---- events -------------------------------------------------------------------------------

    /// Calls `f` with every event from now on.
    pub fn subscribe(&mut self, f: impl FnMut(&Event) + Send + 'static) {
        self.subscribers.push(Box::new(f));
    }

    fn emit(&mut self, event: Event) {
        for s in &mut self.subscribers {
            s(&event);
        }
    }

    fn next_id(&mut self, prefix: &str) -> String {
        let n = self.next_seq;
        self.next_seq += 1;
        format!("{prefix}_{n:04}")
    }

    // ---- thoughts -----------------------------------------------------------------------------

    /// Adds a thought and returns its id.
    pub fn add_thought(
        &mut self,
        kind: impl Into<String>,
        content: impl Into<String>,
        confidence: Option<f64>,
    ) -> String {
        self.push_thought(None, kind.into(), content.into(), confidence)
    }

    /// Adds a thought that follows from `parent_id` (linked both ways) and returns its id.
    pub fn add_child_thought(
        &mut self,
        parent_id: &str,
        kind: impl Into<String>,
        content: impl Into<String>,
        confidence: Option<f64>,
    ) -> Result<String, StateError> {
        if !self.thoughts().iter().any(|t| t.id == parent_id) {
            return Err(StateError::UnknownThought(parent_id.to_string()));
        }
        Ok(self.push_thought(
            Some(parent_id.to_string()),
            kind.into(),
            content.into(),
            confidence,
        ))
    }

    fn push_thought(
        &mut self,
        parent_id: Option<String>,
        kind: String,
        content: String,
        confidence: Option<f64>,
    ) -> String {
        let id = self.next_id("th");
        let created_at = self.clock.now();
        let chain = &mut self.snapshot.thought_chain;
        if let Some(p) = &parent_id {
            if let Some(parent) = chain.thoughts.iter_mut().find(|t| &t.id == p) {
                Arc::make_mut(parent).children.push(id.clone());
                self.dirty.thoughts_added.retain(|t| t != p);
                self.dirty.thoughts_added.push(p.clone());
            }
        }
        chain.thoughts.push(Arc::new(Thought {
            id: id.clone(),
            kind: kind.clone(),
            content,
            confidence,
            parent_id,
            created_at,
            reasoning: None,
            alternatives: Vec::new(),
            children: Vec::new(),
            metadata: Default::default(),
            extensions: Default::default(),
        }));
        chain.current_thought_id = Some(id.clone());
        self.dirty.thoughts_added.push(id.clone());
        self.emit(Event::ThoughtCreated {
            thought_id: id.clone(),
            kind,
        });
        id
    }

    // ---- tool calls ---------------------------------------------------------------------------

    /// Records a call that has started, and returns its id.
    pub fn start_tool_call(&mut self, tool_id: impl Into<String>, args: Value) -> String {
        let started = self.clock.now();
        self.push_call(tool_id.into(), args, ToolStatus::Running, Some(started))
    }

    /// Records a call that is requested but not started (pending), and returns its id.
    pub fn queue_tool_call(&mut self, tool_id: impl Into<String>, args: Value) -> String {
        self.push_call(tool_id.into(), args, ToolStatus::Pending, None)
    }

    fn push_call(
        &mut self,
        tool_id: String,
        args: Value,
        status: ToolStatus,
        started_at: Option<Timestamp>,
    ) -> String {
        let id = self.next_id("call");
        self.snapshot.tool_state.calls.push(Arc::new(ToolCall {
            status,
            started_at,
            ..ToolCall::pending(id.clone(), tool_id.clone(), args)
        }));
        self.snapshot.tool_state.last_call_id = Some(id.clone());
        self.dirty.tool_calls_changed.insert(id.clone());
        self.emit(Event::ToolCalled {
            call_id: id.clone(),
            tool_id,
        });
        id
    }

    /// Marks a pending call as started.
    pub fn begin_tool_call(&mut self, call_id: &str) -> Result<(), StateError> {
        let now = self.clock.now();
        let call = self.open_call(call_id)?;
        call.status = ToolStatus::Running;
        call.started_at = Some(now);
        self.dirty.tool_calls_changed.insert(call_id.to_string());
        Ok(())
    }

    fn open_call(&mut self, call_id: &str) -> Result<&mut ToolCall, StateError> {
        let call = self
            .snapshot
            .tool_state
            .calls
            .iter_mut()
            .find(|c| c.id == call_id)
            .ok_or_else(|| StateError::UnknownToolCall(call_id.to_string()))?;
        if call.status.is_finished() {
            return Err(StateError::ToolCallFinished {
                id: call_id.to_string(),
                status: call.status.as_str(),
            });
        }
        // Its own copy if checkpoints share it still (they keep the call as it was).
        Ok(Arc::make_mut(call))
    }

    fn finish_call(
        &mut self,
        call_id: &str,
        outcome: Result<Value, String>,
    ) -> Result<(), StateError> {
        let now = self.clock.now();
        let call = self.open_call(call_id)?;
        let started = *call.started_at.get_or_insert(now);
        call.completed_at = Some(now);
        call.duration_ms = u64::try_from((now.as_micros() - started.as_micros()) / 1000).ok();
        let success = outcome.is_ok();
        match outcome {
            Ok(result) => {
                call.status = ToolStatus::Completed;
                call.success = Some(true);
                call.result = Some(result.clone());
                let tool_id = call.tool_id.clone();
                self.snapshot.tool_state.results.insert(tool_id, result);
            }
            Err(error) => {
                call.status = ToolStatus::Failed;
                call.success = Some(false);
                call.error = Some(error);
            }
        }
        let tool_id = self
            .tool_calls()
            .iter()
            .find(|c| c.id == call_id)
            .map(|c| c.tool_id.clone())
            .unwrap_or_default();
        self.dirty.tool_calls_changed.insert(call_id.to_string());
        self.emit(Event::ToolCompleted {
            call_id: call_id.to_string(),
            tool_id,
            success,
        });
        Ok(())
    }

    /// Records the result of a call; the latest result of each tool is also kept in the results
    /// map under the tool's id.
    pub fn complete_tool_call(&mut self, call_id: &str, result: Value) -> Result<(), StateError> {
        self.finish_call(call_id, Ok(result))
    }

    /// Records that a call failed.
    pub fn fail_tool_call(
        &mut self,
        call_id: &str,
        error: impl Into<String>,
    ) -> Result<(), StateError> {
        self.finish_call(call_id, Err(error.into()))
    }

    /// Records that a call was abandoned (cancelled), with why: for a call that was in flight
    /// when the process died, and that the resumed run will not finish.
    pub fn cancel_tool_call(
        &mut self,
        call_id: &str,
        reason: impl Into<String>,
    ) -> Result<(), StateError> {
        let now = self.clock.now();
        let call = self.open_call(call_id)?;
        call.status = ToolStatus::Cancelled;
        call.completed_at = Some(now);
        call.error = Some(reason.into());
        self.dirty.tool_calls_changed.insert(call_id.to_string());
        Ok(())
    }

    // ---- context ------------------------------------------------------------------------------

    fn context_changed(&mut self, section: &str, key: &str, op: ContextOp) {
        self.dirty.context_changed = true;
        let path = match key {
            "" => format!("/{section}"),
            k => pointer_of(&[section, k]),
        };
        self.emit(Event::ContextChanged { path, op });
    }

    /// Sets a context variable.
    pub fn set_variable(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        self.snapshot.context.variables.insert(key.clone(), value);
        self.context_changed("variables", &key, ContextOp::Set);
    }

    /// Removes a context variable, returning its value.
    pub fn remove_variable(&mut self, key: &str) -> Option<Value> {
        let old = self.snapshot.context.variables.remove(key);
        if old.is_some() {
            self.context_changed("variables", key, ContextOp::Removed);
        }
        old
    }

    /// Sets a member of the free-form context state.
    pub fn set_state(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        self.snapshot.context.state.insert(key.clone(), value);
        self.context_changed("state", &key, ContextOp::Set);
    }

    /// Removes a member of the free-form context state, returning its value.
    pub fn remove_state(&mut self, key: &str) -> Option<Value> {
        let old = self.snapshot.context.state.remove(key);
        if old.is_some() {
            self.context_changed("state", key, ContextOp::Removed);
        }
        old
    }

    /// Appends an entry to the context history.
    pub fn push_history(&mut self, entry: Value) {
        self.snapshot.context.history.push(entry);
        self.context_changed("history", "", ContextOp::Appended);
    }

    /// Appends a message (`role`, `content`) to the conversation.
    pub fn push_message(&mut self, role: &str, content: impl Into<String>) {
        let at = self.clock.now().to_string();
        self.snapshot
            .context
            .messages
            .push(json!({"role": role, "content": content.into(), "at": at}));
        self.context_changed("messages", "", ContextOp::Appended);
    }

    // ---- progress -----------------------------------------------------------------------------

    /// Replaces the plan: the steps still to do.
    pub fn set_plan<I, S>(&mut self, steps: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let p = &mut self.snapshot.progress;
        p.pending_steps = steps.into_iter().map(Into::into).collect();
        p.total_steps = Some(p.completed_steps.len() as u64 + p.pending_steps.len() as u64);
        self.dirty.progress_changed = true;
    }

    /// Completes the next plan step (if there is one) with an optional result, and advances
    /// the step number. Returns the completed step's name.
    pub fn complete_step(&mut self, result: Option<Value>) -> Option<String> {
        let now = self.clock.now();
        let p = &mut self.snapshot.progress;
        let name = (!p.pending_steps.is_empty()).then(|| p.pending_steps.remove(0));
        if let Some(n) = &name {
            let since = p
                .completed_steps
                .last()
                .map_or(self.resumed_at, |s| s.completed_at.max(self.resumed_at));
            p.completed_steps.push(CompletedStep {
                name: n.clone(),
                result,
                duration_ms: u64::try_from((now.as_micros() - since.as_micros()) / 1000).ok(),
                completed_at: now,
            });
        }
        p.step_number += 1;
        let step_number = p.step_number;
        self.dirty.progress_changed = true;
        self.emit(Event::StepCompleted {
            step_number,
            name: name.clone(),
        });
        name
    }

    /// Sets the run's query or task.
    pub fn set_task(&mut self, task: impl Into<String>) {
        self.snapshot.progress.task = Some(task.into());
        self.dirty.progress_changed = true;
    }

    /// Replaces the plan with structured steps (format 1.1.0): `pending_steps` becomes the ids
    /// of the steps not yet done, and `total_steps` the plan's length.
    pub fn set_plan_steps(&mut self, steps: Vec<PlanStep>) {
        let p = &mut self.snapshot.progress;
        p.plan = steps;
        p.total_steps = Some(p.plan.len() as u64);
        Self::sync_pending(p);
        self.dirty.progress_changed = true;
    }

    /// The structured plan (empty for a plan of names only).
    pub fn plan(&self) -> &[PlanStep] {
        &self.snapshot.progress.plan
    }

    /// The plan step with this id.
    pub fn plan_step(&self, id: &str) -> Option<&PlanStep> {
        self.snapshot.progress.plan.iter().find(|s| s.id == id)
    }

    fn step_mut(&mut self, id: &str) -> Result<&mut PlanStep, StateError> {
        self.snapshot
            .progress
            .plan
            .iter_mut()
            .find(|s| s.id == id)
            .ok_or_else(|| StateError::UnknownStep(id.to_string()))
    }

    fn sync_pending(p: &mut crate::format::Progress) {
        p.pending_steps = p
            .plan
            .iter()
            .filter(|s| !s.status.is_done())
            .map(|s| s.id.clone())
            .collect();
    }

    /// Marks a plan step as started: running, one more attempt.
    pub fn start_plan_step(&mut self, id: &str) -> Result<(), StateError> {
        let now = self.clock.now();
        let step = self.step_mut(id)?;
        step.status = StepStatus::Running;
        step.attempts = step.attempts.saturating_add(1);
        step.started_at = Some(now);
        step.error = None;
        self.dirty.progress_changed = true;
        Ok(())
    }

    /// Completes a plan step with its result: it is recorded among the completed steps, leaves
    /// the pending ones, and the step number advances.
    pub fn complete_plan_step(
        &mut self,
        id: &str,
        result: Option<Value>,
    ) -> Result<(), StateError> {
        let now = self.clock.now();
        let resumed_at = self.resumed_at;
        let step = self.step_mut(id)?;
        step.status = StepStatus::Completed;
        step.completed_at = Some(now);
        step.result = result.clone();
        step.error = None;
        let since = step.started_at.unwrap_or(now).max(resumed_at);
        let p = &mut self.snapshot.progress;
        p.completed_steps.push(CompletedStep {
            name: id.to_string(),
            result,
            duration_ms: u64::try_from((now.as_micros() - since.as_micros()) / 1000).ok(),
            completed_at: now,
        });
        Self::sync_pending(p);
        p.step_number += 1;
        let step_number = p.step_number;
        self.dirty.progress_changed = true;
        self.emit(Event::StepCompleted {
            step_number,
            name: Some(id.to_string()),
        });
        Ok(())
    }

    /// Records that a plan step failed: its status and error, and the run's last error.
    pub fn fail_plan_step(&mut self, id: &str, error: impl Into<String>) -> Result<(), StateError> {
        let now = self.clock.now();
        let message = error.into();
        let step = self.step_mut(id)?;
        step.status = StepStatus::Failed;
        step.completed_at = Some(now);
        step.error = Some(message.clone());
        self.snapshot.progress.last_error = Some(LastError {
            at: now,
            message,
            step: Some(id.to_string()),
        });
        self.dirty.progress_changed = true;
        Ok(())
    }

    /// Marks a plan step as not to be run.
    pub fn skip_plan_step(&mut self, id: &str) -> Result<(), StateError> {
        let now = self.clock.now();
        let step = self.step_mut(id)?;
        step.status = StepStatus::Skipped;
        step.completed_at = Some(now);
        Self::sync_pending(&mut self.snapshot.progress);
        self.dirty.progress_changed = true;
        Ok(())
    }

    /// Records the run's last error without a step (for failures outside the plan).
    pub fn set_last_error(&mut self, message: impl Into<String>) {
        self.snapshot.progress.last_error = Some(LastError {
            at: self.clock.now(),
            message: message.into(),
            step: None,
        });
        self.dirty.progress_changed = true;
    }

    /// The tool calls started or queued but not finished: after a crash, the calls that were
    /// in flight.
    pub fn in_flight_tool_calls(&self) -> Vec<&ToolCall> {
        self.snapshot
            .tool_state
            .calls
            .iter()
            .filter(|c| !c.status.is_finished())
            .map(|c| &**c)
            .collect()
    }

    /// Counts one more loop iteration (for agents that loop rather than follow a plan).
    pub fn complete_iteration(&mut self) {
        self.snapshot.progress.iterations_completed += 1;
        self.dirty.progress_changed = true;
    }

    /// Adds to the token count.
    pub fn add_tokens(&mut self, n: u64) {
        self.tokens_used = self.tokens_used.saturating_add(n);
        self.dirty.counters_changed |= n > 0;
    }

    // ---- checkpointing ------------------------------------------------------------------------

    /// Called by the manager once a checkpoint of this state is saved: clears the dirty set,
    /// remembers the checkpoint as the next one's parent, and emits `CheckpointSaved`.
    pub(crate) fn mark_checkpointed(&mut self, ckpt: &Checkpoint) {
        self.dirty = Dirty::default();
        self.last_checkpoint = Some(ckpt.id.clone());
        self.emit(Event::CheckpointSaved {
            checkpoint_id: ckpt.id.clone(),
            execution_id: ckpt.execution_id.clone(),
            reason: ckpt.metadata.checkpoint_reason.clone(),
        });
    }
}

/// The next free sequence number after the ids already in a snapshot (`th_0007` → 8).
fn next_seq_after(s: &Snapshot) -> u64 {
    let thoughts = s.thought_chain.thoughts.iter().map(|t| t.id.as_str());
    let calls = s.tool_state.calls.iter().map(|c| c.id.as_str());
    thoughts
        .chain(calls)
        .filter_map(|id| id.rsplit_once('_').and_then(|(_, n)| n.parse::<u64>().ok()))
        .max()
        .map_or(1, |m| m.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SimulatedClock;
    use std::sync::Mutex;

    fn state() -> RuntimeState {
        let clock = Arc::new(SimulatedClock::starting_at(Timestamp::from_millis(
            1_000_000,
        )));
        RuntimeState::with_clock("agent", ExecutionId::new("exec_t").unwrap(), clock)
    }

    /// A checkpoint shares its thoughts and tool calls with the state it was taken of; a change
    /// the state makes afterwards goes to a copy of the item, never into the checkpoint.
    #[test]
    fn a_snapshot_taken_keeps_its_items_as_they_were() {
        let mut s = state();
        let parent = s.add_thought("reasoning", "first", None);
        let call = s.start_tool_call("search", json!({"q": 1}));
        let taken = s.snapshot().clone();
        let shared = |a: &Snapshot, b: &Snapshot| {
            Arc::ptr_eq(&a.thought_chain.thoughts[0], &b.thought_chain.thoughts[0])
                && Arc::ptr_eq(&a.tool_state.calls[0], &b.tool_state.calls[0])
        };
        assert!(
            shared(&taken, s.snapshot()),
            "taking a snapshot copies no item"
        );
        s.add_child_thought(&parent, "reasoning", "second", None)
            .unwrap();
        s.complete_tool_call(&call, json!("done")).unwrap();
        let now = s.snapshot();
        assert_eq!(now.thought_chain.thoughts[0].children.len(), 1);
        assert_eq!(now.tool_state.calls[0].status, ToolStatus::Completed);
        assert!(taken.thought_chain.thoughts[0].children.is_empty());
        assert_eq!(taken.tool_state.calls[0].status, ToolStatus::Running);
        assert_eq!(taken.tool_state.calls[0].result, None);
        assert!(!shared(&taken, now), "the changed items are copies");
    }

    #[test]
    fn emits_granular_events_and_tracks_dirt() {
        let mut s = state();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        s.subscribe(move |e| sink.lock().unwrap().push(e.clone()));
        let t = s.add_thought("reasoning", "think", Some(0.5));
        let c = s.start_tool_call("search", json!({"q": 1}));
        s.complete_tool_call(&c, json!("r")).unwrap();
        s.set_variable("step", json!(1));
        s.remove_variable("step");
        let events = seen.lock().unwrap().clone();
        assert_eq!(events.len(), 5);
        assert!(matches!(&events[0], Event::ThoughtCreated { thought_id, .. } if *thought_id == t));
        assert!(matches!(&events[1], Event::ToolCalled { tool_id, .. } if tool_id == "search"));
        assert!(matches!(
            &events[2],
            Event::ToolCompleted { success: true, .. }
        ));
        assert_eq!(
            events[3],
            Event::ContextChanged {
                path: "/variables/step".into(),
                op: ContextOp::Set
            }
        );
        assert_eq!(s.dirty().thoughts_added, vec![t]);
        assert!(s.dirty().tool_calls_changed.contains(&c));
        assert!(s.dirty().context_changed);
    }

    #[test]
    fn tool_calls_follow_their_life() {
        let mut s = state();
        let q = s.queue_tool_call("read_file", json!({"path": "a"}));
        assert_eq!(s.tool_calls()[0].status, ToolStatus::Pending);
        assert_eq!(s.tool_calls()[0].started_at, None);
        s.begin_tool_call(&q).unwrap();
        s.fail_tool_call(&q, "boom").unwrap();
        let call = &s.tool_calls()[0];
        assert_eq!(call.status, ToolStatus::Failed);
        assert_eq!(call.success, Some(false));
        assert_eq!(call.error.as_deref(), Some("boom"));
        assert!(call.completed_at.is_some());
        assert_eq!(
            s.complete_tool_call(&q, json!(1)),
            Err(StateError::ToolCallFinished {
                id: q.clone(),
                status: "failed"
            })
        );
        assert_eq!(
            s.complete_tool_call("nope", json!(1)),
            Err(StateError::UnknownToolCall("nope".into()))
        );
        assert!(s.snapshot().tool_state.results.is_empty());
    }

    #[test]
    fn plan_steps_move_from_pending_to_completed() {
        let mut s = state();
        s.set_plan(["a", "b", "c"]);
        assert_eq!(s.complete_step(Some(json!(1))), Some("a".to_string()));
        assert_eq!(s.remaining_steps(), ["b", "c"]);
        assert_eq!(s.step_number(), 1);
        assert_eq!(s.snapshot().progress.total_steps, Some(3));
        assert_eq!(s.snapshot().progress.completed_steps[0].name, "a");
    }

    #[test]
    fn child_thoughts_link_both_ways() {
        let mut s = state();
        let p = s.add_thought("planning", "plan", None);
        let c = s.add_child_thought(&p, "action", "do", Some(1.0)).unwrap();
        assert_eq!(s.thoughts()[0].children, vec![c.clone()]);
        assert_eq!(s.thoughts()[1].parent_id.as_deref(), Some(p.as_str()));
        assert!(s.add_child_thought("missing", "action", "x", None).is_err());
    }

    #[test]
    fn ids_continue_after_restore() {
        let mut snap = Snapshot::default();
        snap.thought_chain.thoughts.push(Arc::new(Thought {
            id: "th_0041".into(),
            kind: "reasoning".into(),
            content: String::new(),
            confidence: None,
            parent_id: None,
            created_at: Timestamp::from_millis(0),
            reasoning: None,
            alternatives: vec![],
            children: vec![],
            metadata: Default::default(),
            extensions: Default::default(),
        }));
        assert_eq!(next_seq_after(&snap), 42);
        assert_eq!(next_seq_after(&Snapshot::default()), 1);
    }
}
