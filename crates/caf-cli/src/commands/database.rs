//! The database commands: `caf sync`, `caf reindex`, `caf stats`, `caf query`, `caf sql`.

use super::execution_id;
use crate::cli::{QueryCommand, ReindexArgs, SqlArgs, StatsArgs, SyncArgs};
use crate::output::{self, Table, CYAN, DIM, GREEN, RED, YELLOW};
use crate::target::Target;
use crate::{CmdResult, Failure};
use anstyle::Style;
use caf_core::format::ToolStatus;
use caf_core::{CheckpointStore, FileStore};
use caf_sql::{SqlStore, Stats};
use std::io::Write;

fn sql_failure(db: &SqlStore, e: impl std::fmt::Display) -> Failure {
    Failure::msg(format!("{}: {e}", crate::target::redact(&db.location())))
}

/// The database the analytics commands read (`stats`, `query`, `sql`): the one given, else the
/// directory's own, which must exist. A directory that does not exist is said so (suggesting
/// `caf sync` there would only lead to another error).
fn analytics_db(t: &Target) -> Result<SqlStore, Failure> {
    if t.db.is_none() && !t.dir.is_dir() {
        return Err(Failure::msg(format!(
            "{}: no checkpoint directory here, so no database either (pass --dir DIR of a store, or --db URL)",
            t.dir.display()
        )));
    }
    t.database(false)
}

/// The files and the database of a hybrid target (the directory must exist).
fn both(t: &Target) -> Result<(FileStore, SqlStore), Failure> {
    if t.no_files {
        return Err(Failure::Usage(
            "this command reads checkpoint files: drop --no-files".into(),
        ));
    }
    if !t.dir.is_dir() {
        return Err(Failure::msg(format!(
            "{}: no checkpoint directory here",
            t.dir.display()
        )));
    }
    let files = FileStore::open(&t.dir)?;
    let db = t.database(true)?;
    Ok((files, db))
}

/// Warns, in one line, when the checkpoint files of the directory and the database disagree —
/// told cheaply, from the index's and the database's checksums: a damaged file that the
/// database still counts, a file the database lacks, different checksums, and (for the
/// directory's own database, not one given with --db that other directories may share) rows
/// with no file.
fn warn_if_files_disagree(t: &Target, db: &SqlStore) {
    if t.no_files || !t.dir.is_dir() {
        return;
    }
    let options = caf_core::store::FileStoreOptions {
        no_create: true,
        ..Default::default()
    };
    let Ok(files) = FileStore::open_with(&t.dir, options) else {
        return;
    };
    let Ok(d) = db.compare_with_files(&files) else {
        return;
    };
    let own_database = t.db.is_none();
    let n = d.count(own_database);
    if n == 0 {
        return;
    }
    let mut parts: Vec<String> = Vec::new();
    let mut part = |k: usize, one: &str, many: &str| match k {
        0 => {}
        1 => parts.push(format!("1 {one}")),
        k => parts.push(format!("{k} {many}")),
    };
    part(d.damaged_files.len(), "damaged file", "damaged files");
    part(
        d.only_in_files.len(),
        "missing from the database",
        "missing from the database",
    );
    part(
        d.different.len(),
        "with other content",
        "with other content",
    );
    if own_database {
        part(d.only_in_database.len(), "with no file", "with no file");
    }
    let noun = if n == 1 {
        "checkpoint differs"
    } else {
        "checkpoints differ"
    };
    output::warn_line(&format!(
        "{n} {noun} between the files in {} and the database ({}); run `caf verify`",
        t.dir.display(),
        parts.join(", ")
    ));
}

/// Warns about each skipped file.
fn report_problems(problems: &[caf_sql::FileProblem]) {
    for p in problems {
        output::warn_line(&format!("skipped unreadable file: {}", p.error));
    }
}

/// `, 3 skipped (unreadable)` for a summary line, or nothing.
fn skipped_note(skipped: u64) -> String {
    if skipped == 0 {
        String::new()
    } else {
        format!(", {skipped} skipped (unreadable)")
    }
}

/// Skipped files fail the command (exit 1) unless `allow` (`--allow-skipped`).
fn skipped_outcome(skipped: u64, allow: bool, done: &str) -> CmdResult {
    if skipped == 0 || allow {
        return Ok(());
    }
    Err(Failure::msg(format!(
        "{} skipped (see the warnings above); {done}; pass --allow-skipped to accept that",
        output::count(skipped, "unreadable file")
    )))
}

/// `caf sync`: brings files saved elsewhere into the database. Unreadable files are skipped
/// and reported; they fail the command unless `--allow-skipped`.
pub fn sync(t: &Target, json: bool, a: &SyncArgs) -> CmdResult {
    let (files, db) = both(t)?;
    let r = db.sync_from(&files).map_err(|e| sql_failure(&db, e))?;
    report_problems(&r.problems);
    if json {
        output::print_json(&r);
    } else {
        crate::say!(
            "synced {} into {}: {} added, {} replaced, {} unchanged{}{}",
            t.dir.display(),
            crate::target::redact(&db.location()),
            r.added,
            r.replaced,
            r.unchanged,
            skipped_note(r.skipped),
            if r.orphaned.is_empty() {
                String::new()
            } else {
                format!(", {} in the database with no file (kept)", r.orphaned.len())
            }
        );
    }
    skipped_outcome(r.skipped, a.allow_skipped, "the other files were synced")
}

/// `caf reindex`: rebuilds the database from the files. It refuses to drop checkpoints that
/// exist only in the database (a database shared with other directories, say) unless forced.
pub fn reindex(t: &Target, json: bool, a: &ReindexArgs) -> CmdResult {
    // A damaged own database goes to the quarantine, and a new one is built.
    if !t.no_files && t.dir.is_dir() {
        let set_aside =
            caf_sql::verify::set_aside_damaged_database(&t.location).map_err(|e| match e {
                caf_sql::verify::VerifyError::Open(e) => crate::target::open_failure(*e),
                e => Failure::msg(e),
            })?;
        if let Some(to) = set_aside {
            output::warn_line(&format!(
                "the database {} was damaged: moved to {}",
                t.default_db_path().display(),
                to.display()
            ));
        }
    }
    let (files, db) = both(t)?;
    if !a.force {
        let all = caf_core::ListFilter::default();
        let on_disk: std::collections::HashSet<_> =
            files.list(&all)?.into_iter().map(|s| s.id).collect();
        let only_in_db: Vec<_> = db
            .list(&all)?
            .into_iter()
            .filter(|s| !on_disk.contains(&s.id))
            .map(|s| s.id)
            .collect();
        if let Some(first) = only_in_db.first() {
            return Err(Failure::msg(format!(
                "{}: holds {} with no readable file in {} (e.g. {first}); reindexing would drop them — pass --force to rebuild anyway",
                crate::target::redact(&db.location()),
                output::count_of(only_in_db.len(), "checkpoint"),
                t.dir.display()
            )));
        }
    }
    let r = db.reindex_from(&files).map_err(|e| sql_failure(&db, e))?;
    report_problems(&r.problems);
    if json {
        output::print_json(&r);
    } else {
        crate::say!(
            "rebuilt {} from {}: {} of {}{}",
            crate::target::redact(&db.location()),
            t.dir.display(),
            output::count(r.checkpoints, "checkpoint"),
            output::count(r.executions, "execution"),
            skipped_note(r.skipped)
        );
    }
    skipped_outcome(
        r.skipped,
        a.allow_skipped,
        "the database was rebuilt from the other files",
    )
}

/// Prints statistics as tables.
pub fn print_stats(s: &Stats) {
    let plain = Style::new();
    let mut t = Table::new(&[
        "EXECUTION",
        "AGENT",
        "STATUS",
        "CKPTS",
        "THOUGHTS",
        "TOOL CALLS",
        "FAILED",
        "TOKENS",
        "DURATION",
    ]);
    for e in &s.executions {
        let status = match e.status.as_str() {
            "completed" => GREEN,
            "failed" => RED,
            "paused" => YELLOW,
            _ => plain,
        };
        t.row(vec![
            (e.execution_id.clone(), CYAN),
            (e.agent_id.clone(), plain),
            (e.status.to_string(), status),
            (e.checkpoints.to_string(), plain),
            (e.thoughts.to_string(), plain),
            (e.tool_calls.to_string(), plain),
            (e.failed_tool_calls.to_string(), plain),
            (e.tokens_used.to_string(), plain),
            (output::duration_ms(e.duration_ms), plain),
        ]);
    }
    t.print();
    let tot = &s.totals;
    let avg = &tot.averages;
    let by_tool: Vec<String> = tot
        .tool_calls_by_tool
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let mut o = anstream::stdout();
    let _ = writeln!(
        o,
        "\n{}, {}, {}, {} ({} failed), {}",
        output::count(tot.executions, "execution"),
        output::count(tot.checkpoints, "checkpoint"),
        output::count(tot.thoughts, "thought"),
        output::count(tot.tool_calls, "tool call"),
        tot.failed_tool_calls,
        output::count(tot.tokens_used, "token")
    );
    let _ = writeln!(
        o,
        "{DIM}per execution: {:.0} tokens, {:.1} checkpoints, {:.1} thoughts, {:.1} tool calls, {}{DIM:#}",
        avg.tokens_per_execution,
        avg.checkpoints_per_execution,
        avg.thoughts_per_execution,
        avg.tool_calls_per_execution,
        output::duration_ms(avg.duration_ms_per_execution as u64)
    );
    if !by_tool.is_empty() {
        let _ = writeln!(o, "{DIM}tool calls by tool: {}{DIM:#}", by_tool.join(", "));
    }
}

/// `caf stats`.
pub fn stats(t: &Target, json: bool, a: &StatsArgs) -> CmdResult {
    if a.metrics {
        return super::metrics::run(t, json);
    }
    let db = analytics_db(t)?;
    let exec = a.execution.as_deref().map(execution_id).transpose()?;
    let s = db.stats(exec.as_ref()).map_err(|e| sql_failure(&db, e))?;
    warn_if_files_disagree(t, &db);
    if let (Some(e), true) = (&exec, s.executions.is_empty()) {
        return Err(Failure::msg(format!(
            "execution {e} not found in the database"
        )));
    }
    if json {
        output::print_json(&s);
    } else {
        print_stats(&s);
    }
    Ok(())
}

/// `caf query tool-calls` / `caf query thoughts`.
pub fn query(t: &Target, json: bool, q: &QueryCommand) -> CmdResult {
    let db = analytics_db(t)?;
    let plain = Style::new();
    warn_if_files_disagree(t, &db);
    match q {
        QueryCommand::ToolCalls { tool, failed } => {
            let rows = db
                .query_tool_calls(tool.as_deref(), *failed)
                .map_err(|e| sql_failure(&db, e))?;
            if json {
                output::print_json(&rows);
                return Ok(());
            }
            let mut t = Table::new(&[
                "CALL",
                "TOOL",
                "STATUS",
                "EXECUTION",
                "FIRST CHECKPOINT",
                "CKPTS",
                "ARGS / ERROR",
            ]);
            for r in &rows {
                let c = &r.call;
                let status = match c.status {
                    ToolStatus::Completed => GREEN,
                    ToolStatus::Failed => RED,
                    _ => YELLOW,
                };
                let detail = c
                    .error
                    .clone()
                    .unwrap_or_else(|| output::clip(&c.args.to_string(), 50));
                t.row(vec![
                    (c.id.clone(), CYAN),
                    (c.tool_id.clone(), plain),
                    (c.status.as_str().to_string(), status),
                    (r.execution_id.clone(), plain),
                    (r.first_checkpoint_id.clone(), plain),
                    (r.checkpoints.to_string(), plain),
                    (detail, DIM),
                ]);
            }
            t.print();
            crate::say!("{}", output::count_of(rows.len(), "tool call"));
        }
        QueryCommand::Thoughts { contains } => {
            let rows = db
                .query_thoughts(contains)
                .map_err(|e| sql_failure(&db, e))?;
            if json {
                output::print_json(&rows);
                return Ok(());
            }
            let mut t = Table::new(&[
                "THOUGHT",
                "TYPE",
                "EXECUTION",
                "FIRST CHECKPOINT",
                "CONTENT",
            ]);
            for r in &rows {
                t.row(vec![
                    (r.thought.id.clone(), CYAN),
                    (r.thought.kind.clone(), plain),
                    (r.execution_id.clone(), plain),
                    (r.first_checkpoint_id.clone(), plain),
                    (output::clip(&r.thought.content, 60), plain),
                ]);
            }
            t.print();
            crate::say!("{}", output::count_of(rows.len(), "thought"));
        }
    }
    Ok(())
}

/// `caf sql`: a read-only statement; writes are refused by the database connection.
pub fn sql(t: &Target, json: bool, a: &SqlArgs) -> CmdResult {
    let db = analytics_db(t)?;
    let rows = db
        .read_only_sql(&a.statement)
        .map_err(|e| sql_failure(&db, e))?;
    warn_if_files_disagree(t, &db);
    if json {
        output::print_json(&rows);
        return Ok(());
    }
    let header: Vec<&str> = rows.columns.iter().map(String::as_str).collect();
    let mut table = Table::new(&header);
    for r in &rows.rows {
        table.row(
            r.iter()
                .map(|v| {
                    let text = match v {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (output::clip(&text, 80), Style::new())
                })
                .collect(),
        );
    }
    table.print();
    crate::say!("{}", output::count_of(rows.rows.len(), "row"));
    Ok(())
}
