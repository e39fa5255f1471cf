//! The typed parts of a checkpoint, redacted field by field: what of a thought, a tool call and
//! the progress can hold a secret. Ids, names, labels, tool ids and timestamps cannot (they are
//! the agent's own bookkeeping) and are never changed.

use super::rules::RedactionRules;
use crate::format::{CompletedStep, PlanStep, Progress, Thought, ToolCall};

/// Applies `redact` to `field`, cloning `owner` into `out` on the first change.
fn apply<O: Clone, F>(
    owner: &O,
    out: &mut Option<O>,
    count: &mut u64,
    redacted: Option<(F, u64)>,
    set: impl FnOnce(&mut O, F),
) {
    if let Some((value, n)) = redacted {
        set(out.get_or_insert_with(|| owner.clone()), value);
        *count += n;
    }
}

impl RedactionRules {
    /// A thought with its secrets replaced (content, reasoning, alternatives, metadata,
    /// extensions); `None` if it holds none.
    pub fn redact_thought(&self, t: &Thought) -> Option<(Thought, u64)> {
        let mut out = None;
        let mut n = 0;
        apply(t, &mut out, &mut n, self.redact_text(&t.content), |o, v| {
            o.content = v
        });
        let reasoning = t.reasoning.as_deref().and_then(|r| self.redact_text(r));
        apply(t, &mut out, &mut n, reasoning, |o, v| o.reasoning = Some(v));
        let alternatives = self.redact_values(&t.alternatives);
        apply(t, &mut out, &mut n, alternatives, |o, v| o.alternatives = v);
        let metadata = self.redact_object(&t.metadata);
        apply(t, &mut out, &mut n, metadata, |o, v| o.metadata = v);
        let extensions = self.redact_object(&t.extensions);
        apply(t, &mut out, &mut n, extensions, |o, v| o.extensions = v);
        out.map(|o| (o, n))
    }

    /// A tool call with its secrets replaced (arguments, result, error, extensions); `None` if
    /// it holds none.
    pub fn redact_tool_call(&self, c: &ToolCall) -> Option<(ToolCall, u64)> {
        let mut out = None;
        let mut n = 0;
        apply(c, &mut out, &mut n, self.redact_value(&c.args), |o, v| {
            o.args = v
        });
        let result = c.result.as_ref().and_then(|r| self.redact_value(r));
        apply(c, &mut out, &mut n, result, |o, v| o.result = Some(v));
        let error = c.error.as_deref().and_then(|e| self.redact_text(e));
        apply(c, &mut out, &mut n, error, |o, v| o.error = Some(v));
        let extensions = self.redact_object(&c.extensions);
        apply(c, &mut out, &mut n, extensions, |o, v| o.extensions = v);
        out.map(|o| (o, n))
    }

    /// Progress with its secrets replaced (step results, plan parameters, results,
    /// descriptions and errors, the task, the last error); `None` if it holds none.
    pub fn redact_progress(&self, p: &Progress) -> Option<(Progress, u64)> {
        let steps = redact_each(&p.completed_steps, |s| self.completed_step(s));
        let plan = redact_each(&p.plan, |s| self.plan_step(s));
        self.redact_progress_with(p, steps, plan)
    }

    /// [`RedactionRules::redact_progress`] given what redaction makes of its completed steps
    /// and of its plan, found already (by a [`super::Redactor`] that remembers them).
    pub(super) fn redact_progress_with(
        &self,
        p: &Progress,
        steps: Option<(Vec<CompletedStep>, u64)>,
        plan: Option<(Vec<PlanStep>, u64)>,
    ) -> Option<(Progress, u64)> {
        let mut out = None;
        let mut n = 0;
        apply(p, &mut out, &mut n, steps, |o, v| o.completed_steps = v);
        apply(p, &mut out, &mut n, plan, |o, v| o.plan = v);
        let task = p.task.as_deref().and_then(|t| self.redact_text(t));
        apply(p, &mut out, &mut n, task, |o, v| o.task = Some(v));
        let last = p
            .last_error
            .as_ref()
            .and_then(|e| self.redact_text(&e.message));
        apply(p, &mut out, &mut n, last, |o, v| {
            if let Some(e) = o.last_error.as_mut() {
                e.message = v;
            }
        });
        out.map(|o| (o, n))
    }

    /// A completed step with its secrets replaced (its result); `None` if it holds none.
    pub(super) fn completed_step(&self, s: &CompletedStep) -> Option<(CompletedStep, u64)> {
        let (result, n) = self.redact_value(s.result.as_ref()?)?;
        let mut out = s.clone();
        out.result = Some(result);
        Some((out, n))
    }

    /// A plan step with its secrets replaced (parameters, result, description, error); `None`
    /// if it holds none.
    pub(super) fn plan_step(&self, s: &PlanStep) -> Option<(PlanStep, u64)> {
        let mut out = None;
        let mut n = 0;
        let parameters = self.redact_object(&s.parameters);
        apply(s, &mut out, &mut n, parameters, |o, v| o.parameters = v);
        let result = s.result.as_ref().and_then(|r| self.redact_value(r));
        apply(s, &mut out, &mut n, result, |o, v| o.result = Some(v));
        let description = s.description.as_deref().and_then(|d| self.redact_text(d));
        apply(s, &mut out, &mut n, description, |o, v| {
            o.description = Some(v)
        });
        let error = s.error.as_deref().and_then(|e| self.redact_text(e));
        apply(s, &mut out, &mut n, error, |o, v| o.error = Some(v));
        out.map(|o| (o, n))
    }
}

/// `items` with each one `redact` changes replaced; `None` if it changes none.
pub(super) fn redact_each<T: Clone>(
    items: &[T],
    redact: impl Fn(&T) -> Option<(T, u64)>,
) -> Option<(Vec<T>, u64)> {
    let mut out: Option<Vec<T>> = None;
    let mut count = 0;
    for (i, item) in items.iter().enumerate() {
        if let Some((redacted, n)) = redact(item) {
            out.get_or_insert_with(|| items.to_vec())[i] = redacted;
            count += n;
        }
    }
    out.map(|o| (o, count))
}
