//! `caf resume EXECUTION|ID`: what a run would resume from (seed 004's "Restored State").

use super::{checkpoint_id, execution_id};
use crate::cli::ResumeArgs;
use crate::output::{self, BOLD, DIM, RED, YELLOW};
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::format::StepStatus;
use caf_core::{CheckpointManager, CheckpointStore, ExecutionStatus, ListFilter, Restored};
use serde_json::json;
use std::io::Write;

/// The restored state of an execution (its latest valid checkpoint) or of a checkpoint.
fn restore(t: &Target, target: &str) -> Result<(Restored, Vec<String>), Failure> {
    // With its database, if the store has one: a damaged file then loads from the database's
    // intact copy (and says so).
    let store = t.open_for_update()?;
    // Files that could not be read at all are not listed (their execution is unknown): shown
    // apart, since one of them may be this run's newest checkpoint.
    let unreadable: Vec<String> = store
        .files()
        .map(|f| f.problems().iter().map(|p| p.error.to_string()).collect())
        .unwrap_or_default();
    let manager = CheckpointManager::new(&store);
    if let Ok(e) = execution_id(target) {
        if !store.list(&ListFilter::execution(&e))?.is_empty() {
            return Ok((manager.restore_latest(&e)?, unreadable));
        }
    }
    let id = checkpoint_id(target)?;
    if store.summary(&id)?.is_none() {
        return Err(Failure::msg(format!(
            "{target}: no execution or checkpoint with this id in {}",
            t.describe()
        )));
    }
    Ok((manager.restore(&id)?, unreadable))
}

/// Shows what a run would resume from.
pub fn run(t: &Target, json: bool, a: &ResumeArgs) -> CmdResult {
    let (r, unreadable) = restore(t, &a.target)?;
    let c = &r.checkpoint;
    let p = &c.snapshot.progress;
    let status = ExecutionStatus::from_reason(&c.metadata.checkpoint_reason);
    let (done, total) = if p.plan.is_empty() {
        let done = p.completed_steps.len();
        (done, done + p.pending_steps.len())
    } else {
        let done = p.plan.iter().filter(|s| s.status.is_done()).count();
        (done, p.plan.len())
    };
    let percent = (done * 100).checked_div(total).unwrap_or(100);
    let in_flight = r.state.in_flight_tool_calls();
    let chosen = match &r.chosen {
        caf_core::Chosen::Requested => None,
        caf_core::Chosen::Ancestor { head, generations } => Some(format!(
            "the newest checkpoint {head} is damaged: resuming from its ancestor {generations} generation(s) back"
        )),
        caf_core::Chosen::NewestValid { head } => Some(format!(
            "the newest checkpoint {head} and its ancestors are damaged: resuming from the newest valid checkpoint of the execution, on another line"
        )),
    };
    if let caf_core::LoadSource::Database {
        database,
        file_error,
    } = &r.source
    {
        output::warn_line(&format!(
            "{}: the file is damaged ({file_error}); loaded the intact copy in {database}",
            c.id
        ));
    }
    if json {
        output::print_json(&json!({
            "checkpoint": c.id,
            "execution_id": c.execution_id,
            "agent_id": c.agent_id,
            "status": status,
            "resumable": status.is_resumable(),
            "timestamp": c.timestamp,
            "reason": c.metadata.checkpoint_reason,
            "skipped": r.skipped.iter().map(|(id, why)| json!({"id": id, "error": why})).collect::<Vec<_>>(),
            "chosen": chosen,
            "from_database": !r.source.is_primary(),
            "unreadable_files": unreadable,
            "progress": {"done": done, "total": total, "percent": percent, "step_number": p.step_number},
            "task": p.task,
            "completed_steps": p.completed_steps.iter().map(|s| &s.name).collect::<Vec<_>>(),
            "remaining_steps": r.remaining_steps,
            "plan": p.plan,
            "last_error": p.last_error,
            "in_flight_tool_calls": in_flight,
            "variables": c.snapshot.context.variables,
        }));
        return Ok(());
    }
    let mut o = anstream::stdout();
    let _ = writeln!(o, "{BOLD}Resume {}{BOLD:#}", c.execution_id);
    for (id, why) in &r.skipped {
        let _ = writeln!(o, "  {YELLOW}skipped{YELLOW:#}     {id}: {why}");
    }
    if let Some(chosen) = &chosen {
        let _ = writeln!(o, "  {YELLOW}note{YELLOW:#}        {chosen}");
    }
    let _ = writeln!(
        o,
        "  From        {} ({}, {} {DIM}{}{DIM:#})",
        c.id,
        c.metadata.checkpoint_reason,
        output::short_time(c.timestamp),
        output::age(c.timestamp)
    );
    let _ = writeln!(
        o,
        "  Status      {status}{}",
        if status.is_resumable() {
            " (resumable)"
        } else {
            ""
        }
    );
    if let Some(task) = &p.task {
        let _ = writeln!(o, "  Task        {task}");
    }
    let _ = writeln!(o, "  Progress    {done}/{total} steps ({percent}%)");
    let completed: Vec<&str> = if p.plan.is_empty() {
        p.completed_steps.iter().map(|s| s.name.as_str()).collect()
    } else {
        p.plan
            .iter()
            .filter(|s| s.status.is_done())
            .map(|s| s.id.as_str())
            .collect()
    };
    let _ = writeln!(o, "  Completed   {}", list_or_none(&completed));
    let remaining: Vec<String> = if p.plan.is_empty() {
        r.remaining_steps.clone()
    } else {
        p.plan
            .iter()
            .filter(|s| !s.status.is_done())
            .map(|s| match s.status {
                StepStatus::Pending => s.id.clone(),
                other => format!("{} ({})", s.id, other.as_str()),
            })
            .collect()
    };
    let remaining: Vec<&str> = remaining.iter().map(String::as_str).collect();
    let _ = writeln!(o, "  Remaining   {}", list_or_none(&remaining));
    if let Some(e) = &p.last_error {
        let _ = writeln!(
            o,
            "  {RED}Last error{RED:#}  {}{} ({})",
            e.step
                .as_ref()
                .map_or(String::new(), |s| format!("step {s}: ")),
            e.message,
            output::short_time(e.at)
        );
    }
    if in_flight.is_empty() {
        let _ = writeln!(o, "  In flight   none");
    } else {
        let _ = writeln!(
            o,
            "  {YELLOW}In flight{YELLOW:#}   {} tool call(s), to retry or reconcile:",
            in_flight.len()
        );
        for call in in_flight {
            let _ = writeln!(
                o,
                "    {} {} {} {}",
                call.id,
                call.tool_id,
                call.status.as_str(),
                call.args
            );
        }
    }
    let vars = &c.snapshot.context.variables;
    if vars.is_empty() {
        let _ = writeln!(o, "  Variables   none");
    } else {
        let _ = writeln!(o, "  Variables");
        for (k, v) in vars {
            let _ = writeln!(o, "    {k} = {v}");
        }
    }
    Ok(())
}

fn list_or_none(items: &[&str]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}
