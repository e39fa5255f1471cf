//! `caf inspect`: the seed-004 view of one checkpoint.

use super::{checkpoint_id, open_existing};
use crate::cli::InspectArgs;
use crate::output::{self, BOLD, CYAN, DIM, GREEN, RED, YELLOW};
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::format::{encode, Checkpoint, Limits, ToolStatus};
use caf_core::inspect::{load_stored, Inspection, Stored};
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
    let (c, stored) = load_shown(t, target)?;
    Ok((c, stored.bytes, stored.read_as))
}

/// Loads a checkpoint named by id or by file path, with how it is stored. By id, a damaged file
/// is reported once (as the error, or, when the store's database holds an intact copy that is
/// shown instead, as a warning that says so).
pub fn load_shown(t: &Target, target: &str) -> Result<(Checkpoint, Stored), Failure> {
    if is_path(target) {
        let path = Path::new(target);
        let d = read_checkpoint_file(path, &Limits::default())?;
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        return Ok((d.checkpoint, Stored::new(d.source_version, size, false)));
    }
    let id = checkpoint_id(target)?;
    let store = if t.no_files {
        open_existing(t)?
    } else {
        t.open_existing_except(&t.dir().join(format!("{id}.json")))?
    };
    let loaded = load_stored(&**store, store.files(), &id, |files, e| {
        let (copy, db) = database_copy(t, files, &id)?;
        output::warn_line(&format!(
            "{e}; showing the database's intact copy instead ({db})"
        ));
        Some((copy.checkpoint, copy.bytes.len() as u64))
    })?;
    Ok(loaded)
}

/// The database's intact copy of a checkpoint whose file is damaged, when the store has a
/// database (the directory's own, or --db), and the database, for messages. The database is
/// only opened here, for a damaged file.
fn database_copy(
    t: &Target,
    files: &caf_core::FileStore,
    id: &caf_core::CheckpointId,
) -> Option<(caf_sql::DatabaseCopy, String)> {
    t.db_url(false)?;
    let db = t.database(false).ok()?;
    let copy = db.copy_of_damaged_file(&files.path_of(id), id).ok()??;
    Some((copy, crate::target::redact(&db.location())))
}

/// The checkpoints of the store whose parent is `c` — when `target` is an id, or a file inside
/// the store's directory; `None` otherwise (a file elsewhere: its store is not known, and
/// opening an arbitrary directory as a store would write an index into it).
fn children(t: &Target, target: &str, c: &Checkpoint) -> Option<Vec<caf_core::CheckpointId>> {
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
    Some(caf_core::inspect::children(&**store, c).unwrap_or_default())
}

/// Shows a checkpoint: `--json` prints the document itself (in the current format).
pub fn run(t: &Target, json: bool, a: &InspectArgs) -> CmdResult {
    let (c, stored) = load_shown(t, &a.target)?;
    if json {
        let bytes = encode(&c).map_err(|e| Failure::msg(format!("{}: {e}", c.id)))?;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&bytes);
        return Ok(());
    }
    let kids = children(t, &a.target, &c);
    print_view(&Inspection::of(&c, stored, a.last, kids));
    Ok(())
}

/// What the Format line says of the checksum.
fn integrity_note(s: &Stored) -> String {
    if s.from_database {
        "integrity ok (the database's copy)".into()
    } else if s.integrity_checked {
        "integrity ok".into()
    } else {
        format!("no integrity (format {})", s.read_as)
    }
}

fn print_view(v: &Inspection) {
    let mut o = anstream::stdout();
    let p = &v.progress;
    let _ = writeln!(o, "{BOLD}Checkpoint{BOLD:#} {CYAN}{}{CYAN:#}", v.id);
    let field = |o: &mut anstream::AutoStream<std::io::Stdout>, k: &str, v: String| {
        let _ = writeln!(o, "  {DIM}{k:<10}{DIM:#}  {v}");
    };
    field(
        &mut o,
        "Created",
        format!(
            "{} UTC ({})",
            output::short_time(v.created),
            output::age(v.created)
        ),
    );
    field(&mut o, "Execution", v.execution_id.to_string());
    let agent = match &v.agent_name {
        Some(n) => format!("{} ({n})", v.agent_id),
        None => v.agent_id.clone(),
    };
    field(&mut o, "Agent", agent);
    field(&mut o, "Reason", v.reason.to_string());
    if let Some(n) = &v.name {
        field(&mut o, "Name", n.clone());
    }
    if let Some(d) = &v.description {
        field(&mut o, "About", output::clip(d, 100));
    }
    if !v.labels.is_empty() {
        field(&mut o, "Labels", v.labels.join(", "));
    }
    let parent = v
        .parent_id
        .as_ref()
        .map_or("none (first checkpoint)".to_string(), |p| p.to_string());
    let branch = v.branch.as_ref().map_or(String::new(), |reason| {
        format!(
            "  {YELLOW}branch{YELLOW:#}{}",
            reason.as_ref().map_or(String::new(), |r| format!(": {r}"))
        )
    });
    field(&mut o, "Parent", format!("{parent}{branch}"));
    match v.children.as_deref() {
        Some([]) => field(&mut o, "Children", "none (latest)".to_string()),
        Some(many) => field(
            &mut o,
            "Children",
            many.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        None => {}
    }
    let total = match (p.total_steps, p.percent) {
        (Some(t), Some(pct)) => format!("/{t} ({pct}%)"),
        _ => String::new(),
    };
    let remaining = if p.remaining_steps.is_empty() {
        "nothing remains".to_string()
    } else {
        format!(
            "{} remaining: {}",
            p.remaining_steps.len(),
            output::clip(&p.remaining_steps.join(", "), 80)
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
            output::count(v.tokens_used, "token"),
            output::duration_ms(v.duration_ms)
        ),
    );
    let n = &v.counts;
    field(
        &mut o,
        "Counts",
        format!(
            "{}, {} ({} failed), {}, {}",
            output::count_of(n.thoughts, "thought"),
            output::count_of(n.tool_calls, "tool call"),
            n.failed_tool_calls,
            output::count_of(n.variables, "variable"),
            output::count_of(n.messages, "message")
        ),
    );
    let migrated = if v.stored.read_as == caf_core::CURRENT_VERSION {
        String::new()
    } else {
        format!(" (read as {}, migrated in memory)", v.stored.read_as)
    };
    field(
        &mut o,
        "Format",
        format!(
            "{}{migrated}, {}, {}",
            v.stored.version,
            output::bytes(v.stored.bytes),
            integrity_note(&v.stored)
        ),
    );

    if !v.last_thoughts.is_empty() {
        let _ = writeln!(
            o,
            "\n{BOLD}Last thoughts{BOLD:#} {DIM}({} of {}){DIM:#}",
            v.last_thoughts.len(),
            n.thoughts
        );
        for t in &v.last_thoughts {
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
    if !v.last_tool_calls.is_empty() {
        let _ = writeln!(
            o,
            "\n{BOLD}Last tool calls{BOLD:#} {DIM}({} of {}){DIM:#}",
            v.last_tool_calls.len(),
            n.tool_calls
        );
        for t in &v.last_tool_calls {
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
    if !v.variables.is_empty() {
        let _ = writeln!(o, "\n{BOLD}Variables{BOLD:#}");
        for (k, val) in &v.variables {
            let _ = writeln!(o, "  {k} = {}", output::clip(&val.to_string(), 90));
        }
    }
}
