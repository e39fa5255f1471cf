//! Checks of what the type system cannot express: the values the current schema would refuse,
//! and what no schema can say (ids unique within a checkpoint, plan dependencies that exist).
//!
//! `encode` runs them so that caf never writes a file it could not read back, and `decode` runs
//! them on the typed result as a second line behind the schema.

use super::codec::Limits;
use super::error::EncodeError;
use super::model::{is_snake_word, shared_prefix, Checkpoint};
use super::CURRENT_VERSION;
use serde_json::Value;

/// Checks what the type system cannot: values the schema would refuse.
pub fn check(ckpt: &Checkpoint) -> Result<(), EncodeError> {
    check_from(ckpt, Known::NONE)
}

/// How many of a checkpoint's first thoughts and tool calls are known good: the very items (one
/// allocation, compared by pointer) a checkpoint [`check`] accepted holds at the same places.
/// Each item's own checks pass for them whatever surrounds them, so they are not run again;
/// what depends on the whole list (unique ids) is checked for the items after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Known {
    thoughts: usize,
    calls: usize,
}

impl Known {
    const NONE: Self = Self {
        thoughts: 0,
        calls: 0,
    };

    /// What `ckpt` shares with `base`, first items first.
    fn shared(ckpt: &Checkpoint, base: &Checkpoint) -> Self {
        let (s, b) = (&ckpt.snapshot, &base.snapshot);
        Self {
            thoughts: shared_prefix(&s.thought_chain.thoughts, &b.thought_chain.thoughts),
            calls: shared_prefix(&s.tool_state.calls, &b.tool_state.calls),
        }
    }
}

/// [`check`], the per-item checks of the `known` items left out.
fn check_from(ckpt: &Checkpoint, known: Known) -> Result<(), EncodeError> {
    check_depth_from(ckpt, Limits::default().max_depth, known)?;
    check_values_from(ckpt, known)
}

/// A checkpoint [`check`] accepted: encoding it ([`super::Encoder::encode_checked_into`]) does
/// not check it again (a journaled save checks before it journals, and encodes after).
#[derive(Debug, Clone, PartialEq)]
pub struct Checked(Checkpoint);

impl Checked {
    /// `ckpt`, once [`check`] accepts it.
    pub fn new(ckpt: Checkpoint) -> Result<Self, EncodeError> {
        check(&ckpt)?;
        Ok(Self(ckpt))
    }

    /// `ckpt`, once [`check`] accepts it, given `base`, a checkpoint it accepted before: the
    /// thoughts and tool calls `ckpt` shares with `base` (the very items, by pointer, first in
    /// both lists; a runtime state shares every unchanged item with each checkpoint taken of
    /// it) are not looked at one by one again. The same answer as [`Checked::new`], at the cost
    /// of what changed (a journaled save checks each step this way against the one before).
    pub fn revising(ckpt: Checkpoint, base: &Checked) -> Result<Self, EncodeError> {
        check_from(&ckpt, Known::shared(&ckpt, &base.0))?;
        Ok(Self(ckpt))
    }

    /// The checkpoint.
    pub fn get(&self) -> &Checkpoint {
        &self.0
    }

    /// The checkpoint, owned.
    pub fn into_inner(self) -> Checkpoint {
        self.0
    }
}

/// Whether `s` has at most `max` characters: its byte length says so without counting when it
/// is at most `max` (a character is at least one byte).
fn at_most(s: &str, max: usize) -> bool {
    s.len() <= max || s.chars().count() <= max
}

/// Whether `s` has 1 to `max` characters.
fn one_to(s: &str, max: usize) -> bool {
    !s.is_empty() && at_most(s, max)
}

/// Whether a timestamp's year is one RFC 3339 can write (0000 to 9999).
fn years_ok(t: &crate::Timestamp) -> bool {
    (0..=9999).contains(&t.year())
}

/// [`check`] without its [`check_depth`] at the default limit.
pub(super) fn check_values(ckpt: &Checkpoint) -> Result<(), EncodeError> {
    check_values_from(ckpt, Known::NONE)
}

/// [`check_values`], the per-item checks of the `known` items left out.
fn check_values_from(ckpt: &Checkpoint, known: Known) -> Result<(), EncodeError> {
    let bad = |pointer: String, message: &str| {
        Err(EncodeError::Invalid {
            pointer,
            message: message.to_string(),
        })
    };
    if ckpt.version != CURRENT_VERSION {
        return bad(
            "/version".into(),
            "only the current format version can be written",
        );
    }
    if !one_to(&ckpt.schema, 512) {
        return bad("/$schema".into(), "$schema must be 1 to 512 characters");
    }
    if !one_to(&ckpt.agent_id, 256) {
        return bad("/agent_id".into(), "agent id must be 1 to 256 characters");
    }
    if !years_ok(&ckpt.timestamp) {
        return bad("/timestamp".into(), "year outside 0000-9999");
    }
    let md = &ckpt.metadata;
    if md.name.as_ref().is_some_and(|n| !at_most(n, 256)) {
        return bad("/metadata/name".into(), "name longer than 256 characters");
    }
    if !is_snake_word(md.checkpoint_reason.as_str()) {
        return bad(
            "/metadata/checkpoint_reason".into(),
            "checkpoint reason must be a snake_case word",
        );
    }
    for (i, l) in md.labels.iter().enumerate() {
        if !one_to(l, 128) || md.labels[..i].contains(l) {
            return bad(
                format!("/metadata/labels/{i}"),
                "labels must be unique, 1 to 128 characters",
            );
        }
    }
    let chain = &ckpt.snapshot.thought_chain;
    if chain
        .current_thought_id
        .as_ref()
        .is_some_and(String::is_empty)
    {
        return bad(
            "/snapshot/thought_chain/current_thought_id".into(),
            "current thought id must not be empty",
        );
    }
    let thoughts = &ckpt.snapshot.thought_chain.thoughts;
    for (i, t) in thoughts.iter().enumerate().skip(known.thoughts) {
        let p = |f: &str| format!("/snapshot/thought_chain/thoughts/{i}/{f}");
        if !is_snake_word(&t.kind) {
            return bad(p("type"), "thought type must be a snake_case word");
        }
        if !one_to(&t.id, 256) {
            return bad(p("id"), "thought id must be 1 to 256 characters");
        }
        if t.confidence.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
            return bad(p("confidence"), "confidence must be a number from 0 to 1");
        }
        if !years_ok(&t.created_at) {
            return bad(p("created_at"), "year outside 0000-9999");
        }
        if t.parent_id.as_ref().is_some_and(|id| !one_to(id, 256)) {
            return bad(
                p("parent_id"),
                "parent thought id must be 1 to 256 characters",
            );
        }
        if let Some(j) = t.children.iter().position(String::is_empty) {
            return bad(
                p(&format!("children/{j}")),
                "child thought ids must not be empty",
            );
        }
    }
    let calls = &ckpt.snapshot.tool_state.calls;
    for (i, c) in calls.iter().enumerate().skip(known.calls) {
        let p = |f: &str| format!("/snapshot/tool_state/calls/{i}/{f}");
        if !one_to(&c.id, 256) {
            return bad(p("id"), "tool call id must be 1 to 256 characters");
        }
        if !one_to(&c.tool_id, 256) {
            return bad(p("tool_id"), "tool id must be 1 to 256 characters");
        }
        for (f, t) in [
            ("started_at", &c.started_at),
            ("completed_at", &c.completed_at),
        ] {
            if t.as_ref().is_some_and(|t| !years_ok(t)) {
                return bad(p(f), "year outside 0000-9999");
            }
        }
    }
    let tools = &ckpt.snapshot.tool_state;
    if tools.last_call_id.as_ref().is_some_and(String::is_empty) {
        return bad(
            "/snapshot/tool_state/last_call_id".into(),
            "last call id must not be empty",
        );
    }
    for (i, s) in ckpt.snapshot.progress.completed_steps.iter().enumerate() {
        if !years_ok(&s.completed_at) {
            return bad(
                format!("/snapshot/progress/completed_steps/{i}/completed_at"),
                "year outside 0000-9999",
            );
        }
    }
    check_unique_ids(ckpt, known)?;
    check_plan(ckpt)
}

/// Two thoughts, two tool calls or two plan steps with one id would make "the thought X"
/// ambiguous (for diff, resume and the database): the second is refused. The first `known`
/// thoughts and tool calls have ids unique among themselves.
fn check_unique_ids(ckpt: &Checkpoint, known: Known) -> Result<(), EncodeError> {
    /// At most this many items after the known ones are each looked for among those before it
    /// (a journaled step adds one or two); more, and the whole list is sorted.
    const FEW: usize = 16;
    fn first_repeat<'a>(
        ids: impl Iterator<Item = &'a str>,
        known: usize,
    ) -> Option<(usize, &'a str)> {
        let ids: Vec<&str> = ids.collect();
        if known > 0 && ids.len() - known.min(ids.len()) <= FEW {
            // The first repeat is after the known ids, which have none.
            return (known..ids.len())
                .find(|&j| ids[..j].contains(&ids[j]))
                .map(|j| (j, ids[j]));
        }
        // Sorting finds whether any id repeats without hashing every one (most lists have
        // none); only then is the first repeat looked for, in order.
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if sorted.windows(2).all(|w| w[0] != w[1]) {
            return None;
        }
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        ids.into_iter()
            .enumerate()
            .find(|(_, id)| !seen.insert(*id))
    }
    let s = &ckpt.snapshot;
    let lists = [
        (
            "/snapshot/thought_chain/thoughts",
            "thought",
            first_repeat(
                s.thought_chain.thoughts.iter().map(|t| t.id.as_str()),
                known.thoughts,
            ),
        ),
        (
            "/snapshot/tool_state/calls",
            "tool call",
            first_repeat(
                s.tool_state.calls.iter().map(|c| c.id.as_str()),
                known.calls,
            ),
        ),
        (
            "/snapshot/progress/plan",
            "plan step",
            first_repeat(s.progress.plan.iter().map(|p| p.id.as_str()), 0),
        ),
    ];
    for (list, what, repeat) in lists {
        if let Some((i, id)) = repeat {
            return Err(EncodeError::Invalid {
                pointer: format!("{list}/{i}/id"),
                message: format!("duplicate {what} id {id:?}: ids must be unique"),
            });
        }
    }
    Ok(())
}

/// The plan's steps (1.1.0): safe ids, known dependencies, sane times; and the last error.
fn check_plan(ckpt: &Checkpoint) -> Result<(), EncodeError> {
    let progress = &ckpt.snapshot.progress;
    let bad = |pointer: String, message: String| Err(EncodeError::Invalid { pointer, message });
    let ids: std::collections::HashSet<&str> =
        progress.plan.iter().map(|s| s.id.as_str()).collect();
    for (i, step) in progress.plan.iter().enumerate() {
        let p = |f: &str| format!("/snapshot/progress/plan/{i}/{f}");
        if let Err(e) = crate::id::check_id(&step.id) {
            return bad(p("id"), format!("plan step id: {e}"));
        }
        if step.action.as_ref().is_some_and(|a| !one_to(a, 256)) {
            return bad(p("action"), "action must be 1 to 256 characters".into());
        }
        for (j, d) in step.dependencies.iter().enumerate() {
            if d == &step.id || !ids.contains(d.as_str()) {
                return bad(
                    p(&format!("dependencies/{j}")),
                    format!("dependency {d:?} is not another step of the plan"),
                );
            }
        }
        for (f, t) in [
            ("started_at", &step.started_at),
            ("completed_at", &step.completed_at),
        ] {
            if t.as_ref().is_some_and(|t| !years_ok(t)) {
                return bad(p(f), "year outside 0000-9999".into());
            }
        }
    }
    if let Some(e) = &progress.last_error {
        if !years_ok(&e.at) {
            return bad(
                "/snapshot/progress/last_error/at".into(),
                "year outside 0000-9999".into(),
            );
        }
        if let Some(Err(err)) = e.step.as_deref().map(crate::id::check_id) {
            return bad(
                "/snapshot/progress/last_error/step".into(),
                format!("step id: {err}"),
            );
        }
    }
    Ok(())
}

/// How deep the containers of the document's own structure (not its free-form values) can
/// nest, counted like [`super::json::parse_strict`]: the root object is level 1, and the deepest
/// are level 6 (`/snapshot/progress/plan/0/dependencies`, a thought's `children`, `metadata`,
/// `extensions` and `alternatives`, a tool call's `extensions`, a plan step's `parameters`).
pub(super) const STRUCTURAL_DEPTH: usize = 6;

/// Whether `v` nests at most `budget` levels (a scalar is 0, `[]` or `{}` is 1).
fn fits(v: &Value, budget: usize) -> bool {
    match v {
        Value::Array(a) => budget > 0 && a.iter().all(|x| fits(x, budget - 1)),
        Value::Object(m) => budget > 0 && m.values().all(|x| fits(x, budget - 1)),
        _ => true,
    }
}

/// Refuses free-form values that would nest deeper than `max` levels (readers accept
/// [`Limits::max_depth`]), counting the document's own levels above each value exactly as
/// [`super::json::parse_strict`] counts them. The document's own structure nests at most
/// [`STRUCTURAL_DEPTH`] levels and is not looked at: with a smaller `max` the answer says nothing
/// about it. Pointers are only built on failure.
pub(super) fn check_depth(c: &Checkpoint, max: usize) -> Result<(), EncodeError> {
    check_depth_from(c, max, Known::NONE)
}

/// [`check_depth`], the `known` thoughts and tool calls left out.
fn check_depth_from(c: &Checkpoint, max: usize, known: Known) -> Result<(), EncodeError> {
    let too_deep = |pointer: String| EncodeError::Invalid {
        pointer,
        message: format!("nesting deeper than {max} levels, which caf refuses to read"),
    };
    // `base` is the depth of the container holding the value.
    let value = |v: &Value, base: usize| fits(v, max.saturating_sub(base));
    let object = |m: &serde_json::Map<String, Value>, base: usize| {
        m.values().all(|v| fits(v, max.saturating_sub(base + 1)))
    };
    let top = [
        ("/extensions", 1, &c.extensions),
        ("/metadata/extensions", 2, &c.metadata.extensions),
        (
            "/snapshot/context/variables",
            3,
            &c.snapshot.context.variables,
        ),
        ("/snapshot/context/state", 3, &c.snapshot.context.state),
        (
            "/snapshot/tool_state/results",
            3,
            &c.snapshot.tool_state.results,
        ),
    ];
    for (p, base, m) in top {
        if !object(m, base) {
            return Err(too_deep(p.into()));
        }
    }
    let ctx = &c.snapshot.context;
    for (p, list) in [
        ("history", &ctx.history),
        ("messages", &ctx.messages),
        ("memory", &ctx.memory),
    ] {
        if let Some(i) = list.iter().position(|v| !value(v, 4)) {
            return Err(too_deep(format!("/snapshot/context/{p}/{i}")));
        }
    }
    let thoughts = c.snapshot.thought_chain.thoughts.iter().enumerate();
    for (i, t) in thoughts.skip(known.thoughts) {
        let p = |f: &str| format!("/snapshot/thought_chain/thoughts/{i}/{f}");
        if let Some(j) = t.alternatives.iter().position(|v| !value(v, 6)) {
            return Err(too_deep(p(&format!("alternatives/{j}"))));
        }
        if !object(&t.metadata, 5) {
            return Err(too_deep(p("metadata")));
        }
        if !object(&t.extensions, 5) {
            return Err(too_deep(p("extensions")));
        }
    }
    let calls = c.snapshot.tool_state.calls.iter().enumerate();
    for (i, call) in calls.skip(known.calls) {
        let p = |f: &str| format!("/snapshot/tool_state/calls/{i}/{f}");
        if !value(&call.args, 5) {
            return Err(too_deep(p("args")));
        }
        if call.result.as_ref().is_some_and(|r| !value(r, 5)) {
            return Err(too_deep(p("result")));
        }
        if !object(&call.extensions, 5) {
            return Err(too_deep(p("extensions")));
        }
    }
    for (i, s) in c.snapshot.progress.completed_steps.iter().enumerate() {
        if s.result.as_ref().is_some_and(|r| !value(r, 5)) {
            return Err(too_deep(format!(
                "/snapshot/progress/completed_steps/{i}/result"
            )));
        }
    }
    for (i, s) in c.snapshot.progress.plan.iter().enumerate() {
        if s.result.as_ref().is_some_and(|r| !value(r, 5)) {
            return Err(too_deep(format!("/snapshot/progress/plan/{i}/result")));
        }
        if !object(&s.parameters, 5) {
            return Err(too_deep(format!("/snapshot/progress/plan/{i}/parameters")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::model::{CheckpointReason, Thought, ToolCall};
    use crate::{CheckpointId, ExecutionId, Timestamp};
    use std::sync::Arc;

    #[test]
    fn lengths_are_counted_in_characters() {
        for s in ["", "a", "é", "éé", "aé", "日本語", "a日b", "😀😀"] {
            for max in 0..8 {
                let chars = s.chars().count();
                assert_eq!(at_most(s, max), chars <= max, "{s:?} {max}");
                assert_eq!(one_to(s, max), (1..=max).contains(&chars), "{s:?} {max}");
            }
        }
        // 256 two-byte characters: 512 bytes, within 256 characters.
        let wide = "é".repeat(256);
        assert!(one_to(&wide, 256));
        assert!(!one_to(&format!("{wide}a"), 256));
        assert!(one_to(&"a".repeat(256), 256));
        assert!(!one_to(&"a".repeat(257), 256));
    }

    fn thought(id: &str) -> Thought {
        Thought {
            id: id.into(),
            kind: "reasoning".into(),
            content: String::new(),
            confidence: None,
            parent_id: None,
            created_at: Timestamp::from_micros(0),
            reasoning: None,
            alternatives: Vec::new(),
            children: Vec::new(),
            metadata: Default::default(),
            extensions: Default::default(),
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall::pending(id, "t", serde_json::json!({}))
    }

    fn with(thoughts: &[&str], calls: &[&str]) -> Checkpoint {
        let mut c = Checkpoint::new(
            CheckpointId::new("ckpt_1").unwrap(),
            ExecutionId::new("exec_1").unwrap(),
            "agent",
            Timestamp::from_micros(0),
            CheckpointReason::Manual,
        );
        c.snapshot.thought_chain.thoughts = thoughts.iter().map(|t| Arc::new(thought(t))).collect();
        c.snapshot.tool_state.calls = calls.iter().map(|t| Arc::new(call(t))).collect();
        c
    }

    fn pointer(c: &Checkpoint) -> Option<String> {
        check(c)
            .err()
            .map(|EncodeError::Invalid { pointer, .. }| pointer)
    }

    #[test]
    fn the_first_repeated_id_in_order_is_named() {
        assert_eq!(pointer(&with(&["a", "b", "c"], &["a", "b"])), None);
        // "b" repeats at 3 before "a" does at 4, though "a" sorts first.
        assert_eq!(
            pointer(&with(&["a", "b", "c", "b", "a"], &[])),
            Some("/snapshot/thought_chain/thoughts/3/id".into())
        );
        assert_eq!(
            pointer(&with(&["x"], &["c", "a", "c", "c"])),
            Some("/snapshot/tool_state/calls/2/id".into())
        );
        let err = check(&with(&["z", "z"], &[])).unwrap_err();
        let EncodeError::Invalid { message, .. } = err;
        assert_eq!(message, "duplicate thought id \"z\": ids must be unique");
    }

    #[test]
    fn revising_a_checked_base_answers_as_checking_the_whole() {
        let base = Checked::new(with(&["t1", "t2", "t3"], &["c1", "c2"])).unwrap();
        // The base's own items (the same allocations), then `thoughts` and `calls`.
        let grown = |thoughts: Vec<Thought>, calls: Vec<ToolCall>| {
            let mut c = base.get().clone();
            let s = &mut c.snapshot;
            s.thought_chain
                .thoughts
                .extend(thoughts.into_iter().map(Arc::new));
            s.tool_state.calls.extend(calls.into_iter().map(Arc::new));
            c
        };
        let badly_typed = |id: &str| Thought {
            kind: "Not Snake".into(),
            ..thought(id)
        };
        let mut nested = serde_json::json!(1);
        for _ in 0..Limits::default().max_depth {
            nested = serde_json::json!([nested]);
        }
        let deep_call = ToolCall::pending("c3", "t", nested);
        let many: Vec<Thought> = (4..=30)
            .map(|i| thought(&format!("t{i}")))
            .chain([thought("t1")])
            .collect();
        let mut replaced = base.get().clone();
        replaced.snapshot.thought_chain.thoughts[1] = Arc::new(badly_typed("t2"));
        let thoughts = "/snapshot/thought_chain/thoughts";
        let calls = "/snapshot/tool_state/calls";
        let cases = [
            (
                "one more of each",
                grown(vec![thought("t4")], vec![call("c3")]),
                None,
            ),
            (
                "a new thought repeating a known id",
                grown(vec![thought("t4"), thought("t2")], vec![]),
                Some(format!("{thoughts}/4/id")),
            ),
            (
                "two new calls with one id",
                grown(vec![], vec![call("c3"), call("c3")]),
                Some(format!("{calls}/3/id")),
            ),
            (
                "a badly typed new thought",
                grown(vec![badly_typed("t4")], vec![]),
                Some(format!("{thoughts}/3/type")),
            ),
            (
                "a new call nested too deep",
                grown(vec![], vec![deep_call]),
                Some(format!("{calls}/2/args")),
            ),
            (
                "many new thoughts, the last repeating a known id",
                grown(many, vec![]),
                Some(format!("{thoughts}/30/id")),
            ),
            (
                "a known thought replaced in place by a bad one",
                replaced,
                Some(format!("{thoughts}/1/type")),
            ),
        ];
        for (what, next, want) in cases {
            let refused = |r: Result<Checked, EncodeError>| r.err().map(|e| format!("{e:?}"));
            assert_eq!(
                refused(Checked::revising(next.clone(), &base)),
                refused(Checked::new(next.clone())),
                "{what}"
            );
            assert_eq!(pointer(&next), want, "{what}");
        }
    }

    #[test]
    fn snake_words_are_ascii() {
        let by_chars = |s: &str| {
            let mut chars = s.chars();
            matches!(chars.next(), Some('a'..='z'))
                && s.len() <= 64
                && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        };
        let long = "a".repeat(64);
        let longer = "a".repeat(65);
        for s in [
            "",
            "a",
            "a_1",
            "_a",
            "1a",
            "A",
            "aB",
            "a-b",
            "é",
            "aé",
            "a\u{0}",
            "a b",
            &long,
            &longer,
            "thought_completed",
            "x日",
        ] {
            assert_eq!(is_snake_word(s), by_chars(s), "{s:?}");
        }
    }
}
