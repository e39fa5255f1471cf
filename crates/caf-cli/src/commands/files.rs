//! `caf validate`, `caf import`, `caf export`: moving checkpoint files in and out.

use super::{checkpoint_id, open_existing};
use crate::cli::ExportArgs;
use crate::output::{self, GREEN, RED};
use crate::target::Target;
use crate::{error_lines, CmdResult, Failure};
use caf_core::format::{encode, Decoded, Limits};
use caf_core::store::read_checkpoint_file;
use caf_core::store::{write_atomic, AtomicWriteOptions};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Expands the arguments: files as given, directories searched recursively for `*.json`
/// (skipping hidden entries such as the store's `.caf/` index).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::symlink_metadata(p)
            .map_err(|e| Failure::msg(format!("{}: {e}", p.display())))?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Failure> {
    let rd = std::fs::read_dir(dir).map_err(|e| Failure::msg(format!("{}: {e}", dir.display())))?;
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = e.path();
        match e.file_type() {
            Ok(ft) if ft.is_dir() => walk(&path, out)?,
            Ok(_) if name.ends_with(".json") => out.push(path),
            _ => {}
        }
    }
    Ok(())
}

/// Checks files; exit 1 unless every one is valid. On the terminal: one line per file, in
/// order (`ok` or `invalid`), each invalid file's errors right after its line (on stderr), and
/// the summary last.
pub fn validate(json: bool, paths: &[PathBuf]) -> CmdResult {
    let files = expand(paths)?;
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
    let files = expand(paths)?;
    let mut decoded: Vec<(PathBuf, Decoded)> = Vec::new();
    let mut problems = Vec::new();
    for f in &files {
        match read_checkpoint_file(f, &Limits::default()) {
            Ok(d) => decoded.push((f.clone(), d)),
            Err(e) => problems.extend(error_lines(&e)),
        }
    }
    if !problems.is_empty() {
        let bad = files.len() - decoded.len();
        let outcome = format!(
            "nothing imported: {bad} of {} {} invalid",
            output::count_of(files.len(), "file"),
            if bad == 1 { "is" } else { "are" }
        );
        return Err(Failure::with_outcome(problems, outcome));
    }
    // The same checkpoint given twice is imported once; two different ones with one id, never.
    let mut seen: std::collections::HashMap<caf_core::CheckpointId, usize> = Default::default();
    let mut unique: Vec<(PathBuf, Decoded)> = Vec::new();
    for (f, d) in decoded {
        match seen.get(&d.checkpoint.id) {
            Some(&i) if unique[i].1.checkpoint == d.checkpoint => {}
            Some(&i) => problems.push(format!(
                "{}: holds checkpoint {} like {}, with other content",
                f.display(),
                d.checkpoint.id,
                unique[i].0.display()
            )),
            None => {
                seen.insert(d.checkpoint.id.clone(), unique.len());
                unique.push((f, d));
            }
        }
    }
    if !problems.is_empty() {
        return Err(Failure::with_outcome(problems, "nothing imported"));
    }
    let decoded = unique;
    let store = t.open_or_create()?;
    // Refuse to overwrite a different checkpoint with the same id.
    for (f, d) in &decoded {
        match store.load(&d.checkpoint.id) {
            Ok(existing) if existing != d.checkpoint => {
                problems.push(format!(
                    "{}: checkpoint {} is already in {} with different content (delete it first)",
                    f.display(),
                    d.checkpoint.id,
                    t.describe()
                ));
            }
            _ => {}
        }
    }
    if !problems.is_empty() {
        return Err(Failure::with_outcome(problems, "nothing imported"));
    }
    let mut saved = Vec::new();
    for (f, d) in &decoded {
        let s = store.save(&d.checkpoint)?;
        if !json {
            let note = if d.was_migrated() {
                format!(" (migrated from {})", d.source_version)
            } else {
                String::new()
            };
            let mut o = anstream::stdout();
            let _ = writeln!(
                o,
                "{GREEN}imported{GREEN:#} {} from {}{note}",
                s.id,
                f.display()
            );
        }
        saved.push(s);
    }
    if json {
        output::print_json(&saved);
    } else {
        crate::say!(
            "{} imported into {}",
            output::count_of(saved.len(), "checkpoint"),
            t.describe()
        );
    }
    Ok(())
}

/// Writes a checkpoint to a file (atomically) or to stdout. With `-o` and `--json`, stdout gets
/// what was written: `{"id", "path", "bytes"}` (without `-o` the document itself is the JSON).
pub fn export(t: &Target, json: bool, a: &ExportArgs) -> CmdResult {
    let id = checkpoint_id(&a.id)?;
    let store = open_existing(t)?;
    let c = store.load(&id)?;
    let bytes = encode(&c).map_err(|e| Failure::msg(format!("{id}: {e}")))?;
    match &a.output {
        Some(path) => {
            write_atomic(path, None, &bytes, AtomicWriteOptions::default())?;
            if json {
                output::print_json(&json!({
                    "id": id, "path": path.display().to_string(), "bytes": bytes.len(),
                }));
            } else {
                eprintln!(
                    "exported {id} to {} ({})",
                    path.display(),
                    output::bytes(bytes.len() as u64)
                );
            }
        }
        None => {
            let _ = std::io::stdout().lock().write_all(&bytes);
        }
    }
    Ok(())
}
