//! `caf validate`, `caf import`, `caf export`: moving checkpoint files in and out.

use super::{checkpoint_id, open_existing};
use crate::cli::ExportArgs;
use crate::output::{self, GREEN, RED};
use crate::target::Target;
use crate::{error_lines, CmdResult, Failure};
use caf_core::format::Limits;
use caf_core::store::read_checkpoint_file;
use caf_core::transfer;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

/// Checks files; exit 1 unless every one is valid. On the terminal: one line per file, in
/// order (`ok` or `invalid`), each invalid file's errors right after its line (on stderr), and
/// the summary last.
pub fn validate(json: bool, paths: &[PathBuf]) -> CmdResult {
    let files = transfer::expand(paths)?;
    let mut report = Vec::new();
    let mut problems = Vec::new();
    let mut invalid = 0;
    for f in &files {
        let path = f.display().to_string();
        match read_checkpoint_file(f, &Limits::default()) {
            Ok(d) => {
                if !json {
                    let mut o = anstream::stdout();
                    let _ = writeln!(o, "{GREEN}ok{GREEN:#}       {path}  {}", d.source_version);
                }
                report.push(json!({
                    "path": path, "valid": true,
                    "version": d.source_version, "id": d.checkpoint.id,
                }));
            }
            Err(e) => {
                invalid += 1;
                let lines = error_lines(&e);
                if json {
                    problems.extend(lines.iter().cloned());
                } else {
                    let mut o = anstream::stdout();
                    let _ = writeln!(o, "{RED}invalid{RED:#}  {path}");
                    let _ = o.flush();
                    for l in &lines {
                        output::error_line(l);
                    }
                }
                report.push(json!({"path": path, "valid": false, "errors": lines}));
            }
        }
    }
    if json {
        output::print_json(&report);
        for l in &problems {
            output::error_line(l);
        }
    } else {
        crate::say!("{} valid, {invalid} invalid", files.len() - invalid);
    }
    if invalid == 0 {
        Ok(())
    } else {
        // Every error line is printed already.
        Err(Failure::Failed(Vec::new()))
    }
}

/// Validates every file first; only if all are valid, saves them into the store.
pub fn import(t: &Target, json: bool, paths: &[PathBuf]) -> CmdResult {
    // The files are checked before the store is opened (or created).
    let batch =
        transfer::prepare_import(paths, &Limits::default()).map_err(|e| import_failure(t, e))?;
    let store = t.open_or_create()?;
    let imported = batch.save_into(&*store).map_err(|e| import_failure(t, e))?;
    if json {
        let saved: Vec<_> = imported.iter().map(|i| &i.summary).collect();
        output::print_json(&saved);
    } else {
        let mut o = anstream::stdout();
        for i in &imported {
            let note = if i.source_version != caf_core::CURRENT_VERSION {
                format!(" (migrated from {})", i.source_version)
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "{GREEN}imported{GREEN:#} {} from {}{note}",
                i.summary.id,
                i.path.display()
            );
        }
        crate::say!(
            "{} imported into {}",
            output::count_of(imported.len(), "checkpoint"),
            t.describe()
        );
    }
    Ok(())
}

/// The lines that report a failed import.
fn import_failure(t: &Target, e: transfer::ImportError) -> Failure {
    use transfer::{Conflict, ImportError};
    match e {
        ImportError::Invalid { failures, total } => {
            let lines: Vec<String> = failures.iter().flat_map(error_lines).collect();
            let bad = failures.len();
            let outcome = format!(
                "nothing imported: {bad} of {} {} invalid",
                output::count_of(total, "file"),
                if bad == 1 { "is" } else { "are" }
            );
            Failure::with_outcome(lines, outcome)
        }
        ImportError::Conflicts { conflicts } => {
            let lines: Vec<String> = conflicts
                .iter()
                .map(|c| match c {
                    Conflict::InStore { path, id } => format!(
                        "{}: checkpoint {id} is already in {} with different content (delete it first)",
                        path.display(),
                        t.describe()
                    ),
                    other => other.to_string(),
                })
                .collect();
            Failure::with_outcome(lines, "nothing imported")
        }
        ImportError::Store(e) => e.into(),
    }
}

/// Writes a checkpoint to a file (atomically) or to stdout. With `-o` and `--json`, stdout gets
/// what was written: `{"id", "path", "bytes"}` (without `-o` the document itself is the JSON).
pub fn export(t: &Target, json: bool, a: &ExportArgs) -> CmdResult {
    let id = checkpoint_id(&a.id)?;
    // The directory's redaction rules: a checkpoint saved before redaction (or with it off)
    // leaves with its secrets replaced.
    let rules = t.redaction_rules().map_err(Failure::msg)?;
    let store = open_existing(t)?;
    match &a.output {
        Some(path) => {
            let done = transfer::export_with(&**store, &id, path, &rules)?;
            if json {
                output::print_json(&json!({
                    "id": id, "path": path.display().to_string(), "bytes": done.bytes,
                    "redacted": done.redacted,
                }));
            } else {
                eprintln!(
                    "exported {id} to {} ({}){}",
                    path.display(),
                    output::bytes(done.bytes),
                    redacted_note(done.redacted)
                );
            }
        }
        None => {
            let (bytes, redacted) = transfer::export_bytes(&**store, &id, &rules)?;
            output::note_stdout(std::io::stdout().lock().write_all(&bytes));
            if redacted > 0 {
                output::warn_line(&format!("{id}: {}", redacted_phrase(redacted)));
            }
        }
    }
    Ok(())
}

/// `; N secrets redacted on the way out` for an export whose redaction replaced something.
fn redacted_note(n: u64) -> String {
    match n {
        0 => String::new(),
        n => format!("; {}", redacted_phrase(n)),
    }
}

fn redacted_phrase(n: u64) -> String {
    match n {
        1 => "1 secret redacted on the way out".into(),
        n => format!("{n} secrets redacted on the way out"),
    }
}
