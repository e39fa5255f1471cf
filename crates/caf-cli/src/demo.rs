//! `caf demo`: a simulated agent that plans, thinks, calls tools, checkpoints after every step,
//! crashes, resumes from its latest checkpoint and finishes.
//!
//! After the last execution finishes, the story goes on: a branch is forked from step 3 of it
//! ("what if we had picked another candidate?") and grows two steps, and the execution is pruned
//! to its last checkpoints, keeping the branch point, the named final checkpoint and the heads.
//!
//! The content is determined by `--seed`. With `--deterministic` the simulated clock starts at a
//! fixed time, so ids and times are too: running it twice rewrites identical files. By default
//! the clock is set so that the run ends now.

use crate::cli::DemoArgs;
use crate::output::{self, BOLD, CYAN, DIM, GREEN, RED, YELLOW};
use crate::target::{Store, Target};
use crate::{CmdResult, Failure};
use caf_core::clock::{utc, SimulatedClock};
use caf_core::config::Config;
use caf_core::store::SaveMode;
use caf_core::{
    CheckpointId, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, Clock,
    ExecutionId, RuntimeState,
};
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};

const AGENT: &str = "research-agent";
const TASK: &str =
    "Compare three open-source vector databases and recommend one for our search service";
const PLAN: [&str; 8] = [
    "clarify requirements",
    "search for candidates",
    "read documentation",
    "collect benchmarks",
    "write comparison",
    "run sample queries",
    "check licences",
    "write recommendation",
];
const TOOLS: [&str; 5] = ["search", "read_file", "write_file", "run_tests", "http_get"];
const WORDS: [&str; 24] = [
    "latency",
    "recall",
    "index",
    "shard",
    "replica",
    "licence",
    "throughput",
    "memory",
    "filter",
    "hybrid",
    "cosine",
    "quantisation",
    "HNSW",
    "IVF",
    "disk",
    "cluster",
    "snapshot",
    "backup",
    "tenant",
    "schema",
    "cost",
    "community",
    "release",
    "API",
];

fn sentence(rng: &mut fastrand::Rng, words: usize) -> String {
    let mut s: Vec<&str> = (0..words)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect();
    s.dedup();
    let mut out = s.join(" ");
    if let Some(first) = out.get(..1) {
        out = first.to_uppercase() + &out[1..];
    }
    out + "."
}

fn plan(steps: u32) -> Vec<String> {
    (0..steps as usize)
        .map(|i| match i / PLAN.len() {
            0 => PLAN[i].to_string(),
            round => format!("{} (round {})", PLAN[i % PLAN.len()], round + 1),
        })
        .collect()
}

/// Deterministic ids: UUIDv7 from the simulated clock and the seeded generator, kept strictly
/// increasing (two checkpoints in the same millisecond still sort in creation order).
fn id_source(
    clock: Arc<SimulatedClock>,
    rng: Arc<Mutex<(fastrand::Rng, u128)>>,
) -> impl Fn() -> CheckpointId + Send + Sync {
    move || {
        let ms = u64::try_from(clock.now().as_millis()).unwrap_or(0);
        let mut guard = rng.lock().unwrap_or_else(|p| p.into_inner());
        let (rng, last) = &mut *guard;
        let mut bytes = [0u8; 10];
        rng.fill(&mut bytes);
        let mut uuid = uuid::Builder::from_unix_timestamp_millis(ms, &bytes).into_uuid();
        if uuid.as_u128() <= *last {
            // Same millisecond: count up from the previous id, keeping the v7 layout.
            uuid = uuid::Uuid::from_u128(*last + 1);
        }
        *last = uuid.as_u128();
        CheckpointId::new(format!("ckpt_{uuid}")).unwrap_or_else(|_| CheckpointId::generate())
    }
}

/// The end of the story: a branch and a prune.
#[derive(serde::Serialize)]
struct Epilogue {
    fork: CheckpointId,
    branch_execution: ExecutionId,
    branch_head: CheckpointId,
    pruned: usize,
}

struct Run {
    epilogue: Option<Epilogue>,
    execution_id: ExecutionId,
    checkpoints: usize,
    crashed_at: Option<u32>,
    resumed_from: Option<CheckpointId>,
    last: Option<CheckpointId>,
    tokens: u64,
}

/// Does the work of step `s` (1-based): thoughts, a tool call, context, progress.
fn work(
    state: &mut RuntimeState,
    rng: &mut fastrand::Rng,
    clock: &SimulatedClock,
    s: u32,
) -> Result<String, Failure> {
    let step_name = state.remaining_steps().first().cloned().unwrap_or_default();
    let tool = TOOLS[(s as usize - 1) % TOOLS.len()];
    let plan_thought = state.add_thought(
        "reasoning",
        format!("Step {s}: {step_name}. {}", sentence(rng, 12)),
        Some(0.7 + f64::from(rng.u8(..30)) / 100.0),
    );
    let call = state.start_tool_call(tool, json!({"query": sentence(rng, 6), "n": s}));
    clock.advance_ms(200 + rng.u64(..2800));
    state
        .complete_tool_call(&call, json!(sentence(rng, 20)))
        .map_err(Failure::msg)?;
    state
        .add_child_thought(
            &plan_thought,
            "observation",
            format!("{tool} returned: {}", sentence(rng, 10)),
            Some(0.85),
        )
        .map_err(Failure::msg)?;
    state.set_variable("step", json!(s));
    state.set_variable("last_tool", json!(tool));
    state.set_variable("score", json!(f64::from(rng.u8(50..100)) / 100.0));
    state.push_history(json!({"step": s, "done": step_name}));
    state.add_tokens(200 + rng.u64(..600));
    state.complete_step(Some(json!({"summary": sentence(rng, 5)})));
    Ok(tool.to_string())
}

/// How long the simulated runs take at most: an hour between executions, at most 3 s a step.
fn simulated_span_ms(a: &DemoArgs) -> u64 {
    u64::from(a.executions) * 3_600_000 + u64::from(a.steps + 4) * 3_000
}

/// The estimated size of what the demo writes: each file holds everything so far, so an
/// execution of `s` steps writes about 1.7 KB x (s + 1) x (s + 4) / 2.
pub fn estimated_bytes(a: &DemoArgs) -> u64 {
    let s = u64::from(a.steps);
    u64::from(a.executions) * 1_700 * (s + 1) * (s + 4) / 2
}

fn run_one(t: &Target, a: &DemoArgs, mode: SaveMode, n: u32, human: bool) -> Result<Run, Failure> {
    let mut rng =
        fastrand::Rng::with_seed(a.seed.wrapping_mul(1_000_003).wrapping_add(u64::from(n)));
    let start = if a.deterministic {
        utc(2026, 1, 5, 9, 0, 0).ok_or_else(|| Failure::msg("bad demo start time"))?
    } else {
        let now = caf_core::SystemClock.now();
        let span = i64::try_from(simulated_span_ms(a)).unwrap_or(i64::MAX);
        caf_core::Timestamp::from_micros(now.as_micros().saturating_sub(span.saturating_mul(1000)))
    };
    let clock = Arc::new(SimulatedClock::starting_at(start));
    clock.advance_ms(u64::from(n) * 3_600_000);
    let id_rng = Arc::new(Mutex::new((fastrand::Rng::with_seed(rng.u64(..)), 0u128)));
    let exec_uuid = uuid::Builder::from_unix_timestamp_millis(
        u64::try_from(clock.now().as_millis()).unwrap_or(0),
        &rng.u128(..).to_le_bytes()[..10]
            .try_into()
            .unwrap_or([0; 10]),
    )
    .into_uuid();
    let execution_id = ExecutionId::new(format!("exec_{exec_uuid}")).map_err(Failure::msg)?;
    let open = || -> Result<CheckpointManager<Store>, Failure> {
        Ok(
            CheckpointManager::new(t.open_with_database()?.into_async_if(mode))
                .with_clock(clock.clone())
                .with_id_source(id_source(clock.clone(), id_rng.clone())),
        )
    };
    let mut out = anstream::stdout();
    let mut say = |line: String| {
        if human {
            let _ = writeln!(out, "{line}");
        }
    };
    say(format!(
        "\n{BOLD}execution{BOLD:#} {CYAN}{execution_id}{CYAN:#}  agent {AGENT}"
    ));
    say(format!("  {DIM}task: {TASK}{DIM:#}"));

    let fresh = || {
        let mut s = RuntimeState::with_clock(AGENT, execution_id.clone(), clock.clone());
        s.set_plan(plan(a.steps));
        s.set_variable("task", json!(TASK));
        s.push_message("user", TASK);
        s
    };
    let mut manager = open()?;
    // A deterministic demo: a previous run with the same seed used the same execution id.
    let replaced = manager.store().delete_execution(&execution_id)?;
    if replaced > 0 {
        say(format!("  {DIM}replaying: removed {replaced} checkpoints of an earlier run with this seed{DIM:#}"));
    }
    let mut state = fresh();
    let mut run = Run {
        epilogue: None,
        execution_id: execution_id.clone(),
        checkpoints: 0,
        crashed_at: None,
        resumed_from: None,
        last: None,
        tokens: 0,
    };
    let mut s = 1;
    while s <= a.steps {
        let step_name = state.remaining_steps().first().cloned().unwrap_or_default();
        let tool = work(&mut state, &mut rng, &clock, s)?;
        if s == a.crash_at && run.crashed_at.is_none() {
            run.crashed_at = Some(s);
            say(format!("  step {s:>3}/{}  {step_name:<28} {RED}crash!{RED:#} the agent process dies mid-step; its memory is gone", a.steps));
            drop(state);
            // (An async store's queue is written when it is dropped; its last error is seen.)
            manager.store().flush()?;
            drop(manager);
            manager = open()?;
            match manager.restore_latest(&execution_id) {
                Ok(r) => {
                    say(format!(
                        "  {YELLOW}resume{YELLOW:#}    restored {CYAN}{}{CYAN:#} (step {}), {} steps remain: {}",
                        r.checkpoint.id,
                        r.checkpoint.metadata.step_number,
                        r.remaining_steps.len(),
                        output::clip(&r.remaining_steps.join(", "), 60)
                    ));
                    run.resumed_from = Some(r.checkpoint.id.clone());
                    state = r.state;
                }
                Err(caf_core::Error::NotFound { .. }) => {
                    say(format!(
                        "  {YELLOW}resume{YELLOW:#}    no checkpoint yet: starting over"
                    ));
                    state = fresh();
                }
                Err(e) => return Err(e.into()),
            }
            s = u32::try_from(state.step_number()).unwrap_or(u32::MAX) + 1;
            continue;
        }
        let c = manager.checkpoint(
            &mut state,
            CheckpointOptions::new(CheckpointReason::StepCompleted),
        )?;
        run.checkpoints += 1;
        let size = manager.store().stored_size(&c);
        say(format!(
            "  step {s:>3}/{}  {step_name:<28} {tool:<10} {GREEN}saved{GREEN:#} {CYAN}{}{CYAN:#} {DIM}({}){DIM:#}",
            a.steps,
            c.id,
            output::bytes(size)
        ));
        run.last = Some(c.id);
        s += 1;
    }
    state.add_thought(
        "decision",
        format!("Recommendation written. {}", sentence(&mut rng, 8)),
        Some(0.93),
    );
    let options = CheckpointOptions::new(CheckpointReason::Completed)
        .named("final")
        .label("demo");
    let c = manager.checkpoint(&mut state, options)?;
    run.checkpoints += 1;
    run.tokens = state.tokens_used();
    say(format!(
        "  {GREEN}done{GREEN:#}      final checkpoint {CYAN}{}{CYAN:#}: {} thoughts, {} tool calls, {} tokens, {} simulated",
        c.id,
        c.thought_count(),
        c.tool_call_count(),
        c.metadata.tokens_used,
        output::duration_ms(c.metadata.duration_ms)
    ));
    run.last = Some(c.id);
    if n == a.executions && a.steps >= 5 {
        run.epilogue = Some(branch_and_prune(
            &manager,
            &execution_id,
            &clock,
            &mut rng,
            &mut say,
        )?);
    }
    manager.store().flush()?;
    Ok(run)
}

/// `--durability`, else `durability` in the directory's caf.toml, else sync.
fn durability(t: &Target, a: &DemoArgs) -> Result<SaveMode, Failure> {
    match a.durability {
        Some(mode) => Ok(mode),
        None => Ok(Config::load(t.dir())
            .map_err(Failure::msg)?
            .durability
            .unwrap_or_default()),
    }
}

/// Forks a branch from step 3 and grows it two steps, then prunes the execution to its last
/// three checkpoints (the policy's protections keep the branch point and the final one).
fn branch_and_prune(
    manager: &CheckpointManager<Store>,
    execution_id: &ExecutionId,
    clock: &SimulatedClock,
    rng: &mut fastrand::Rng,
    say: &mut impl FnMut(String),
) -> Result<Epilogue, Failure> {
    let listed = manager
        .store()
        .list(&caf_core::ListFilter::execution(execution_id))?;
    let Some(from) = listed.iter().rev().find(|s| s.step_number == 3) else {
        return Err(Failure::msg(
            "the demo has no checkpoint of step 3 to branch from",
        ));
    };
    let branch_execution = ExecutionId::new(format!("{execution_id}-b")).map_err(Failure::msg)?;
    let fork = manager.fork(
        &from.id,
        caf_core::ForkOptions {
            name: Some("other-candidate".into()),
            reason: Some("what if we had picked another candidate?".into()),
            labels: Vec::new(),
            execution: Some(branch_execution.clone()),
        },
    )?;
    say(format!(
        "\n  {YELLOW}fork{YELLOW:#}      branch {CYAN}{}{CYAN:#} from step 3 ({}) into execution {branch_execution}",
        fork.id, from.id
    ));
    let mut state = manager.restore(&fork.id)?.state;
    let mut head = fork.id.clone();
    for s in 4..=5 {
        let step_name = state.remaining_steps().first().cloned().unwrap_or_default();
        let tool = work(&mut state, rng, clock, s)?;
        let c = manager.checkpoint(
            &mut state,
            CheckpointOptions::new(CheckpointReason::StepCompleted).label("branch"),
        )?;
        say(format!(
            "  branch {s:>2}    {step_name:<28} {tool:<10} {GREEN}saved{GREEN:#} {CYAN}{}{CYAN:#}",
            c.id
        ));
        head = c.id;
    }
    let policy =
        caf_core::retention::RetentionPolicy::default().with_overrides(Some(3), None, None);
    let outcome = caf_core::prune::prune(
        manager.store(),
        &policy,
        Some(execution_id),
        clock.now(),
        false,
    )?;
    say(format!(
        "  {YELLOW}prune{YELLOW:#}     keep the last 3 of {execution_id}: deleted {}, kept {} (the branch point and the final checkpoint are protected)",
        outcome.deleted.len(),
        outcome.plan.keep.len()
    ));
    Ok(Epilogue {
        fork: fork.id,
        branch_execution,
        branch_head: head,
        pruned: outcome.deleted.len(),
    })
}

/// Runs the demo.
pub fn run(t: &Target, json: bool, a: &DemoArgs) -> CmdResult {
    let estimate = estimated_bytes(a);
    if estimate > 1_000_000_000 && !a.force {
        return Err(Failure::Usage(format!(
            "this demo would write about {} (each checkpoint holds the whole run so far); \
             use fewer --steps or --executions, or pass --force",
            output::bytes(estimate)
        )));
    }
    if !json {
        let crash = if a.crash_at == 0 || a.crash_at > a.steps {
            "no crash".to_string()
        } else {
            format!("a crash during step {}", a.crash_at)
        };
        let mut o = anstream::stdout();
        let _ = writeln!(
            o,
            "{BOLD}caf demo{BOLD:#}: {} x {}, {crash}, seed {}, checkpoints in {}",
            output::count_of(a.executions as usize, "execution"),
            output::count_of(a.steps as usize, "step"),
            a.seed,
            t.describe()
        );
    }
    let mode = durability(t, a)?;
    let mut runs = Vec::new();
    for n in 1..=a.executions {
        runs.push(run_one(t, a, mode, n, !json)?);
    }
    // The branch adds the fork and two steps.
    let total: usize = runs
        .iter()
        .map(|r| r.checkpoints + if r.epilogue.is_some() { 3 } else { 0 })
        .sum();
    let pruned: usize = runs
        .iter()
        .filter_map(|r| r.epilogue.as_ref().map(|e| e.pruned))
        .sum();
    let store = t.open_with_database()?;
    let db = store
        .sql()
        .ok_or_else(|| Failure::msg("the demo store has no database"))?;
    let stats = db
        .stats(None)
        .map_err(|e| Failure::msg(format!("{}: {e}", crate::target::redact(&db.location()))))?;
    if json {
        let execs: Vec<_> = runs
            .iter()
            .map(|r| {
                json!({
                    "execution_id": r.execution_id, "checkpoints": r.checkpoints,
                    "crashed_at_step": r.crashed_at, "resumed_from": r.resumed_from,
                    "final_checkpoint": r.last, "tokens_used": r.tokens,
                    "branch": r.epilogue,
                })
            })
            .collect();
        output::print_json(&json!({
            "dir": t.describe(), "database": crate::target::redact(&db.location()),
            "checkpoints": total, "pruned": pruned, "executions": execs, "stats": stats,
        }));
        return Ok(());
    }
    let last = runs
        .last()
        .and_then(|r| r.last.clone())
        .map(|id| id.to_string())
        .unwrap_or_default();
    let exec = runs
        .last()
        .map(|r| r.execution_id.to_string())
        .unwrap_or_default();
    let mut o = anstream::stdout();
    let _ = writeln!(
        o,
        "\n{BOLD}{}{BOLD:#} written to {}{}, indexed in {}. From SQL:\n",
        output::count_of(total, "checkpoint"),
        t.describe(),
        if pruned > 0 {
            format!(" ({pruned} since pruned)")
        } else {
            String::new()
        },
        crate::target::redact(&db.location())
    );
    crate::commands::database::print_stats(&stats);
    let global = match (&t.db, t.no_files) {
        (Some(db), true) => format!("--db {} --no-files", crate::target::redact(db)),
        _ => format!("--dir {}", t.dir().display()),
    };
    let _ = writeln!(o, "\nNext:");
    let _ = writeln!(o, "  caf {global} list --execution {exec}");
    let _ = writeln!(o, "  caf {global} log --graph");
    let _ = writeln!(o, "  caf {global} resume {exec}");
    let _ = writeln!(o, "  caf {global} inspect {last}");
    let _ = writeln!(o, "  caf {global} query tool-calls --tool search");
    if !t.no_files {
        let _ = writeln!(o, "  caf validate {}", t.dir().display());
    }
    Ok(())
}
