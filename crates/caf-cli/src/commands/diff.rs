//! `caf diff`: what changed between two checkpoints.
//!
//! `caf diff A B` (ids or file paths), `caf diff ID` (against its parent), `caf diff --execution
//! E` (its last two checkpoints). The human view is a header `A → B` and sections of `+` (added),
//! `-` (removed) and `~` (changed) lines; `--json` prints the [`CheckpointDiff`].

use super::inspect::{is_path, load_target};
use super::{execution_id, open_existing};
use crate::cli::DiffArgs;
use crate::output::{self, BOLD, CYAN, DIM, GREEN, RED, YELLOW};
use crate::target::Target;
use crate::{CmdResult, Failure};
use anstyle::Style;
use caf_core::diff::{parent_of, Change, Counter, Op, ParentError};
use caf_core::format::Checkpoint;
use caf_core::store::read_checkpoint_file;
use caf_core::{CheckpointDiff, Limits, ListFilter};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// Width at which values are clipped on one line.
const CLIP: usize = 90;

/// Diffs the checkpoints the arguments name and prints the result.
pub fn run(dir: &Target, json: bool, a: &DiffArgs) -> CmdResult {
    let (old, new) = match (&a.execution, a.targets.as_slice()) {
        (Some(e), _) => last_two(dir, e)?,
        (None, [one]) => with_parent(dir, one)?,
        (None, [x, y]) => (load_target(dir, x)?.0, load_target(dir, y)?.0),
        (None, _) => {
            return Err(Failure::Usage(
                "caf diff takes one or two checkpoints, or --execution".into(),
            ))
        }
    };
    let d = caf_core::diff(&old, &new);
    if json {
        output::print_json(&d);
    } else {
        print_human(&d);
    }
    Ok(())
}

/// The last two checkpoints of an execution, older first (by the listing order).
fn last_two(dir: &Target, execution: &str) -> Result<(Checkpoint, Checkpoint), Failure> {
    let e = execution_id(execution)?;
    let store = open_existing(dir)?;
    let mut filter = ListFilter::execution(&e);
    filter.limit = Some(2);
    let found = store.list(&filter)?;
    match found.as_slice() {
        [newest, previous] => Ok((store.load(&previous.id)?, store.load(&newest.id)?)),
        _ => Err(Failure::msg(format!(
            "execution {e} has {} in {}; a diff needs two",
            output::count_of(found.len(), "checkpoint"),
            dir.describe()
        ))),
    }
}

/// A checkpoint and its parent, parent first. The parent of a checkpoint given as a file path
/// is looked for next to that file first, then in the store.
fn with_parent(dir: &Target, target: &str) -> Result<(Checkpoint, Checkpoint), Failure> {
    let (c, _, _) = load_target(dir, target)?;
    let Some(parent) = c.parent_id.clone() else {
        return Err(Failure::msg(format!(
            "{}; name two checkpoints: caf diff A B",
            ParentError::Root(c.id.clone())
        )));
    };
    if is_path(target) {
        let sibling = Path::new(target)
            .parent()
            .unwrap_or(Path::new("."))
            .join(format!("{parent}.json"));
        if sibling.is_file() {
            let d = read_checkpoint_file(&sibling, &Limits::default())?;
            return Ok((d.checkpoint, c));
        }
    }
    let store = open_existing(dir)?;
    match parent_of(&**store, &c) {
        Ok(p) => Ok((p, c)),
        Err(ParentError::Store(e)) => Err(e.into()),
        Err(_) => Err(Failure::msg(format!(
            "{}: its parent {parent} is not in {}",
            c.id,
            dir.describe()
        ))),
    }
}

type Out = anstream::AutoStream<std::io::Stdout>;

fn print_human(d: &CheckpointDiff) {
    let mut o = anstream::stdout();
    let _ = writeln!(
        o,
        "{BOLD}{CYAN}{}{CYAN:#}{BOLD:#} → {BOLD}{CYAN}{}{CYAN:#}{BOLD:#}",
        d.from, d.to
    );
    if d.is_empty() {
        let _ = writeln!(o, "no differences");
        return;
    }
    thoughts(&mut o, d);
    tool_calls(&mut o, d);
    if !d.context_changes.is_empty() {
        section(&mut o, "Context", Some(d.context_changes.len()));
        for c in &d.context_changes {
            change(&mut o, "  ", "", c);
        }
    }
    progress(&mut o, d);
    metadata(&mut o, d);
}

/// A section title, with the number of entries when it is a list.
fn section(o: &mut Out, title: &str, n: Option<usize>) {
    match n {
        Some(n) => {
            let _ = writeln!(o, "\n{BOLD}{title}{BOLD:#} {DIM}({n}){DIM:#}");
        }
        None => {
            let _ = writeln!(o, "\n{BOLD}{title}{BOLD:#}");
        }
    }
}

/// The mark and colour of an operation.
fn mark(op: Op) -> (&'static str, Style) {
    match op {
        Op::Added => ("+", GREEN),
        Op::Removed => ("-", RED),
        Op::Changed => ("~", YELLOW),
    }
}

/// A JSON value on one line, clipped.
fn value(v: &Value) -> String {
    output::clip(&v.to_string(), CLIP)
}

/// One change: `~ {label}{path}: old → new`, or its unified diff for long text.
fn change(o: &mut Out, indent: &str, label: &str, c: &Change) {
    let (m, style) = mark(c.op);
    let path = if c.path.is_empty() && label.is_empty() {
        "/"
    } else {
        &c.path
    };
    let head = format!("{indent}{style}{m}{style:#} {label}{BOLD}{path}{BOLD:#}");
    if let Some(text) = &c.text_diff {
        let _ = writeln!(o, "{head}");
        unified(o, &format!("{indent}    "), text);
        return;
    }
    let body = match (&c.old, &c.new) {
        (Some(a), Some(b)) => format!("{RED}{}{RED:#} → {GREEN}{}{GREEN:#}", value(a), value(b)),
        (None, Some(b)) => format!("{GREEN}{}{GREEN:#}", value(b)),
        (Some(a), None) => format!("{RED}{}{RED:#}", value(a)),
        (None, None) => String::new(),
    };
    let _ = writeln!(o, "{head}: {body}");
}

/// A unified diff, coloured line by line.
fn unified(o: &mut Out, indent: &str, text: &str) {
    for line in text.lines() {
        let style = if line.starts_with("+++") || line.starts_with("---") {
            DIM
        } else if line.starts_with("@@") {
            CYAN
        } else if line.starts_with('+') {
            GREEN
        } else if line.starts_with('-') {
            RED
        } else {
            Style::new()
        };
        let _ = writeln!(o, "{indent}{style}{line}{style:#}");
    }
}

fn thoughts(o: &mut Out, d: &CheckpointDiff) {
    let n = d.thoughts_added.len() + d.thoughts_removed.len() + d.thoughts_changed.len();
    if n == 0 {
        return;
    }
    section(o, "Thoughts", Some(n));
    for (op, list) in [
        (Op::Added, &d.thoughts_added),
        (Op::Removed, &d.thoughts_removed),
    ] {
        let (m, style) = mark(op);
        for t in list {
            let conf = t.confidence.map_or(String::new(), |c| format!(" {c:.2}"));
            let _ = writeln!(
                o,
                "  {style}{m}{style:#} {CYAN}{}{CYAN:#} {DIM}{}{conf}{DIM:#}  {}",
                t.id,
                t.kind,
                output::clip(&t.content, CLIP)
            );
        }
    }
    for t in &d.thoughts_changed {
        let _ = writeln!(o, "  {YELLOW}~{YELLOW:#} {CYAN}{}{CYAN:#}", t.id);
        for c in &t.changes {
            change(o, "    ", "", c);
        }
    }
}

fn tool_calls(o: &mut Out, d: &CheckpointDiff) {
    let n = d.tool_calls_added.len() + d.tool_calls_completed.len() + d.tool_calls_changed.len();
    if n == 0 {
        return;
    }
    section(o, "Tool calls", Some(n));
    for t in &d.tool_calls_added {
        let outcome = match (&t.error, &t.result) {
            (Some(e), _) => format!("  {RED}{}{RED:#}", output::clip(e, CLIP)),
            (None, Some(r)) => format!("  {DIM}→{DIM:#} {}", value(r)),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            o,
            "  {GREEN}+{GREEN:#} {CYAN}{}{CYAN:#} {} {DIM}{}{DIM:#}  {}{outcome}",
            t.id,
            t.tool_id,
            t.status.as_str(),
            output::clip(&t.args.to_string(), CLIP / 2)
        );
    }
    for t in &d.tool_calls_completed {
        let outcome = match (&t.error, &t.result) {
            (Some(e), _) => format!("{RED}{}{RED:#}", output::clip(e, CLIP)),
            (None, Some(r)) => value(r),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            o,
            "  {YELLOW}~{YELLOW:#} {CYAN}{}{CYAN:#} {} {}{DIM} → {DIM:#}{GREEN}{}{GREEN:#}  {outcome}",
            t.id,
            t.tool_id,
            t.status.from.as_str(),
            t.status.to.as_str(),
        );
    }
    for t in &d.tool_calls_changed {
        let (m, style) = mark(t.op);
        let _ = writeln!(
            o,
            "  {style}{m}{style:#} {CYAN}{}{CYAN:#} {}",
            t.id, t.tool_id
        );
        if t.op == Op::Changed {
            for c in &t.changes {
                change(o, "    ", "", c);
            }
        }
    }
}

/// `~ {name} from → to (+delta)`, if the counter moved.
fn counter(o: &mut Out, name: &str, c: Counter, show: impl Fn(u64) -> String) {
    if c.changed() {
        let sign = if c.delta < 0 { "-" } else { "+" };
        let _ = writeln!(
            o,
            "  {YELLOW}~{YELLOW:#} {name} {} → {} {DIM}({sign}{}){DIM:#}",
            show(c.from),
            show(c.to),
            show(c.delta.unsigned_abs())
        );
    }
}

fn progress(o: &mut Out, d: &CheckpointDiff) {
    let p = &d.progress;
    if p.is_empty() {
        return;
    }
    section(o, "Progress", None);
    counter(o, "step", p.step_number, |n| n.to_string());
    if p.total_steps.changed() {
        let show = |t: Option<u64>| t.map_or("unknown".to_string(), |t| t.to_string());
        let _ = writeln!(
            o,
            "  {YELLOW}~{YELLOW:#} total steps {} → {}",
            show(p.total_steps.from),
            show(p.total_steps.to)
        );
    }
    counter(o, "iterations", p.iterations_completed, |n| n.to_string());
    for s in &p.steps_completed {
        let _ = writeln!(o, "  {GREEN}+{GREEN:#} completed {BOLD}{}{BOLD:#}", s.name);
    }
    for s in &p.steps_reverted {
        let _ = writeln!(o, "  {RED}-{RED:#} completed {BOLD}{}{BOLD:#}", s.name);
    }
    if let Some(pending) = &p.pending_steps {
        for s in &pending.added {
            let _ = writeln!(o, "  {GREEN}+{GREEN:#} pending {s}");
        }
        // A pending step that is now completed is shown once, as completed.
        let done = |s: &String| p.steps_completed.iter().any(|c| &c.name == s);
        for s in pending.removed.iter().filter(|s| !done(s)) {
            let _ = writeln!(o, "  {RED}-{RED:#} pending {s}");
        }
        if pending.added.is_empty() && pending.removed.is_empty() {
            let _ = writeln!(
                o,
                "  {YELLOW}~{YELLOW:#} pending reordered: {}",
                output::clip(&pending.to.join(", "), CLIP)
            );
        }
    }
}

fn metadata(o: &mut Out, d: &CheckpointDiff) {
    let m = &d.metadata;
    if m.is_empty() {
        return;
    }
    section(o, "Metadata", None);
    counter(o, "tokens", m.tokens_used, |n| n.to_string());
    counter(o, "duration", m.duration_ms, output::duration_ms);
    if m.reason.changed() {
        let _ = writeln!(
            o,
            "  {YELLOW}~{YELLOW:#} reason {} → {}",
            m.reason.from, m.reason.to
        );
    }
    // The parent of `to` being `from` is what a diff of consecutive checkpoints expects: it
    // stays in the JSON but is not worth a line here.
    let from = Value::String(d.from.to_string());
    for c in m.changes.iter() {
        if c.path == "/parent_id" && c.new.as_ref() == Some(&from) {
            continue;
        }
        change(o, "  ", "", c);
    }
}
