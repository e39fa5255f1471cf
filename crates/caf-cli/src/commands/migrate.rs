//! `caf migrate`: rewrite checkpoint files in the current format, atomically, file by file.

use crate::cli::MigrateArgs;
use crate::output::{self, GREEN, RED};
use crate::{error_lines, CmdResult, Failure};
use caf_core::format::Limits;
use caf_core::transfer::{migrate_files, MigrateOptions, MigrateReport};
use caf_core::CURRENT_VERSION;
use serde_json::json;
use std::io::Write;

/// Files at or above this count get a progress bar (on a terminal).
const PROGRESS_FROM: usize = 20;

/// Migrates every file given (directories recursively) to the current format.
pub fn run(json: bool, a: &MigrateArgs) -> CmdResult {
    if let Some(to) = &a.to {
        if to != CURRENT_VERSION {
            return Err(Failure::Usage(format!(
                "--to {to}: caf migrates only forward, to the current format version {CURRENT_VERSION}"
            )));
        }
    }
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut progress = |done: usize, total: usize| {
        if total < PROGRESS_FROM || json {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        bar.set_position(done as u64);
    };
    let options = MigrateOptions {
        dry_run: a.dry_run,
        backup: a.backup,
    };
    let report = migrate_files(&a.paths, options, &Limits::default(), &mut progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let MigrateReport {
        migrated,
        already_current: current,
        parents_inferred: inferred,
        failed,
    } = report;
    let failed: Vec<(std::path::PathBuf, Vec<String>)> = failed
        .into_iter()
        .map(|(p, e)| (p, error_lines(&e)))
        .collect();

    let verb = if a.dry_run {
        "would migrate"
    } else {
        "migrated"
    };
    if json {
        output::print_json(&json!({
            "dry_run": a.dry_run,
            "to": CURRENT_VERSION,
            "migrated": migrated.iter().map(|(p, v)| json!({"path": p.display().to_string(), "from": v})).collect::<Vec<_>>(),
            "already_current": current.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "parents_inferred": inferred,
            "failed": failed.iter().map(|(p, e)| json!({"path": p.display().to_string(), "errors": e})).collect::<Vec<_>>(),
        }));
    } else {
        let mut o = anstream::stdout();
        for (p, v) in &migrated {
            let _ = writeln!(
                o,
                "{GREEN}{verb}{GREEN:#} {} ({v} → {CURRENT_VERSION})",
                p.display()
            );
        }
        let failed_style = if failed.is_empty() { GREEN } else { RED };
        let _ = writeln!(
            o,
            "{verb} {}, already current {}, {failed_style}failed {}{failed_style:#}{}",
            migrated.len(),
            current.len(),
            failed.len(),
            if inferred > 0 {
                format!(
                    ", {} inferred from execution order",
                    output::count_of(inferred, "parent")
                )
            } else {
                String::new()
            }
        );
    }
    if failed.is_empty() {
        Ok(())
    } else {
        let outcome = if failed.len() == 1 {
            "the file was left untouched"
        } else {
            "the files listed were left untouched"
        };
        let lines: Vec<String> = failed.into_iter().flat_map(|(_, e)| e).collect();
        Err(Failure::with_outcome(lines, outcome))
    }
}
