//! `caf resume EXECUTION|ID`: what a run would resume from (seed 004's "Restored State").

use crate::cli::ResumeArgs;
use crate::output::{self, BOLD, DIM, RED, YELLOW};
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::format::StepStatus;
use caf_core::resume::{restore_target, ProgressView, ResumeError, ResumeView};
use caf_core::Restored;
use serde::Serialize;
use std::io::Write;

/// The restored state of an execution (its latest valid checkpoint) or of a checkpoint, and
/// the store's unreadable files.
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
    let restored = restore_target(&*store, target).map_err(|e| match e {
        e @ ResumeError::BadId { .. } => Failure::Usage(e.to_string()),
        e @ ResumeError::NotFound(_) => Failure::msg(format!("{e} in {}", t.describe())),
        ResumeError::Store(e) => Failure::from(e),
        e => Failure::msg(e),
    })?;
    Ok((restored, unreadable))
}

/// The JSON of `caf resume --json`: the view, and the store's unreadable files.
#[derive(Serialize)]
struct JsonView<'a> {
    #[serde(flatten)]
    view: &'a ResumeView,
    unreadable_files: Vec<String>,
}

/// Shows what a run would resume from.
pub fn run(t: &Target, json: bool, a: &ResumeArgs) -> CmdResult {
    let (r, unreadable) = restore(t, &a.target)?;
    let view = ResumeView::of(&r);
    let c = &r.checkpoint;
    let p = &c.snapshot.progress;
    let ProgressView {
        done,
        total,
        percent,
        ..
    } = view.progress;
    let status = view.status;
    let in_flight = &view.in_flight_tool_calls;
    let chosen = &view.chosen;
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
        output::print_json(&JsonView {
            view: &view,
            unreadable_files: unreadable,
        });
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
