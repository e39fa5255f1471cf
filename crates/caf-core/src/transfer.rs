//! Moving checkpoint files in and out of a store, and rewriting old ones in the current
//! format: the operations behind `caf import`, `caf export` and `caf migrate`, for every front
//! end alike.
//!
//! - [`import`] is all or nothing: every file is read and validated (an older format migrated
//!   in memory) before anything is saved; the same checkpoint given twice is imported once; two
//!   different checkpoints under one id, or a checkpoint that would replace a different one
//!   already in the store, stop the import with nothing saved.
//! - [`export`] writes one checkpoint to a file, atomically and durably, its secrets redacted
//!   ([`export_with`]: by the rules given, e.g. those of the directory's `caf.toml`).
//! - [`migrate_files`] rewrites files of an older format version in the current one, file by
//!   file, atomically, inferring lineage across the whole set first.

use crate::error::{Error, Result};
use crate::format::migrate::infer_parents;
use crate::format::{encode, Decoded, Limits};
use crate::id::CheckpointId;
use crate::redact::{RedactionRules, Redactor};
use crate::store::{
    read_checkpoint_file, write_atomic, AtomicWriteOptions, CheckpointStore, CheckpointSummary,
};
use std::path::{Path, PathBuf};

/// Expands paths: files as given, directories searched recursively for `*.json` in name order
/// (skipping hidden entries such as a store's `.caf/`).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::symlink_metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut entries: Vec<_> = rd.filter_map(std::result::Result::ok).collect();
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

/// `files` without the repeats of a file (by its canonical directory and its name, so that `d`
/// and `./d/a.json` meet, without following a link).
pub fn unique_paths(files: Vec<PathBuf>) -> Vec<PathBuf> {
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

/// One imported file.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The file.
    pub path: PathBuf,
    /// The checkpoint as saved.
    pub summary: CheckpointSummary,
    /// The format version the file had (migrated in memory if older).
    pub source_version: String,
}

/// Why an import would clash with itself or with the store.
#[derive(Debug, thiserror::Error)]
pub enum Conflict {
    /// Two files hold different checkpoints under one id.
    #[error("{}: holds checkpoint {id} like {}, with other content", path.display(), other.display())]
    SameIdInFiles {
        /// The second file.
        path: PathBuf,
        /// The id.
        id: CheckpointId,
        /// The first file.
        other: PathBuf,
    },
    /// The store has a different checkpoint under the id.
    #[error("{}: checkpoint {id} is already in the store with different content", path.display())]
    InStore {
        /// The file.
        path: PathBuf,
        /// The id.
        id: CheckpointId,
    },
}

/// Why nothing was imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Some files could not be read or are invalid.
    #[error("nothing imported: {} of {total} files are invalid", failures.len())]
    Invalid {
        /// Each file's error (it names the file).
        failures: Vec<Error>,
        /// How many files there were.
        total: usize,
    },
    /// The files clash with each other or with the store.
    #[error("nothing imported: {} conflicting checkpoints", conflicts.len())]
    Conflicts {
        /// Each clash.
        conflicts: Vec<Conflict>,
    },
    /// The paths could not be expanded, or the store failed while saving (the checkpoints saved
    /// before the failure stay saved).
    #[error(transparent)]
    Store(#[from] Error),
}

/// Imports checkpoint files (directories searched recursively) into `store`: all or nothing.
/// ([`prepare_import`] then [`ImportBatch::save_into`].)
pub fn import(
    store: &dyn CheckpointStore,
    paths: &[PathBuf],
    limits: &Limits,
) -> std::result::Result<Vec<Imported>, ImportError> {
    prepare_import(paths, limits)?.save_into(store)
}

/// Files read, validated and de-duplicated, ready to be saved into a store.
#[derive(Debug)]
pub struct ImportBatch {
    files: Vec<(PathBuf, Decoded)>,
}

/// Reads and validates every file (directories searched recursively), and drops repeats of the
/// same checkpoint. Touches no store, so that a caller can open (or create) one only when the
/// files are good.
pub fn prepare_import(
    paths: &[PathBuf],
    limits: &Limits,
) -> std::result::Result<ImportBatch, ImportError> {
    let files = expand(paths)?;
    let mut decoded: Vec<(PathBuf, Decoded)> = Vec::new();
    let mut failures = Vec::new();
    for f in &files {
        match read_checkpoint_file(f, limits) {
            Ok(d) => decoded.push((f.clone(), d)),
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        return Err(ImportError::Invalid {
            failures,
            total: files.len(),
        });
    }
    // The same checkpoint given twice is imported once; two different ones with one id, never.
    let mut seen: std::collections::HashMap<CheckpointId, usize> = Default::default();
    let mut unique: Vec<(PathBuf, Decoded)> = Vec::new();
    let mut conflicts = Vec::new();
    for (f, d) in decoded {
        match seen.get(&d.checkpoint.id) {
            Some(&i) if unique[i].1.checkpoint == d.checkpoint => {}
            Some(&i) => conflicts.push(Conflict::SameIdInFiles {
                path: f,
                id: d.checkpoint.id.clone(),
                other: unique[i].0.clone(),
            }),
            None => {
                seen.insert(d.checkpoint.id.clone(), unique.len());
                unique.push((f, d));
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(ImportError::Conflicts { conflicts });
    }
    Ok(ImportBatch { files: unique })
}

impl ImportBatch {
    /// How many checkpoints the batch holds.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Saves the batch into `store`, unless one of its checkpoints would replace a different
    /// one already there (then nothing is saved).
    pub fn save_into(
        self,
        store: &dyn CheckpointStore,
    ) -> std::result::Result<Vec<Imported>, ImportError> {
        let mut conflicts = Vec::new();
        for (f, d) in &self.files {
            if matches!(store.load(&d.checkpoint.id), Ok(existing) if existing != d.checkpoint) {
                conflicts.push(Conflict::InStore {
                    path: f.clone(),
                    id: d.checkpoint.id.clone(),
                });
            }
        }
        if !conflicts.is_empty() {
            return Err(ImportError::Conflicts { conflicts });
        }
        let mut out = Vec::with_capacity(self.files.len());
        for (path, d) in self.files {
            let summary = store.save(&d.checkpoint)?;
            out.push(Imported {
                path,
                summary,
                source_version: d.source_version,
            });
        }
        Ok(out)
    }
}

/// Writes checkpoint `id` of `store` to `path`, atomically and durably, redacted by the
/// built-in rules; returns its size. See [`export_with`].
pub fn export(store: &dyn CheckpointStore, id: &CheckpointId, path: &Path) -> Result<u64> {
    export_with(store, id, path, &RedactionRules::new()).map(|e| e.bytes)
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported {
    /// The size written.
    pub bytes: u64,
    /// How many values the export's redaction replaced (a checkpoint saved by this caf was
    /// redacted when saved, so usually 0).
    pub redacted: u64,
}

/// Writes checkpoint `id` of `store` to `path`, atomically and durably, with its secrets
/// replaced by `rules` ([`export_bytes`]).
pub fn export_with(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    path: &Path,
    rules: &RedactionRules,
) -> Result<Exported> {
    let (bytes, redacted) = export_bytes(store, id, rules)?;
    write_atomic(path, None, &bytes, AtomicWriteOptions::default())?;
    Ok(Exported {
        bytes: bytes.len() as u64,
        redacted,
    })
}

/// The file bytes of checkpoint `id` of `store` as an export writes them: a checkpoint that
/// holds secrets (saved by an older caf, or with redaction off) is encoded again redacted by
/// `rules`, with a new checksum; any other is encoded as it is. Also returns how many values
/// were replaced.
pub fn export_bytes(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    rules: &RedactionRules,
) -> Result<(Vec<u8>, u64)> {
    let checkpoint = store.load(id)?;
    let redacted = Redactor::new(rules.clone()).redact(&checkpoint);
    let bytes = encode(&redacted.checkpoint).map_err(|error| Error::Encode {
        id: id.to_string(),
        error,
    })?;
    Ok((bytes, redacted.replaced))
}

/// How [`migrate_files`] works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MigrateOptions {
    /// Report what would change; write nothing.
    pub dry_run: bool,
    /// Keep each original beside it as `NAME.VERSION.bak`.
    pub backup: bool,
}

/// What [`migrate_files`] did.
#[derive(Debug, Default)]
pub struct MigrateReport {
    /// Files rewritten (or that would be, in a dry run), with the version they had.
    pub migrated: Vec<(PathBuf, String)>,
    /// Files already in the current format, left alone.
    pub already_current: Vec<PathBuf>,
    /// Parents set from execution order on migrated files that had none.
    pub parents_inferred: usize,
    /// Files that could not be read, converted or written, left untouched.
    pub failed: Vec<(PathBuf, Error)>,
}

/// The path of the backup of `path`, a file of format `version`.
pub fn backup_path(path: &Path, version: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".{version}.bak"));
    path.with_file_name(name)
}

/// Rewrites every file of an older format in `paths` (directories recursively) in the current
/// format, each atomically. Everything is read first, so that lineage is inferred across the
/// whole set. `progress` is called after each file read with (done, total).
pub fn migrate_files(
    paths: &[PathBuf],
    options: MigrateOptions,
    limits: &Limits,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<MigrateReport> {
    let files = unique_paths(expand(paths)?);
    let mut report = MigrateReport::default();
    let mut loaded: Vec<(PathBuf, Decoded)> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        match read_checkpoint_file(f, limits) {
            Ok(d) => loaded.push((f.clone(), d)),
            Err(e) => report.failed.push((f.clone(), e)),
        }
        progress(i + 1, files.len());
    }
    let (paths, mut decoded): (Vec<PathBuf>, Vec<Decoded>) = loaded.into_iter().unzip();
    report.parents_inferred = infer_parents(&mut decoded);
    for (path, d) in paths.into_iter().zip(decoded) {
        if !d.was_migrated() {
            report.already_current.push(path);
            continue;
        }
        let bytes = match encode(&d.checkpoint) {
            Ok(b) => b,
            Err(error) => {
                let id = d.checkpoint.id.to_string();
                report.failed.push((path, Error::Encode { id, error }));
                continue;
            }
        };
        if !options.dry_run {
            let write = || -> Result<()> {
                if options.backup {
                    let original = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                    let backup = backup_path(&path, &d.source_version);
                    write_atomic(&backup, None, &original, AtomicWriteOptions::default())?;
                }
                write_atomic(&path, None, &bytes, AtomicWriteOptions::default()).map(drop)
            };
            if let Err(e) = write() {
                report.failed.push((path, e));
                continue;
            }
        }
        report.migrated.push((path, d.source_version));
    }
    Ok(report)
}
