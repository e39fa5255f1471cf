//! `caf list`.

use super::{checkpoint_id, execution_id, open_existing};
use crate::cli::ListArgs;
use crate::output::{self, Table, CYAN, DIM};
use crate::target::Target;
use crate::{CmdResult, Failure};
use anstyle::Style;
use caf_core::store::list_page;
use caf_core::{CheckpointReason, CheckpointSummary, ListFilter};

/// Lists checkpoints newest first, as a table or a JSON array of summaries.
pub fn run(t: &Target, json: bool, a: &ListArgs) -> CmdResult {
    let store = open_existing(t)?;
    let filter = ListFilter {
        execution_id: a.execution.as_deref().map(execution_id).transpose()?,
        agent_id: a.agent.clone(),
        reason: a
            .reason
            .as_deref()
            .map(|r| {
                r.parse::<CheckpointReason>()
                    .map_err(|e| Failure::Usage(format!("--reason {r:?}: {e}")))
            })
            .transpose()?,
        label: a.label.clone(),
        before: a.before.as_deref().map(checkpoint_id).transpose()?,
        limit: a.limit,
        ..ListFilter::default()
    };
    let items = match list_page(&**store, &filter) {
        Err(caf_core::Error::NotFound { id, .. }) => {
            return Err(Failure::msg(format!(
                "checkpoint {id} not found in {} (--before)",
                t.describe()
            )))
        }
        r => r?,
    };
    if json {
        output::print_json(&items);
        return Ok(());
    }
    if items.is_empty() {
        let given = filters_given(a);
        let all = if given.is_empty() {
            0
        } else {
            store.list(&ListFilter::default())?.len()
        };
        if all == 0 {
            crate::say!("no checkpoints in {}", t.describe());
        } else {
            crate::say!(
                "no checkpoint matches {} ({} holds {})",
                given.join(" "),
                t.describe(),
                output::count_of(all, "checkpoint")
            );
        }
        return Ok(());
    }
    print_table(&items, width());
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

/// The filter options given, as typed (`--reason error`), for messages.
fn filters_given(a: &ListArgs) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |flag: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push(format!("{flag} {v}"));
        }
    };
    add("--execution", a.execution.clone());
    add("--agent", a.agent.clone());
    add("--reason", a.reason.clone());
    add("--label", a.label.clone());
    add("--before", a.before.clone());
    add("--limit", a.limit.map(|n| n.to_string()));
    out
}

/// The width to fit the table into: `COLUMNS` when set, else the terminal's when stdout is one;
/// `None` (no limit) when printing into a pipe or a file.
fn width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return Some(n);
    }
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
}

/// How the TIME column reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Time {
    /// `2026-01-05 10:00:02 (3h ago)`.
    DateAndAge,
    /// `2026-01-05 10:00:02`.
    Date,
    /// `3h ago`.
    Age,
}

/// How the EXECUTION column reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Execution {
    /// The whole id.
    Full,
    /// The shortest prefix that tells the listed executions apart, then `…`.
    Prefix,
    /// Left out.
    Hidden,
}

/// One way to lay the table out.
#[derive(Debug, Clone, Copy)]
struct Layout {
    time: Time,
    execution: Execution,
    size: bool,
}

/// The layouts, widest first: the first that fits the terminal is used. Checkpoint ids are
/// always shown whole, since other commands take them.
const LAYOUTS: [Layout; 5] = [
    Layout {
        time: Time::DateAndAge,
        execution: Execution::Full,
        size: true,
    },
    Layout {
        time: Time::Date,
        execution: Execution::Full,
        size: true,
    },
    Layout {
        time: Time::Date,
        execution: Execution::Prefix,
        size: true,
    },
    Layout {
        time: Time::Age,
        execution: Execution::Prefix,
        size: false,
    },
    Layout {
        time: Time::Age,
        execution: Execution::Hidden,
        size: false,
    },
];

/// A column: its header, cells and style.
struct Column {
    header: &'static str,
    cells: Vec<String>,
    style: Style,
}

impl Column {
    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.chars().count())
            .chain([self.header.len()])
            .max()
            .unwrap_or(0)
    }
}

/// The width of a table of `columns` (two spaces between columns).
fn table_width(columns: &[Column]) -> usize {
    columns.iter().map(Column::width).sum::<usize>() + 2 * columns.len().saturating_sub(1)
}

/// The shortest prefix length (at least `min`) that tells the distinct `ids` apart.
fn unique_prefix_len(ids: &[&str], min: usize) -> usize {
    let mut sorted: Vec<&str> = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut len = min;
    for pair in sorted.windows(2) {
        let common = pair[0]
            .chars()
            .zip(pair[1].chars())
            .take_while(|(x, y)| x == y)
            .count();
        len = len.max(common + 1);
    }
    len
}

/// `id` cut to `len` characters, with `…` when something was cut.
fn prefix(id: &str, len: usize) -> String {
    if id.chars().count() <= len {
        id.to_string()
    } else {
        let mut s: String = id.chars().take(len).collect();
        s.push('…');
        s
    }
}

fn name_of(s: &CheckpointSummary) -> String {
    match (&s.name, s.labels.is_empty()) {
        (Some(n), _) => n.clone(),
        (None, false) => format!("[{}]", s.labels.join(", ")),
        (None, true) => String::new(),
    }
}

fn columns(items: &[CheckpointSummary], layout: Layout) -> Vec<Column> {
    let plain = Style::new();
    let column = |header, style, cell: &dyn Fn(&CheckpointSummary) -> String| Column {
        header,
        cells: items.iter().map(cell).collect(),
        style,
    };
    let mut out = vec![column("ID", CYAN, &|s| s.id.to_string())];
    let executions: Vec<&str> = items.iter().map(|s| s.execution_id.as_str()).collect();
    // `exec_` and 8 more characters at least: the first 8 hex digits of a UUIDv7 are its time.
    let len = unique_prefix_len(&executions, 13);
    match layout.execution {
        Execution::Full => out.push(column("EXECUTION", plain, &|s| s.execution_id.to_string())),
        Execution::Prefix => out.push(column("EXECUTION", plain, &|s| {
            prefix(s.execution_id.as_str(), len)
        })),
        Execution::Hidden => {}
    }
    out.push(column("STEP", plain, &|s| s.step_number.to_string()));
    out.push(column("REASON", plain, &|s| {
        s.checkpoint_reason.to_string()
    }));
    out.push(column("TIME", DIM, &|s| match layout.time {
        Time::DateAndAge => format!(
            "{} ({})",
            output::short_time(s.timestamp),
            output::age(s.timestamp)
        ),
        Time::Date => output::short_time(s.timestamp),
        Time::Age => output::age(s.timestamp),
    }));
    if layout.size {
        out.push(column("SIZE", plain, &|s| output::bytes(s.bytes)));
    }
    out.push(column("NAME", plain, &name_of));
    out
}

/// Prints the table in the widest layout that fits `width` (all of it when `None`); in the
/// narrowest one, names are clipped to fit.
fn print_table(items: &[CheckpointSummary], width: Option<usize>) {
    let mut chosen = columns(items, LAYOUTS[0]);
    if let Some(max) = width {
        for layout in LAYOUTS {
            chosen = columns(items, layout);
            if table_width(&chosen) <= max {
                break;
            }
        }
        let over = table_width(&chosen).saturating_sub(max);
        if over > 0 {
            if let Some(name) = chosen.last_mut() {
                let room = name.width().saturating_sub(over).max(8);
                for c in &mut name.cells {
                    *c = output::clip(c, room);
                }
            }
        }
    }
    let headers: Vec<&str> = chosen.iter().map(|c| c.header).collect();
    let mut table = Table::new(&headers);
    for i in 0..items.len() {
        table.row(
            chosen
                .iter()
                .map(|c| (c.cells[i].clone(), c.style))
                .collect(),
        );
    }
    table.print();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_prefixes() {
        let ids = [
            "exec_019b8d99-6900-75dc",
            "exec_019b8d99-6a00-75dc",
            "exec_019c",
        ];
        assert_eq!(unique_prefix_len(&ids, 5), 16);
        assert_eq!(unique_prefix_len(&["exec_a", "exec_a"], 5), 5);
        assert_eq!(prefix("exec_019b8d99-6900", 13), "exec_019b8d99…");
        assert_eq!(prefix("exec_1", 13), "exec_1");
    }
}
