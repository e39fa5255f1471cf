//! [`repair`]: fixing what [`verify`] found (see the [parent module](super) for what it does to
//! each problem), and the quarantine it moves damaged files to.

use super::{
    check_file, io, verify, Area, FileState, FindingKind, Remedy, Result, VerifyError, VerifyReport,
};
use crate::SqlStore;
use caf_core::format::Limits;
use caf_core::store::write_atomic;
use caf_core::{CheckpointId, CheckpointStore, FileStore, ListFilter};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How [`repair`] may go about it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepairOptions {
    /// Remove database rows that have no file in the directory (their checkpoints are written to
    /// the quarantine first). Off by default: a database shared by several directories holds
    /// such rows normally.
    pub remove_extra_rows: bool,
}

/// One thing [`repair`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Repair {
    /// A damaged file was moved to the quarantine.
    Quarantined {
        /// The checkpoint its name gives.
        id: CheckpointId,
        /// Where it was.
        from: PathBuf,
        /// Where it is now.
        to: PathBuf,
        /// The note next to it.
        note: PathBuf,
    },
    /// A damaged file was written back from the database's intact copy, byte for byte; the
    /// damaged original is in the quarantine.
    Restored {
        /// The checkpoint.
        id: CheckpointId,
        /// The file written.
        path: PathBuf,
        /// Where the damaged original is kept.
        original: PathBuf,
        /// The note next to it.
        note: PathBuf,
    },
    /// A database row's checkpoint was written to the quarantine before the row was removed or
    /// replaced.
    SavedRow {
        /// The checkpoint.
        id: CheckpointId,
        /// The file written.
        to: PathBuf,
        /// The note next to it.
        note: PathBuf,
    },
    /// A row was removed from the database.
    RemovedRow {
        /// The checkpoint.
        id: CheckpointId,
    },
    /// The index was rebuilt from the files.
    RebuiltIndex {
        /// Checkpoints it lists.
        entries: u64,
    },
    /// The directory's own database, missing or damaged, was made anew (and then filled from
    /// the files: [`Repair::SyncedDatabase`]); a damaged one was moved to the quarantine.
    RebuiltDatabase {
        /// The database file.
        path: PathBuf,
        /// Where the damaged database went (its `-wal` and `-shm` files beside it).
        set_aside: Option<PathBuf>,
        /// The note next to it.
        note: Option<PathBuf>,
    },
    /// The database caught up with the files.
    SyncedDatabase {
        /// Checkpoints added.
        added: u64,
        /// Checkpoints replaced.
        replaced: u64,
    },
}

/// What [`repair`] found, did, and left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepairReport {
    /// What was found before repairing.
    pub found: VerifyReport,
    /// What was done, in order.
    pub repairs: Vec<Repair>,
    /// The store verified again afterwards: the problems left (files from a newer caf,
    /// unreadable files, rows with no file unless removed).
    pub after: VerifyReport,
}

/// Repairs the store in `dir` (and `db`, its database) as the [module documentation](super)
/// describes: verifies it, fixes each problem, and verifies it again. Never deletes a file.
/// Stores opened on `dir` before the repair should be opened again afterwards.
pub fn repair(dir: &Path, db: Option<&SqlStore>, options: RepairOptions) -> Result<RepairReport> {
    let found = verify(dir, db)?;
    let mut repairs = Vec::new();
    if found.is_clean() {
        return Ok(RepairReport {
            after: found.clone(),
            found,
            repairs,
        });
    }
    let quarantine = Quarantine::new(dir);
    let checksums = match db {
        Some(db) => db.checksums()?,
        None => HashMap::new(),
    };
    let mut rows_to_remove: Vec<(CheckpointId, String)> = Vec::new();
    let limits = Limits::default();
    for f in &found.problems {
        let Some(path) = &f.path else { continue };
        if !matches!(f.remedy, Remedy::Quarantine | Remedy::RestoreFromDatabase) {
            continue;
        }
        // Gone, or fixed meanwhile? Then leave it.
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        if let FileState::Good(_) = check_file(&f.id, path, &limits) {
            continue;
        }
        let copy = match db {
            Some(db) => db.copy_of_damaged_file(path, &f.id)?,
            None => None,
        };
        match copy {
            Some(copy) => {
                let note = format!(
                    "problem: {}\noutcome: the file was written back from the database's intact copy, byte for byte; this is the damaged original\n",
                    f.message
                );
                let (original, note) = quarantine.keep(path, &f.id, &note, false)?;
                let tmp = dir.join(".caf").join("tmp");
                let tmp = tmp.is_dir().then_some(tmp);
                write_atomic(path, tmp.as_deref(), &copy.bytes, Default::default())?;
                repairs.push(Repair::Restored {
                    id: f.id.clone(),
                    path: path.clone(),
                    original,
                    note,
                });
            }
            None => {
                let note = format!(
                    "problem: {}\noutcome: no intact copy of this version in a database; the checkpoint is no longer in the store\n",
                    f.message
                );
                let (to, note) = quarantine.keep(path, &f.id, &note, true)?;
                repairs.push(Repair::Quarantined {
                    id: f.id.clone(),
                    from: path.clone(),
                    to,
                    note,
                });
                if checksums.contains_key(&f.id) {
                    rows_to_remove.push((
                        f.id.clone(),
                        "its file was damaged and moved to the quarantine".into(),
                    ));
                }
            }
        }
    }
    for f in &found.problems {
        match f.kind {
            FindingKind::RowDiffers | FindingKind::RowDamaged => rows_to_remove.push((
                f.id.clone(),
                format!("replaced by its file's version: {}", f.message),
            )),
            FindingKind::ExtraRow if options.remove_extra_rows => {
                rows_to_remove.push((f.id.clone(), "it had no file in the store".into()))
            }
            _ => {}
        }
    }
    if let Some(db) = db {
        for (id, why) in &rows_to_remove {
            if let Some(copy) = db.intact_copy(id, None)? {
                let note = format!(
                    "problem: the database's copy of {id} was removed from the database: {why}\noutcome: this is that copy\n"
                );
                let (to, note) = quarantine.write_row(id, &copy.bytes, &note)?;
                repairs.push(Repair::SavedRow {
                    id: id.clone(),
                    to,
                    note,
                });
            }
            if db.delete_checkpoint(id)? {
                repairs.push(Repair::RemovedRow { id: id.clone() });
            }
        }
    }
    let files = FileStore::open(dir)?;
    if found.problems.iter().any(|f| f.area == Area::Index) {
        files.rebuild_index()?;
        let entries = files.list(&ListFilter::default())?.len() as u64;
        repairs.push(Repair::RebuiltIndex { entries });
    }
    if let Some(db) = db {
        if found.problems.iter().any(|f| f.area == Area::Database) || !rows_to_remove.is_empty() {
            let r = db.sync_from(&files)?;
            repairs.push(Repair::SyncedDatabase {
                added: r.added,
                replaced: r.replaced,
            });
        }
    }
    drop(files);
    let after = verify(dir, db)?;
    Ok(RepairReport {
        found,
        repairs,
        after,
    })
}

/// `DIR/.caf/quarantine/`, created when first needed.
pub(super) struct Quarantine {
    root: PathBuf,
    dir: PathBuf,
}

impl Quarantine {
    pub(super) fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            dir: root.join(".caf").join("quarantine"),
        }
    }

    /// Creates the quarantine, refusing to go through a symbolic link.
    fn ready(&self) -> Result<&Path> {
        for p in [self.root.join(".caf"), self.dir.clone()] {
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(VerifyError::UnsafeQuarantine { path: p }),
                Err(_) => std::fs::create_dir(&p).map_err(io(&p))?,
            }
        }
        Ok(&self.dir)
    }

    /// A name in the quarantine not taken yet (nor its note): `BASE.json`, then `BASE.2.json`…
    fn free_name(&self, base: &str) -> Result<(PathBuf, PathBuf)> {
        self.free_name_with(base, "json")
    }

    /// A name in the quarantine not taken yet (nor its note): `BASE.EXT`, then `BASE.2.EXT`…
    fn free_name_with(&self, base: &str, ext: &str) -> Result<(PathBuf, PathBuf)> {
        let dir = self.ready()?;
        for n in 1.. {
            let name = match n {
                1 => format!("{base}.{ext}"),
                n => format!("{base}.{n}.{ext}"),
            };
            let (file, note) = (dir.join(&name), dir.join(format!("{name}.why.txt")));
            let taken = |p: &Path| std::fs::symlink_metadata(p).is_ok();
            if !taken(&file) && !taken(&note) {
                return Ok((file, note));
            }
        }
        unreachable!("an unbounded range ends only in a return")
    }

    fn write_note(&self, note: &Path, about: &Path, text: &str) -> Result<()> {
        let header = format!(
            "caf repaired the store {} at {}.\nfile: {}\n",
            self.root.display(),
            caf_core::Timestamp::now(),
            about.display()
        );
        std::fs::write(note, format!("{header}{text}")).map_err(io(note))
    }

    /// Puts the damaged file at `path` into the quarantine with its note: moves it (`move_it`),
    /// or copies it (a regular file that is about to be replaced; anything else is moved).
    /// Returns where it went and its note.
    fn keep(
        &self,
        path: &Path,
        id: &CheckpointId,
        text: &str,
        move_it: bool,
    ) -> Result<(PathBuf, PathBuf)> {
        let (to, note) = self.free_name(id.as_str())?;
        self.write_note(&note, path, text)?;
        let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
        if move_it || !regular {
            std::fs::rename(path, &to).map_err(io(path))?;
            sync_dir(&self.root);
        } else {
            std::fs::copy(path, &to).map_err(io(&to))?;
            if let Ok(f) = std::fs::File::open(&to) {
                let _ = f.sync_all();
            }
        }
        sync_dir(&self.dir);
        Ok((to, note))
    }

    /// Moves a damaged SQLite database, and its `-wal` and `-shm` files, into the quarantine
    /// (`caf.db`, `caf.2.db`, …) with a note. Returns where it went and its note.
    pub(super) fn keep_database(&self, path: &Path, text: &str) -> Result<(PathBuf, PathBuf)> {
        let (to, note) = self.free_name_with("caf", "db")?;
        self.write_note(&note, path, text)?;
        for suffix in ["-wal", "-shm"] {
            let mut from = path.as_os_str().to_os_string();
            from.push(suffix);
            let mut dest = to.as_os_str().to_os_string();
            dest.push(suffix);
            match std::fs::rename(&from, &dest) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(Path::new(&from))(e)),
            }
        }
        std::fs::rename(path, &to).map_err(io(path))?;
        sync_dir(path.parent().unwrap_or(Path::new(".")));
        sync_dir(&self.dir);
        Ok((to, note))
    }

    /// Writes a database row's checkpoint (its encoding) into the quarantine with its note.
    fn write_row(&self, id: &CheckpointId, bytes: &[u8], text: &str) -> Result<(PathBuf, PathBuf)> {
        let (to, note) = self.free_name(&format!("{id}.database"))?;
        self.write_note(&note, &to, text)?;
        write_atomic(&to, None, bytes, Default::default())?;
        Ok((to, note))
    }
}

/// Flushes a directory's entries to disk (best effort: a rename survives a crash).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}
