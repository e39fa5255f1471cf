//! `caf migrate`: rewrite checkpoint files in the current format, atomically, file by file.

use super::files::expand;
use crate::cli::MigrateArgs;
use crate::output::{self, GREEN, RED};
use crate::{error_lines, CmdResult, Failure};
use caf_core::format::migrate::infer_parents;
use caf_core::format::{encode, Decoded, Limits};
use caf_core::store::{read_checkpoint_file, write_atomic, AtomicWriteOptions};
use caf_core::CURRENT_VERSION;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Files at or above this count get a progress bar (on a terminal).
const PROGRESS_FROM: usize = 20;

fn backup_path(path: &Path, version: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".{version}.bak"));
    path.with_file_name(name)
}

/// `files` without the repeats of a file (by its canonical directory and its name, so that
/// `d` and `./d/a.json` meet, without following a link): a file read twice would be counted
/// twice and inferred to be its own parent.
fn unique(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    files
        .into_iter()
        .filter(|f| {
            let key = match (f.parent(), f.file_name()) {
                (Some(dir), Some(name)) => {
                    let dir = if dir.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        dir
                    };
                    std::fs::canonicalize(dir).map_or_else(|_| f.clone(), |d| d.join(name))
                }
                _ => f.clone(),
            };
            seen.insert(key)
        })
        .collect()
}

/// Migrates every file given (directories recursively) to the current format.
pub fn run(json: bool, a: &MigrateArgs) -> CmdResult {
    if let Some(to) = &a.to {
        if to != CURRENT_VERSION {
            return Err(Failure::Usage(format!(
                "--to {to}: caf migrates only forward, to the current format version {CURRENT_VERSION}"
            )));
        }
    }
    let files = unique(expand(&a.paths)?);
    let bar = (files.len() >= PROGRESS_FROM && !json).then(|| {
        let bar = indicatif::ProgressBar::new(files.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });

    // Read everything first: lineage is inferred across the whole set.
    let mut loaded: Vec<(PathBuf, Decoded)> = Vec::new();
    let mut failed: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for f in &files {
        match read_checkpoint_file(f, &Limits::default()) {
            Ok(d) => loaded.push((f.clone(), d)),
            Err(e) => failed.push((f.clone(), error_lines(&e))),
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    let (paths, mut decoded): (Vec<PathBuf>, Vec<Decoded>) = loaded.into_iter().unzip();
    let inferred = infer_parents(&mut decoded);

    let (mut migrated, mut current) = (Vec::new(), Vec::new());
    for (path, d) in paths.iter().zip(&decoded) {
        if !d.was_migrated() {
            current.push(path.clone());
            continue;
        }
        let bytes = match encode(&d.checkpoint) {
            Ok(b) => b,
            Err(e) => {
                failed.push((path.clone(), vec![format!("{}: {e}", path.display())]));
                continue;
            }
        };
        if !a.dry_run {
            let write = || -> caf_core::Result<()> {
                if a.backup {
                    let original = std::fs::read(path).map_err(|e| caf_core::Error::io(path, e))?;
                    let backup = backup_path(path, &d.source_version);
                    write_atomic(&backup, None, &original, AtomicWriteOptions::default())?;
                }
                write_atomic(path, None, &bytes, AtomicWriteOptions::default())?;
                Ok(())
            };
            if let Err(e) = write() {
                failed.push((path.clone(), error_lines(&e)));
                continue;
            }
        }
        migrated.push((path.clone(), d.source_version.clone()));
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }

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
