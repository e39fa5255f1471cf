//! `caf validate`, `caf import`, `caf export`: moving checkpoint files in and out.

use super::{checkpoint_id, open_existing};
use crate::cli::ExportArgs;
use crate::output::{self, GREEN};
use crate::target::Target;
use crate::{error_lines, CmdResult, Failure};
use caf_core::format::{encode, Limits};
use caf_core::store::read_checkpoint_file;
use caf_core::transfer;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

/// Checks files; exit 1 unless every one is valid.
pub fn validate(json: bool, paths: &[PathBuf]) -> CmdResult {
    let files = transfer::expand(paths)?;
    let mut report = Vec::new();
    let mut problems = Vec::new();
    for f in &files {
        match read_checkpoint_file(f, &Limits::default()) {
            Ok(d) => report.push(json!({
                "path": f.display().to_string(), "valid": true,
                "version": d.source_version, "id": d.checkpoint.id,
            })),
            Err(e) => {
                let lines = error_lines(&e);
                report.push(
                    json!({"path": f.display().to_string(), "valid": false, "errors": lines}),
                );
                problems.extend(lines);
            }
        }
    }
    let invalid = report.iter().filter(|r| r["valid"] == false).count();
    if json {
        output::print_json(&report);
    } else {
        for r in report.iter().filter(|r| r["valid"] == true) {
            let mut o = anstream::stdout();
            let _ = writeln!(
                o,
                "{GREEN}ok{GREEN:#}  {}  {}",
                r["path"].as_str().unwrap_or_default(),
                r["version"].as_str().unwrap_or_default()
            );
        }
        crate::say!("{} valid, {invalid} invalid", files.len() - invalid);
    }
    if invalid == 0 {
        Ok(())
    } else {
        Err(Failure::Failed(problems))
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
            "{} checkpoints imported into {}",
            imported.len(),
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
            let mut lines: Vec<String> = failures.iter().flat_map(error_lines).collect();
            lines.push(format!(
                "nothing imported: {} of {total} files are invalid",
                failures.len()
            ));
            Failure::Failed(lines)
        }
        ImportError::Conflicts { conflicts } => {
            let mut lines: Vec<String> = conflicts
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
            lines.push("nothing imported".into());
            Failure::Failed(lines)
        }
        ImportError::Store(e) => e.into(),
    }
}

/// Writes a checkpoint to a file (atomically) or to stdout.
pub fn export(t: &Target, a: &ExportArgs) -> CmdResult {
    let id = checkpoint_id(&a.id)?;
    let store = open_existing(t)?;
    match &a.output {
        Some(path) => {
            let size = transfer::export(&**store, &id, path)?;
            eprintln!(
                "exported {id} to {} ({})",
                path.display(),
                output::bytes(size)
            );
        }
        None => {
            let c = store.load(&id)?;
            let bytes = encode(&c).map_err(|e| Failure::msg(format!("{id}: {e}")))?;
            let _ = std::io::stdout().lock().write_all(&bytes);
        }
    }
    Ok(())
}
