//! Redacting whole checkpoints: every part, the count, idempotence, and the memory.

use super::rules::tests::SAMPLES;
use super::*;
use crate::format::{encode, LastError, PlanStep};
use crate::{CheckpointId, CheckpointReason, ExecutionId, RuntimeState, Timestamp};
use serde_json::json;

fn secret(kind: &str) -> &'static str {
    SAMPLES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, s)| *s)
        .unwrap_or_else(|| panic!("no sample of {kind}"))
}

/// A checkpoint with a secret in every part redaction looks at.
fn full_of_secrets() -> Checkpoint {
    let mut s = RuntimeState::new("agent");
    s.add_thought(
        "reasoning",
        format!("my key is {}", secret("openai_key")),
        None,
    );
    let call = s.start_tool_call(
        "http_get",
        json!({"headers": {"Authorization": "Basic xyz"}}),
    );
    s.complete_tool_call(
        &call,
        json!({"body": format!("token={}", secret("github_token"))}),
    )
    .unwrap();
    let failed = s.start_tool_call("aws", json!({"q": 1}));
    s.fail_tool_call(&failed, format!("bad key {}", secret("aws_access_key")))
        .unwrap();
    s.set_variable("password", json!("hunter2"));
    s.set_variable("plain", json!("nothing to see"));
    s.set_state("slack", json!(secret("slack_token")));
    s.push_history(json!({"event": "login", "jwt": secret("jwt")}));
    s.push_message("user", format!("here: {}", secret("private_key")));
    let mut c = Checkpoint::new(
        CheckpointId::new("ckpt_1").unwrap(),
        s.execution_id().clone(),
        "agent",
        Timestamp::from_micros(0),
        CheckpointReason::Manual,
    );
    c.snapshot = s.snapshot().clone();
    c.snapshot.context.memory = vec![json!({"key": "k", "value": secret("anthropic_key")})];
    let mut step = PlanStep::new("s1");
    step.parameters.insert("api_key".into(), json!("abc"));
    c.snapshot.progress.plan = vec![step];
    c.snapshot.progress.task = Some(format!("use {}", secret("bearer_token")));
    c.snapshot.progress.last_error = Some(LastError {
        at: Timestamp::from_micros(0),
        message: format!("failed with {}", secret("openai_key")),
        step: None,
    });
    c.metadata.description = Some(format!("desc {}", secret("github_token")));
    c
}

#[test]
fn every_part_is_redacted_and_counted() {
    let c = full_of_secrets();
    let out = Redactor::default().redact(&c);
    // thought, Authorization, the call's result and the tool's latest result, error, password,
    // slack, jwt, message, memory, plan parameter, task, last error, description
    assert_eq!(out.replaced, 14);
    assert_eq!(out.checkpoint.metadata.redactions(), 14);
    assert_eq!(out.checkpoint.metadata.extensions["redactions"], 14);
    let bytes = encode(&out.checkpoint).unwrap();
    let back = crate::format::decode(&bytes, &crate::Limits::default()).unwrap();
    assert_eq!(
        back.checkpoint, *out.checkpoint,
        "the schema accepts the count (a free-form extension)"
    );
    let text = String::from_utf8(bytes).unwrap();
    for (kind, s) in SAMPLES {
        let first_line = s.lines().next().unwrap();
        assert!(!text.contains(first_line), "{kind} left in the file");
    }
    assert!(!text.contains("hunter2") && !text.contains("Basic xyz"));
    assert!(text.contains("\"redactions\": 14"), "{text}");
    assert!(text.contains("nothing to see"), "ordinary values stay");
    let r = &out.checkpoint.snapshot;
    assert_eq!(r.context.variables["password"], "[REDACTED:password]");
    assert_eq!(
        r.thought_chain.thoughts[0].content,
        "my key is [REDACTED:openai_key]"
    );
    assert_eq!(
        r.tool_state.calls[0].args["headers"]["Authorization"],
        "[REDACTED:authorization]"
    );
    assert_eq!(
        r.tool_state.results["http_get"]["body"],
        "token=[REDACTED:github_token]"
    );
}

#[test]
fn a_clean_or_redacted_checkpoint_is_returned_as_it_is() {
    let redactor = Redactor::default();
    let mut clean = full_of_secrets();
    clean.snapshot = crate::Snapshot::default();
    clean.metadata.description = None;
    let out = redactor.redact(&clean);
    assert!(matches!(out.checkpoint, Cow::Borrowed(_)));
    assert_eq!(out.replaced, 0);
    assert_eq!(out.checkpoint.metadata.redactions(), 0);
    assert!(
        !out.checkpoint
            .metadata
            .extensions
            .contains_key("redactions"),
        "no count when nothing was replaced"
    );

    let once = redactor.redact(&full_of_secrets()).checkpoint.into_owned();
    for r in [&redactor, &Redactor::default()] {
        let again = r.redact(&once);
        assert!(matches!(again.checkpoint, Cow::Borrowed(_)), "idempotent");
        assert_eq!(
            again.checkpoint.metadata.redactions(),
            14,
            "the count is kept"
        );
    }
    let secrets = full_of_secrets();
    let off = Redactor::disabled().redact(&secrets);
    assert!(matches!(off.checkpoint, Cow::Borrowed(_)));
}

#[test]
fn a_count_already_there_is_added_to_and_other_extensions_stay() {
    let mut c = full_of_secrets();
    c.metadata.set_redactions(4);
    c.metadata
        .extensions
        .insert("origin".into(), json!("imported"));
    let out = Redactor::default().redact(&c);
    assert_eq!(out.replaced, 14);
    assert_eq!(out.checkpoint.metadata.redactions(), 18);
    assert_eq!(out.checkpoint.metadata.extensions["origin"], "imported");
}

#[test]
fn the_count_reads_only_a_non_negative_integer() {
    let mut m = crate::format::Metadata::new(CheckpointReason::Manual);
    assert_eq!(m.redactions(), 0);
    m.extensions.insert("redactions".into(), json!("three"));
    assert_eq!(m.redactions(), 0, "an older format's member of that name");
    m.set_redactions(3);
    assert_eq!(m.extensions["redactions"], 3);
    m.set_redactions(0);
    assert!(m.extensions.is_empty(), "0 leaves no member");
}

/// The memory never changes the outcome: a redactor that has seen the earlier checkpoints of
/// an execution gives what a fresh one gives, as items (thoughts, tool calls, variables,
/// history, completed steps, plan steps) are added, completed, changed and removed.
#[test]
fn remembering_gives_what_a_fresh_scan_gives() {
    let remembering = Redactor::new(RedactionRules::new());
    let exec = ExecutionId::new("exec_mem").unwrap();
    let mut s = RuntimeState::with_clock(
        "agent",
        exec,
        std::sync::Arc::new(crate::clock::SimulatedClock::starting_at(
            Timestamp::from_micros(1_767_000_000_000_000),
        )),
    );
    s.set_plan((0..12).map(|i| format!("do-{i}")));
    for step in 0..12u64 {
        let content = match step % 3 {
            0 => format!("step {step} uses {}", secret("jwt")),
            _ => format!("step {step} is ordinary"),
        };
        s.add_thought("reasoning", content, Some(0.5));
        let call = s.start_tool_call("search", json!({"n": step}));
        if step % 4 == 1 {
            s.complete_tool_call(&call, json!({"password": "p"}))
                .unwrap();
        }
        s.set_variable("step", json!(step));
        s.set_variable(
            "token",
            if step % 2 == 0 {
                json!("t")
            } else {
                json!(null)
            },
        );
        s.push_history(json!(format!("h{step}")));
        s.complete_step(Some(if step % 3 == 2 {
            json!({"api_key": "k"})
        } else {
            json!(step)
        }));
        let mut c = Checkpoint::new(
            CheckpointId::new(format!("ckpt_{step}")).unwrap(),
            s.execution_id().clone(),
            "agent",
            Timestamp::from_micros(0),
            CheckpointReason::StepCompleted,
        );
        c.snapshot = s.snapshot().clone();
        c.snapshot.progress.plan = (0..=step)
            .map(|k| {
                let mut p = PlanStep::new(format!("p{k}"));
                if k % 3 == 0 {
                    p.description = Some(format!("uses {}", secret("github_token")));
                }
                p
            })
            .collect();
        if step == 7 {
            c.snapshot.progress.plan[0].description = Some("no secret now".into());
            c.snapshot.progress.completed_steps.remove(1);
            Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).content =
                "revised, no secret".into();
            c.snapshot.tool_state.calls.remove(1);
            c.snapshot.context.variables.remove("step");
        }
        let a = remembering.redact(&c);
        let b = Redactor::default().redact(&c);
        assert_eq!(a.replaced, b.replaced, "step {step}");
        assert_eq!(a.checkpoint, b.checkpoint, "step {step}");
        // The redacted copy seen again is known clean.
        assert_eq!(remembering.redact(&a.checkpoint).replaced, 0);
    }
}

#[test]
fn remembers_at_most_its_capacity() {
    let r = Redactor::default();
    for e in 0..40 {
        let mut c = full_of_secrets();
        c.execution_id = ExecutionId::new(format!("exec_{e}")).unwrap();
        r.redact(&c);
    }
    assert_eq!(r.memory.lock().unwrap().len(), EXECUTIONS);
}

/// An object's members are remembered in place: after a redaction, the memory holds the
/// members of the object last seen, and no others.
#[test]
fn the_members_remembered_are_those_of_the_object_last_seen() {
    let mut memory = std::collections::HashMap::new();
    let object = |v: serde_json::Value| v.as_object().cloned().unwrap();
    let clean = |_: &str, _: &serde_json::Value| None;
    memory::members(&mut memory, &object(json!({"a": 1, "b": 2})), clean);
    memory::members(&mut memory, &object(json!({"b": 2, "c": 3})), clean);
    let mut keys: Vec<&str> = memory.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["b", "c"]);
}
