//! `caf inspect`: the seed-004 view of one checkpoint.

use super::{checkpoint_id, open_existing};
use crate::cli::InspectArgs;
use crate::output::{self, BOLD, CYAN, DIM, GREEN, RED, YELLOW};
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::format::{encode, Checkpoint, Limits, ToolStatus};
use caf_core::store::read_checkpoint_file;
use std::io::Write;
use std::path::Path;

/// Whether a command-line target names a file rather than an id.
pub fn is_path(target: &str) -> bool {
    target.contains('/') || target.ends_with(".json") || Path::new(target).is_file()
}

/// Loads a checkpoint named by id (from the store) or by file path; returns it with its stored
/// size and the format version it was read in.
pub fn load_target(t: &Target, target: &str) -> Result<(Checkpoint, u64, String), Failure> {
    if is_path(target) {
        let path = Path::new(target);
        let d = read_checkpoint_file(path, &Limits::default())?;
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        Ok((d.checkpoint, size, d.source_version))
    } else {
        let id = checkpoint_id(target)?;
        let store = open_existing(t)?;
        let c = store.load(&id)?;
        let size = store.stored_size(&c);
        Ok((c, size, caf_core::CURRENT_VERSION.to_string()))
    }
}

/// The checkpoints of the store whose parent is `c` — when `target` is an id, or a file inside
/// the store's directory; `None` otherwise (a file elsewhere: its store is not known, and
/// opening an arbitrary directory as a store would write an index into it).
fn children(t: &Target, target: &str, c: &Checkpoint) -> Option<Vec<String>> {
    let dir = t.dir();
    let in_store = !is_path(target)
        || Path::new(target)
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .is_some_and(|p| dir.canonicalize().is_ok_and(|d| d == p));
    if !in_store || !(dir.is_dir() || t.no_files) {
        return None;
    }
    let store = t.open_existing().ok()?;
    let filter = caf_core::ListFilter::execution(&c.execution_id);
    let mut out: Vec<String> = store
        .list(&filter)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.parent_id.as_ref() == Some(&c.id))
        .map(|s| s.id.to_string())
        .collect();
    out.reverse(); // oldest first
    Some(out)
}

/// Shows a checkpoint: `--json` prints the document itself (in the current format).
pub fn run(t: &Target, json: bool, a: &InspectArgs) -> CmdResult {
    let (c, size, version) = load_target(t, &a.target)?;
    if json {
        let bytes = encode(&c).map_err(|e| Failure::msg(format!("{}: {e}", c.id)))?;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&bytes);
        return Ok(());
    }
    let kids = children(t, &a.target, &c);
    print_view(&c, size, &version, a.last, kids);
    Ok(())
}

fn print_view(
    c: &Checkpoint,
    size: u64,
    version: &str,
    last: usize,
    children: Option<Vec<String>>,
) {
    let mut o = anstream::stdout();
    let md = &c.metadata;
    let p = &c.snapshot.progress;
    let _ = writeln!(o, "{BOLD}Checkpoint{BOLD:#} {CYAN}{}{CYAN:#}", c.id);
    let field = |o: &mut anstream::AutoStream<std::io::Stdout>, k: &str, v: String| {
        let _ = writeln!(o, "  {DIM}{k:<10}{DIM:#}  {v}");
    };
    field(
        &mut o,
        "Created",
        format!(
            "{} UTC ({})",
            output::short_time(c.timestamp),
            output::age(c.timestamp)
        ),
    );
    field(&mut o, "Execution", c.execution_id.to_string());
    let agent = match &md.agent_name {
        Some(n) => format!("{} ({n})", c.agent_id),
        None => c.agent_id.clone(),
    };
    field(&mut o, "Agent", agent);
    field(&mut o, "Reason", md.checkpoint_reason.to_string());
    if let Some(n) = &md.name {
        field(&mut o, "Name", n.clone());
    }
    if let Some(d) = &md.description {
        field(&mut o, "About", output::clip(d, 100));
    }
    if !md.labels.is_empty() {
        field(&mut o, "Labels", md.labels.join(", "));
    }
    let parent = c
        .parent_id
        .as_ref()
        .map_or("none (first checkpoint)".to_string(), |p| p.to_string());
    let branch = md.branch.as_ref().map_or(String::new(), |b| {
        format!(
            "  {YELLOW}branch{YELLOW:#}{}",
            b.reason
                .as_ref()
                .map_or(String::new(), |r| format!(": {r}"))
        )
    });
    field(&mut o, "Parent", format!("{parent}{branch}"));
    match children.as_deref() {
        Some([]) => field(&mut o, "Children", "none (latest)".to_string()),
        Some(many) => field(&mut o, "Children", many.join(", ")),
        None => {}
    }
    let total = p.total_steps.map_or(String::new(), |t| {
        let pct = (p.step_number.min(t) * 100).checked_div(t).unwrap_or(100);
        format!("/{t} ({pct}%)")
    });
    let remaining = if p.pending_steps.is_empty() {
        "nothing remains".to_string()
    } else {
        format!(
            "{} remaining: {}",
            p.pending_steps.len(),
            output::clip(&p.pending_steps.join(", "), 80)
        )
    };
    field(
        &mut o,
        "Progress",
        format!("step {}{total}, {remaining}", p.step_number),
    );
    field(
        &mut o,
        "Cost",
        format!(
            "{}, {}",
            output::count(md.tokens_used, "token"),
            output::duration_ms(md.duration_ms)
        ),
    );
    let calls = &c.snapshot.tool_state.calls;
    let failed = calls
        .iter()
        .filter(|t| t.status == ToolStatus::Failed)
        .count();
    field(
        &mut o,
        "Counts",
        format!(
            "{}, {} ({failed} failed), {}, {}",
            output::count_of(c.thought_count(), "thought"),
            output::count_of(calls.len(), "tool call"),
            output::count_of(c.snapshot.context.variables.len(), "variable"),
            output::count_of(c.snapshot.context.messages.len(), "message")
        ),
    );
    let migrated = if version == caf_core::CURRENT_VERSION {
        String::new()
    } else {
        format!(" (read as {version}, migrated in memory)")
    };
    field(
        &mut o,
        "Format",
        format!(
            "{}{migrated}, {}, integrity ok",
            c.version,
            output::bytes(size)
        ),
    );

    let thoughts = &c.snapshot.thought_chain.thoughts;
    if !thoughts.is_empty() {
        let _ = writeln!(
            o,
            "\n{BOLD}Last thoughts{BOLD:#} {DIM}({} of {}){DIM:#}",
            last.min(thoughts.len()),
            thoughts.len()
        );
        for t in thoughts.iter().skip(thoughts.len().saturating_sub(last)) {
            let conf = t.confidence.map_or(String::new(), |c| format!(" {c:.2}"));
            let _ = writeln!(
                o,
                "  {CYAN}{}{CYAN:#} {DIM}{}{conf}{DIM:#}  {}",
                t.id,
                t.kind,
                output::clip(&t.content, 90)
            );
        }
    }
    if !calls.is_empty() {
        let _ = writeln!(
            o,
            "\n{BOLD}Last tool calls{BOLD:#} {DIM}({} of {}){DIM:#}",
            last.min(calls.len()),
            calls.len()
        );
        for t in calls.iter().skip(calls.len().saturating_sub(last)) {
            let (mark, style) = match t.status {
                ToolStatus::Completed => ("ok", GREEN),
                ToolStatus::Failed => ("failed", RED),
                other => (other.as_str(), YELLOW),
            };
            let dur = t
                .duration_ms
                .map_or(String::new(), |d| format!(" {}", output::duration_ms(d)));
            let detail = t
                .error
                .clone()
                .unwrap_or_else(|| output::clip(&t.args.to_string(), 60));
            let _ = writeln!(
                o,
                "  {CYAN}{}{CYAN:#} {} {style}{mark}{style:#}{DIM}{dur}{DIM:#}  {detail}",
                t.id, t.tool_id
            );
        }
    }
    let vars = &c.snapshot.context.variables;
    if !vars.is_empty() {
        let _ = writeln!(o, "\n{BOLD}Variables{BOLD:#}");
        for (k, v) in vars {
            let _ = writeln!(o, "  {k} = {}", output::clip(&v.to_string(), 90));
        }
    }
}
