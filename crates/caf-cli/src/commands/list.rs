//! `caf list`.

use super::{checkpoint_id, execution_id, open_existing};
use crate::cli::ListArgs;
use crate::output::{self, Table, CYAN, DIM};
use crate::target::Target;
use crate::{CmdResult, Failure};
use anstyle::Style;
use caf_core::{CheckpointReason, ListFilter};

/// Lists checkpoints newest first, as a table or a JSON array of summaries.
pub fn run(t: &Target, json: bool, a: &ListArgs) -> CmdResult {
    let store = open_existing(t)?;
    let filter = ListFilter {
        execution_id: a.execution.as_deref().map(execution_id).transpose()?,
        agent_id: a.agent.clone(),
        reason: a
            .reason
            .as_deref()
            .map(|r| r.parse::<CheckpointReason>().map_err(Failure::msg))
            .transpose()?,
        label: a.label.clone(),
        before: a.before.as_deref().map(checkpoint_id).transpose()?,
        limit: a.limit,
        ..ListFilter::default()
    };
    // An unknown cursor would give an empty page that looks like the end of the list.
    if let Some(before) = &filter.before {
        if !store
            .list(&ListFilter::default())?
            .iter()
            .any(|s| &s.id == before)
        {
            return Err(Failure::msg(format!(
                "checkpoint {before} not found in {} (--before)",
                t.describe()
            )));
        }
    }
    let items = store.list(&filter)?;
    if json {
        output::print_json(&items);
        return Ok(());
    }
    if items.is_empty() {
        crate::say!("no checkpoints in {}", t.describe());
        return Ok(());
    }
    let mut t = Table::new(&["ID", "EXECUTION", "STEP", "REASON", "TIME", "SIZE", "NAME"]);
    for s in &items {
        let name = match (&s.name, s.labels.is_empty()) {
            (Some(n), _) => n.clone(),
            (None, false) => format!("[{}]", s.labels.join(", ")),
            (None, true) => String::new(),
        };
        t.row(vec![
            (s.id.to_string(), CYAN),
            (s.execution_id.to_string(), Style::new()),
            (s.step_number.to_string(), Style::new()),
            (s.checkpoint_reason.to_string(), Style::new()),
            (
                format!(
                    "{} ({})",
                    output::short_time(s.timestamp),
                    output::age(s.timestamp)
                ),
                DIM,
            ),
            (output::bytes(s.bytes), Style::new()),
            (name, Style::new()),
        ]);
    }
    t.print();
    if filter == ListFilter::default() {
        resumable(&items);
    }
    Ok(())
}

/// Marks the executions that are not completed, newest checkpoint first: they can resume.
fn resumable(items: &[caf_core::CheckpointSummary]) {
    let mut seen = std::collections::HashSet::new();
    for s in items {
        if !seen.insert(&s.execution_id) {
            continue;
        }
        let status = caf_core::ExecutionStatus::from_reason(&s.checkpoint_reason);
        if status.is_resumable() {
            crate::say!(
                "resumable: {} ({status} at step {}; `caf resume {}`)",
                s.execution_id,
                s.step_number,
                s.execution_id
            );
        }
    }
}
