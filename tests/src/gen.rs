//! Building checkpoints for tests: a builder with sensible defaults, a few ready-made
//! checkpoints, and proptest strategies that produce arbitrary *valid* checkpoints.
//!
//! "Valid" means what the format 1.0.0 JSON Schema and [`caf_core::format::check`] accept:
//! safe ids, snake_case words where the schema wants one, confidences in `[0, 1]`, unique
//! non-empty labels, finite numbers, timestamps in the years 1970..=9999, and nesting of
//! free-form values at most 8 levels deep. Strings are otherwise arbitrary Unicode, control
//! characters and NUL included.

use caf_core::format::schema::SCHEMA_URL;
use caf_core::format::{
    Branch, Checkpoint, CheckpointReason, CompletedStep, Context, JsonObject, LastError, Metadata,
    PlanStep, Progress, Snapshot, StepStatus, Thought, ThoughtChain, ToolCall, ToolState,
    ToolStatus,
};
use caf_core::{CheckpointId, ExecutionId, Timestamp, CURRENT_VERSION};
use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{json, Value};
use std::sync::Arc;

/// 2026-01-01T00:00:00Z in microseconds since the epoch: the default timestamp.
pub const BASE_MICROS: i64 = 1_767_225_600_000_000;

/// 9999-12-31T23:59:59.999999Z in microseconds: the last instant the format can hold.
pub const MAX_MICROS: i64 = 253_402_300_799_999_999;

/// A checkpoint id (panics if `s` is not a valid id: test input is trusted).
pub fn ckpt_id(s: &str) -> CheckpointId {
    CheckpointId::new(s).unwrap_or_else(|e| panic!("bad checkpoint id {s:?}: {e}"))
}

/// An execution id (panics if `s` is not a valid id).
pub fn exec_id(s: &str) -> ExecutionId {
    ExecutionId::new(s).unwrap_or_else(|e| panic!("bad execution id {s:?}: {e}"))
}

/// The instant `ms` milliseconds after [`BASE_MICROS`].
pub fn at_ms(ms: i64) -> Timestamp {
    Timestamp::from_micros(BASE_MICROS + ms * 1000)
}

/// Builds a [`Checkpoint`] from sensible defaults: execution `exec_default`, agent `agent`,
/// reason `manual`, timestamp [`BASE_MICROS`], step 0, an empty snapshot.
#[derive(Debug, Clone)]
pub struct CheckpointBuilder {
    checkpoint: Checkpoint,
}

impl CheckpointBuilder {
    /// A checkpoint with id `id` and the defaults.
    pub fn new(id: &str) -> Self {
        Self {
            checkpoint: Checkpoint::new(
                ckpt_id(id),
                exec_id("exec_default"),
                "agent",
                Timestamp::from_micros(BASE_MICROS),
                CheckpointReason::Manual,
            ),
        }
    }

    /// Sets the execution.
    pub fn execution(mut self, execution: &str) -> Self {
        self.checkpoint.execution_id = exec_id(execution);
        self
    }

    /// Sets the agent.
    pub fn agent(mut self, agent: &str) -> Self {
        self.checkpoint.agent_id = agent.to_string();
        self
    }

    /// Sets the parent checkpoint.
    pub fn parent(mut self, parent: &str) -> Self {
        self.checkpoint.parent_id = Some(ckpt_id(parent));
        self
    }

    /// Sets the timestamp.
    pub fn timestamp(mut self, t: Timestamp) -> Self {
        self.checkpoint.timestamp = t;
        self
    }

    /// Sets the timestamp to `ms` milliseconds after [`BASE_MICROS`].
    pub fn at_ms(self, ms: i64) -> Self {
        self.timestamp(at_ms(ms))
    }

    /// Sets the step number (in the metadata and in the progress).
    pub fn step(mut self, n: u64) -> Self {
        self.checkpoint.metadata.step_number = n;
        self.checkpoint.snapshot.progress.step_number = n;
        self
    }

    /// Sets the reason.
    pub fn reason(mut self, reason: CheckpointReason) -> Self {
        self.checkpoint.metadata.checkpoint_reason = reason;
        self
    }

    /// Adds a label.
    pub fn label(mut self, label: &str) -> Self {
        self.checkpoint.metadata.labels.push(label.to_string());
        self
    }

    /// Sets the name.
    pub fn name(mut self, name: &str) -> Self {
        self.checkpoint.metadata.name = Some(name.to_string());
        self
    }

    /// Sets the tokens used.
    pub fn tokens(mut self, n: u64) -> Self {
        self.checkpoint.metadata.tokens_used = n;
        self
    }

    /// Appends a thought (id `th_N`, created at the checkpoint's timestamp).
    pub fn thought(mut self, kind: &str, content: &str) -> Self {
        let chain = &mut self.checkpoint.snapshot.thought_chain;
        let id = format!("th_{:04}", chain.thoughts.len() + 1);
        chain.thoughts.push(Arc::new(Thought {
            id: id.clone(),
            kind: kind.to_string(),
            content: content.to_string(),
            confidence: Some(0.5),
            parent_id: None,
            created_at: self.checkpoint.timestamp,
            reasoning: None,
            alternatives: Vec::new(),
            children: Vec::new(),
            metadata: JsonObject::new(),
            extensions: JsonObject::new(),
        }));
        chain.current_thought_id = Some(id);
        self
    }

    /// Appends a completed tool call (id `call_N`).
    pub fn tool_call(mut self, tool: &str, args: Value, result: Value) -> Self {
        let t = self.checkpoint.timestamp;
        let state = &mut self.checkpoint.snapshot.tool_state;
        let id = format!("call_{:04}", state.calls.len() + 1);
        state.results.insert(tool.to_string(), result.clone());
        state.calls.push(Arc::new(ToolCall {
            id: id.clone(),
            tool_id: tool.to_string(),
            args,
            status: ToolStatus::Completed,
            result: Some(result),
            success: Some(true),
            error: None,
            started_at: Some(t),
            completed_at: Some(t),
            duration_ms: Some(0),
            extensions: JsonObject::new(),
        }));
        state.last_call_id = Some(id);
        self
    }

    /// Sets a context variable.
    pub fn variable(mut self, key: &str, value: Value) -> Self {
        self.checkpoint
            .snapshot
            .context
            .variables
            .insert(key.to_string(), value);
        self
    }

    /// Changes anything else.
    pub fn with(mut self, f: impl FnOnce(&mut Checkpoint)) -> Self {
        f(&mut self.checkpoint);
        self
    }

    /// The checkpoint.
    pub fn build(self) -> Checkpoint {
        self.checkpoint
    }
}

/// A checkpoint `id` of execution `execution` taken `ms` milliseconds after [`BASE_MICROS`],
/// with one thought and one variable so that it is not empty.
pub fn checkpoint(id: &str, execution: &str, ms: i64) -> Checkpoint {
    CheckpointBuilder::new(id)
        .execution(execution)
        .at_ms(ms)
        .thought("reasoning", &format!("thinking in {id}"))
        .variable("id", json!(id))
        .build()
}

/// A JSON value nested `depth` levels deep, each level an object with `breadth` members, a
/// string, numbers of every kind and an array.
pub fn nested_value(depth: usize, breadth: usize) -> Value {
    if depth == 0 {
        return json!({"leaf": "ünïcødé \u{0} \u{1f} \"q\" \\ 😀", "n": -1, "u": u64::MAX, "f": 0.1});
    }
    let mut m = serde_json::Map::new();
    for i in 0..breadth {
        m.insert(format!("k{i}-ключ"), nested_value(depth - 1, breadth));
    }
    m.insert(
        "array".into(),
        json!([null, true, false, i64::MIN, 1.5e300, -0.0, "x"]),
    );
    Value::Object(m)
}

/// A checkpoint with every optional field set, Unicode (and control characters) everywhere
/// strings are free, and big nested JSON values.
pub fn full_checkpoint(id: &str, execution: &str) -> Checkpoint {
    let t = at_ms(1234);
    let text = "héllo wörld — 你好 — مرحبا — 😀\u{0}\u{7}\t\n\r\u{2028}\"\\/";
    let big = nested_value(4, 4);
    let mut ext = JsonObject::new();
    ext.insert(
        "legacy_field".into(),
        json!({"kept": [1, 2, 3], "text": text}),
    );
    Checkpoint {
        schema: SCHEMA_URL.to_string(),
        version: CURRENT_VERSION.to_string(),
        id: ckpt_id(id),
        parent_id: Some(ckpt_id("ckpt_parent-of.full:1@x")),
        execution_id: exec_id(execution),
        agent_id: format!("agent {text}"),
        timestamp: t,
        metadata: Metadata {
            step_number: 7,
            tokens_used: u64::MAX,
            duration_ms: 123_456,
            checkpoint_reason: CheckpointReason::Other("custom_reason_2".into()),
            name: Some(format!("name {text}")),
            description: Some(format!("description {text}")),
            labels: vec!["alpha".into(), "βeta".into(), text.to_string()],
            agent_name: Some(format!("Agent {text}")),
            branch: Some(Branch {
                reason: Some(format!("because {text}")),
            }),
            extensions: ext.clone(),
        },
        snapshot: Snapshot {
            thought_chain: ThoughtChain {
                current_thought_id: Some("th_0002".into()),
                thoughts: vec![
                    Arc::new(Thought {
                        id: "th_0001".into(),
                        kind: "reasoning".into(),
                        content: text.repeat(20),
                        confidence: Some(0.0),
                        parent_id: None,
                        created_at: t,
                        reasoning: Some(text.into()),
                        alternatives: vec![json!({"option": text}), big.clone()],
                        children: vec!["th_0002".into()],
                        metadata: ext.clone(),
                        extensions: ext.clone(),
                    }),
                    Arc::new(Thought {
                        id: "th_0002".into(),
                        kind: "custom_kind_9".into(),
                        content: String::new(),
                        confidence: Some(1.0),
                        parent_id: Some("th_0001".into()),
                        created_at: Timestamp::from_micros(MAX_MICROS),
                        reasoning: Some(String::new()),
                        alternatives: vec![Value::Null],
                        children: Vec::new(),
                        metadata: JsonObject::new(),
                        extensions: JsonObject::new(),
                    }),
                ],
            },
            context: Context {
                variables: big.as_object().cloned().unwrap_or_default(),
                state: ext.clone(),
                history: vec![json!(text), big.clone(), json!([]), json!({})],
                messages: vec![json!({"role": "user", "content": text})],
                memory: vec![json!({"key": "k", "value": big, "importance": 0.25})],
            },
            tool_state: ToolState {
                calls: vec![
                    Arc::new(ToolCall {
                        id: "call_0001".into(),
                        tool_id: "search/ü".into(),
                        args: json!({"query": text, "n": 3}),
                        status: ToolStatus::Completed,
                        result: Some(json!([text, 1, 2.5, null])),
                        success: Some(true),
                        error: None,
                        started_at: Some(Timestamp::from_micros(0)),
                        completed_at: Some(t),
                        duration_ms: Some(u64::MAX),
                        extensions: ext.clone(),
                    }),
                    Arc::new(ToolCall {
                        id: "call_0002".into(),
                        tool_id: "http_get".into(),
                        args: Value::Null,
                        status: ToolStatus::Failed,
                        result: None,
                        success: Some(false),
                        error: Some(format!("boom {text}")),
                        started_at: Some(t),
                        completed_at: Some(t),
                        duration_ms: Some(0),
                        extensions: JsonObject::new(),
                    }),
                ],
                results: ext.clone(),
                last_call_id: Some("call_0002".into()),
            },
            progress: Progress {
                step_number: 7,
                total_steps: Some(10),
                iterations_completed: 3,
                completed_steps: vec![CompletedStep {
                    name: format!("step {text}"),
                    result: Some(json!({"ok": true})),
                    duration_ms: Some(5),
                    completed_at: t,
                }],
                pending_steps: vec!["next".into(), text.into(), String::new()],
                plan: vec![
                    PlanStep {
                        action: Some("search".into()),
                        attempts: 2,
                        completed_at: Some(t),
                        description: Some(format!("look up {text}")),
                        parameters: ext.clone(),
                        result: Some(json!([text])),
                        started_at: Some(t),
                        status: StepStatus::Completed,
                        ..PlanStep::new("step_1")
                    },
                    PlanStep {
                        dependencies: vec!["step_1".into()],
                        error: Some(format!("failed: {text}")),
                        status: StepStatus::Failed,
                        ..PlanStep::new("next")
                    },
                ],
                task: Some(format!("task {text}")),
                last_error: Some(LastError {
                    at: t,
                    message: format!("failed: {text}"),
                    step: Some("next".into()),
                }),
            },
        },
        extensions: ext,
    }
}

// ---- proptest strategies ---------------------------------------------------------------------

/// Any character, biased towards ASCII, control characters, NUL and characters JSON escapes.
pub fn arb_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => any::<char>(),
        3 => proptest::char::range(' ', '~'),
        1 => proptest::char::range('\0', '\u{1f}'),
        1 => proptest::sample::select(vec![
            '\0', '"', '\\', '/', '\u{7f}', '\u{80}', '\u{2028}', '\u{2029}', '\u{feff}',
            '\u{fffd}', '\u{10ffff}', 'é', '漢', '😀',
        ]),
    ]
}

/// A string of up to `max` arbitrary characters.
pub fn arb_text(max: usize) -> impl Strategy<Value = String> {
    vec(arb_char(), 0..=max).prop_map(String::from_iter)
}

/// A string of 1 to `max` arbitrary characters.
pub fn arb_nonempty_text(max: usize) -> impl Strategy<Value = String> {
    vec(arb_char(), 1..=max.max(1)).prop_map(String::from_iter)
}

/// A snake_case word (what the schema calls a `word`).
pub fn arb_word() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec!["reasoning", "observation", "action", "planning"])
            .prop_map(str::to_string),
        "[a-z][a-z0-9_]{0,20}",
        "[a-z][a-z0-9_]{63}",
    ]
}

/// A valid id string (1 to 128 characters of `A-Z a-z 0-9 _ - . : @`, no leading `.`, no `..`).
pub fn arb_id_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_:@-][A-Za-z0-9_.:@-]{0,40}",
        "[A-Za-z0-9_:@-][A-Za-z0-9_.:@-]{127}",
    ]
    .prop_filter("ids never contain ..", |s| {
        caf_core::id::check_id(s).is_ok()
    })
}

/// A valid checkpoint id.
pub fn arb_checkpoint_id() -> impl Strategy<Value = CheckpointId> {
    arb_id_string().prop_map(|s| ckpt_id(&s))
}

/// A valid execution id.
pub fn arb_execution_id() -> impl Strategy<Value = ExecutionId> {
    arb_id_string().prop_map(|s| exec_id(&s))
}

/// A timestamp in the years 1970 to 9999 (the edges included).
pub fn arb_timestamp() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        6 => 0..=MAX_MICROS,
        2 => (BASE_MICROS - 1_000_000_000)..(BASE_MICROS + 1_000_000_000),
        1 => Just(0),
        1 => Just(MAX_MICROS),
    ]
    .prop_map(Timestamp::from_micros)
}

/// A finite `f64` of any magnitude, signed zeros and subnormals included.
pub fn arb_finite_f64() -> impl Strategy<Value = f64> {
    use proptest::num::f64 as f;
    prop_oneof![
        f::POSITIVE | f::NEGATIVE | f::NORMAL | f::SUBNORMAL | f::ZERO,
        -1e6..1e6f64,
    ]
}

/// A JSON leaf: null, a boolean, a number (signed, unsigned, finite float) or a string.
pub fn arb_json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        arb_finite_f64().prop_map(Value::from),
        arb_text(24).prop_map(Value::String),
    ]
}

/// Any JSON value nested at most 8 levels deep (arrays and objects with arbitrary keys).
pub fn arb_json() -> BoxedStrategy<Value> {
    arb_json_leaf()
        .prop_recursive(8, 40, 4, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Value::Array),
                btree_map(arb_text(12), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// A JSON object with arbitrary keys and values.
pub fn arb_object() -> impl Strategy<Value = JsonObject> {
    btree_map(arb_text(12), arb_json(), 0..3).prop_map(|m| m.into_iter().collect())
}

/// A checkpoint reason: a known one or any other snake_case word.
pub fn arb_reason() -> impl Strategy<Value = CheckpointReason> {
    prop_oneof![
        proptest::sample::select(CheckpointReason::KNOWN.to_vec()).prop_map(str::to_string),
        arb_word(),
    ]
    .prop_map(|w| {
        w.parse::<CheckpointReason>()
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// A thought (arbitrary text, snake_case type, confidence in `[0, 1]`).
pub fn arb_thought() -> impl Strategy<Value = Thought> {
    (
        (
            arb_nonempty_text(32),
            arb_word(),
            arb_text(64),
            proptest::option::of(prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0f64]),
            proptest::option::of(arb_nonempty_text(32)),
            arb_timestamp(),
        ),
        (
            proptest::option::of(arb_text(32)),
            vec(arb_json(), 0..3),
            vec(arb_nonempty_text(16), 0..3),
            arb_object(),
            arb_object(),
        ),
    )
        .prop_map(
            |(
                (id, kind, content, confidence, parent_id, created_at),
                (reasoning, alternatives, children, metadata, extensions),
            )| Thought {
                id,
                kind,
                content,
                confidence,
                parent_id,
                created_at,
                reasoning,
                alternatives,
                children,
                metadata,
                extensions,
            },
        )
}

/// A tool status.
pub fn arb_tool_status() -> impl Strategy<Value = ToolStatus> {
    proptest::sample::select(vec![
        ToolStatus::Pending,
        ToolStatus::Running,
        ToolStatus::Completed,
        ToolStatus::Failed,
        ToolStatus::Cancelled,
    ])
}

/// A tool call (any combination of the optional fields, a `null` result included).
pub fn arb_tool_call() -> impl Strategy<Value = ToolCall> {
    (
        (
            arb_nonempty_text(32),
            arb_nonempty_text(32),
            arb_json(),
            arb_tool_status(),
            proptest::option::of(arb_json()),
            proptest::option::of(any::<bool>()),
        ),
        (
            proptest::option::of(arb_text(32)),
            proptest::option::of(arb_timestamp()),
            proptest::option::of(arb_timestamp()),
            proptest::option::of(any::<u64>()),
            arb_object(),
        ),
    )
        .prop_map(
            |(
                (id, tool_id, args, status, result, success),
                (error, started_at, completed_at, duration_ms, extensions),
            )| ToolCall {
                id,
                tool_id,
                args,
                status,
                result,
                success,
                error,
                started_at,
                completed_at,
                duration_ms,
                extensions,
            },
        )
}

/// A completed plan step.
pub fn arb_completed_step() -> impl Strategy<Value = CompletedStep> {
    (
        arb_text(24),
        proptest::option::of(arb_json()),
        proptest::option::of(any::<u64>()),
        arb_timestamp(),
    )
        .prop_map(|(name, result, duration_ms, completed_at)| CompletedStep {
            name,
            result,
            duration_ms,
            completed_at,
        })
}

/// Items with unique ids: a repeated id gets its position appended.
fn unique_ids<T>(mut items: Vec<T>, id: impl Fn(&mut T) -> &mut String) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    for (i, item) in items.iter_mut().enumerate() {
        let id = id(item);
        if !seen.insert(id.clone()) {
            id.push_str(&format!("-{i}"));
            seen.insert(id.clone());
        }
    }
    items
}

/// A plan: up to four steps with unique ids, each depending only on earlier ones.
pub fn arb_plan() -> impl Strategy<Value = Vec<PlanStep>> {
    let step = (
        arb_id_string(),
        proptest::option::of(arb_text(24)),
        proptest::option::of(arb_nonempty_text(24)),
        arb_object(),
        prop_oneof![
            Just(StepStatus::Pending),
            Just(StepStatus::Running),
            Just(StepStatus::Completed),
            Just(StepStatus::Failed),
            Just(StepStatus::Skipped),
        ],
        (
            any::<u64>(),
            proptest::option::of(arb_json()),
            proptest::option::of(arb_text(24)),
            proptest::option::of(arb_timestamp()),
            proptest::option::of(arb_timestamp()),
            any::<u8>(),
        ),
    )
        .prop_map(
            |(
                id,
                description,
                action,
                parameters,
                status,
                (attempts, result, error, s, c, deps),
            )| {
                (
                    PlanStep {
                        action,
                        attempts,
                        completed_at: c,
                        description,
                        error,
                        parameters,
                        result,
                        started_at: s,
                        status,
                        ..PlanStep::new(id)
                    },
                    deps,
                )
            },
        );
    vec(step, 0..4).prop_map(|steps| {
        let deps: Vec<u8> = steps.iter().map(|(_, d)| *d).collect();
        let mut plan = unique_ids(steps.into_iter().map(|(s, _)| s).collect(), |s| &mut s.id);
        // A '-N' suffix can make an id invalid (too long): shorten, then make unique again.
        for s in &mut plan {
            if caf_core::id::check_id(&s.id).is_err() {
                s.id = "step".into();
            }
        }
        let mut plan = unique_ids(plan, |s| &mut s.id);
        for i in 0..plan.len() {
            // Bit j of the byte: depend on step j (only earlier steps).
            let earlier: Vec<String> = (0..i)
                .filter(|j| deps[i] & (1 << j) != 0)
                .map(|j| plan[j].id.clone())
                .collect();
            plan[i].dependencies = earlier;
        }
        plan
    })
}

/// The last error of a run.
pub fn arb_last_error() -> impl Strategy<Value = LastError> {
    (
        arb_timestamp(),
        arb_text(40),
        proptest::option::of(arb_id_string()),
    )
        .prop_map(|(at, message, step)| LastError { at, message, step })
}

/// A snapshot: thoughts, context, tool state and progress.
pub fn arb_snapshot() -> impl Strategy<Value = Snapshot> {
    let thought_chain = (
        proptest::option::of(arb_nonempty_text(32)),
        vec(arb_thought(), 0..4),
    )
        .prop_map(|(current_thought_id, thoughts)| ThoughtChain {
            current_thought_id,
            thoughts: unique_ids(thoughts, |t| &mut t.id)
                .into_iter()
                .map(Arc::new)
                .collect(),
        });
    let context = (
        arb_object(),
        arb_object(),
        vec(arb_json(), 0..3),
        vec(arb_json(), 0..3),
        vec(arb_json(), 0..3),
    )
        .prop_map(|(variables, state, history, messages, memory)| Context {
            variables,
            state,
            history,
            messages,
            memory,
        });
    let tool_state = (
        vec(arb_tool_call(), 0..4),
        arb_object(),
        proptest::option::of(arb_nonempty_text(32)),
    )
        .prop_map(|(calls, results, last_call_id)| ToolState {
            calls: unique_ids(calls, |c| &mut c.id)
                .into_iter()
                .map(Arc::new)
                .collect(),
            results,
            last_call_id,
        });
    let progress = (
        any::<u64>(),
        proptest::option::of(any::<u64>()),
        any::<u64>(),
        vec(arb_completed_step(), 0..3),
        vec(arb_text(24), 0..4),
        arb_plan(),
        proptest::option::of(arb_text(40)),
        proptest::option::of(arb_last_error()),
    )
        .prop_map(
            |(
                step_number,
                total_steps,
                iterations_completed,
                completed_steps,
                pending_steps,
                plan,
                task,
                last_error,
            )| {
                Progress {
                    step_number,
                    total_steps,
                    iterations_completed,
                    completed_steps,
                    pending_steps,
                    plan,
                    task,
                    last_error,
                }
            },
        );
    (thought_chain, context, tool_state, progress).prop_map(
        |(thought_chain, context, tool_state, progress)| Snapshot {
            thought_chain,
            context,
            tool_state,
            progress,
        },
    )
}

/// Checkpoint metadata (unique non-empty labels, names within 256 characters).
pub fn arb_metadata() -> impl Strategy<Value = Metadata> {
    let long_name = Just("é".repeat(256));
    let long_label = Just("😀".repeat(128));
    (
        (any::<u64>(), any::<u64>(), any::<u64>(), arb_reason()),
        (
            proptest::option::of(prop_oneof![4 => arb_text(40), 1 => long_name]),
            proptest::option::of(arb_text(64)),
            btree_set(
                prop_oneof![4 => arb_nonempty_text(20), 1 => long_label],
                0..4,
            ),
            proptest::option::of(arb_text(24)),
            proptest::option::of(proptest::option::of(arb_text(24))),
            arb_object(),
        ),
    )
        .prop_map(
            |(
                (step_number, tokens_used, duration_ms, checkpoint_reason),
                (name, description, labels, agent_name, branch, extensions),
            )| Metadata {
                step_number,
                tokens_used,
                duration_ms,
                checkpoint_reason,
                name,
                description,
                labels: labels.into_iter().collect(),
                agent_name,
                branch: branch.map(|reason| Branch { reason }),
                extensions,
            },
        )
}

/// An arbitrary valid checkpoint of the current format.
pub fn arb_checkpoint() -> BoxedStrategy<Checkpoint> {
    (
        (
            prop_oneof![4 => Just(SCHEMA_URL.to_string()), 1 => arb_nonempty_text(60)],
            arb_checkpoint_id(),
            proptest::option::of(arb_checkpoint_id()),
            arb_execution_id(),
            arb_nonempty_text(48),
            arb_timestamp(),
        ),
        (arb_metadata(), arb_snapshot(), arb_object()),
    )
        .prop_map(
            |(
                (schema, id, parent_id, execution_id, agent_id, timestamp),
                (metadata, snapshot, extensions),
            )| Checkpoint {
                schema,
                version: CURRENT_VERSION.to_string(),
                id,
                parent_id,
                execution_id,
                agent_id,
                timestamp,
                metadata,
                snapshot,
                extensions,
            },
        )
        .boxed()
}

/// `n` arbitrary valid checkpoints drawn deterministically (the same ones on every run), for
/// tests that are not proptests, such as the conformance suite.
pub fn sample_checkpoints(n: usize) -> Vec<Checkpoint> {
    let mut runner = TestRunner::deterministic();
    let strategy = arb_checkpoint();
    (0..n)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .unwrap_or_else(|e| panic!("generating a checkpoint: {e}"))
                .current()
        })
        .collect()
}
