//! Checking a store and repairing it: [`verify`] looks at every checkpoint file of a directory
//! (it loads: schema and checksum; its name matches its id), at the index (`DIR/.caf/index.jsonl`,
//! read as it is on disk) and at the database (against the files); [`repair`] fixes what it
//! found, never deleting a file.
//!
//! The index is a cache that every open of the store brings up to date: files that are new,
//! changed (another size or modification time) or gone are read again. So `verify` does not
//! report those; it reports what an open would not fix, entries it would trust (the file has the
//! size and time recorded) that disagree with their file — a file changed in place by bit rot,
//! or an index written wrong.
//!
//! What [`repair`] does, problem by problem ([`Remedy`]):
//!
//! - A damaged file (corrupted, invalid, malformed, too large, not a regular file, holding
//!   another checkpoint than its name says) is moved to the quarantine, `DIR/.caf/quarantine/`,
//!   as `ID.json` (`ID.2.json`, … if that name is taken), next to a note `ID.json.why.txt` that
//!   says where it came from, what was wrong and what was done. When the database holds an intact copy of the same version
//!   ([`SqlStore::intact_copy`]), the file is written back from it, byte for byte, and the
//!   damaged original is kept in the quarantine all the same.
//! - A database row that differs from its file, or does not load, is replaced by the file's
//!   version; a row whose file went to the quarantine is removed. A row with no file at all is
//!   removed only when asked ([`RepairOptions::remove_extra_rows`]: a database shared by several
//!   directories holds such rows normally). Whenever a row goes and its checkpoint still loads,
//!   that checkpoint is first written to the quarantine (`ID.database.json` and its note), so
//!   nothing either copy held is lost.
//! - A stale index is rebuilt from the files ([`caf_core::FileStore::rebuild_index`]); the database
//!   catches up with the files ([`SqlStore::sync_from`]).
//! - A file from a newer caf, or one that cannot be read (permissions), is left as it is.
//!
//! Then the store is verified again ([`RepairReport::after`]).

use crate::error::SqlError;
use crate::SqlStore;
use caf_core::format::file_digest;
use caf_core::format::{decode, encode, Checkpoint, Limits, LoadError};
use caf_core::store::{read_index, read_regular_file, stated_integrity};
use caf_core::{CheckpointId, CheckpointSummary};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why [`verify`] or [`repair`] could not do its work (the problems it finds are not errors:
/// they are its report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The checkpoint directory does not exist.
    #[error("{}: no checkpoint directory here", dir.display())]
    NoDirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// `DIR/.caf` or its quarantine is not a plain directory (a symbolic link, a file): repair
    /// will not write through it.
    #[error("{}: not a plain directory (a symbolic link or a file); repair will not write there", path.display())]
    UnsafeQuarantine {
        /// The path.
        path: PathBuf,
    },
    /// A file-system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing the files or the index failed.
    #[error(transparent)]
    Store(#[from] caf_core::Error),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] SqlError),
    /// The database could not be opened (and it is not the directory's own database, missing
    /// or damaged, which is a problem found rather than an error).
    #[error(transparent)]
    Open(Box<crate::OpenError>),
}

/// `Result` with [`VerifyError`].
pub type Result<T, E = VerifyError> = std::result::Result<T, E>;

mod database;
mod repair;
pub use database::{
    repair_store, set_aside_damaged_database, verify_store, DatabaseProblem, DatabaseProblemKind,
};
pub use repair::{repair, Repair, RepairOptions, RepairReport};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> VerifyError + '_ {
    move |source| VerifyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What kind of problem a [`Finding`] is; its [`Area`] says what holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    /// A file whose content does not match its integrity checksum.
    Corrupted,
    /// A file that breaks its format's schema or rules.
    Invalid,
    /// A file that is not a well-formed checkpoint document (not JSON, no version, …).
    Malformed,
    /// A file larger than caf reads.
    TooLarge,
    /// A symbolic link, directory or special file where a checkpoint file should be.
    NotRegularFile,
    /// A file named for one checkpoint that holds another.
    WrongName,
    /// A file in a format version this caf does not know (a newer caf wrote it).
    UnsupportedVersion,
    /// A file that could not be read (permissions, I/O).
    Unreadable,
    /// The index lists a checkpoint, as it was, whose file no longer loads (its size and
    /// modification time unchanged, so that opening the store trusts the entry).
    StaleIndexEntry,
    /// The index's summary or checksum of a checkpoint differs from its file (whose size and
    /// modification time are unchanged, so that opening the store trusts the entry).
    IndexDiffers,
    /// A checkpoint file the database lacks.
    MissingRow,
    /// A checkpoint in the database with no file in the directory.
    ExtraRow,
    /// A checkpoint the database holds with other content than its file.
    RowDiffers,
    /// A checkpoint whose database rows do not load.
    RowDamaged,
}

/// What holds a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Area {
    /// A checkpoint file.
    File,
    /// The index.
    Index,
    /// The database.
    Database,
}

impl FindingKind {
    /// What holds this kind of problem.
    pub fn area(self) -> Area {
        match self {
            Self::StaleIndexEntry | Self::IndexDiffers => Area::Index,
            Self::MissingRow | Self::ExtraRow | Self::RowDiffers | Self::RowDamaged => {
                Area::Database
            }
            _ => Area::File,
        }
    }
}

/// What [`repair`] does about a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Remedy {
    /// Moves the file to the quarantine.
    Quarantine,
    /// Writes the file back from the database's intact copy (the damaged original goes to the
    /// quarantine).
    RestoreFromDatabase,
    /// Rebuilds the index.
    RebuildIndex,
    /// Brings the database in line with the file (its own version, if it loads, goes to the
    /// quarantine first).
    SyncDatabase,
    /// Removes the row, after writing its checkpoint to the quarantine — only with
    /// [`RepairOptions::remove_extra_rows`].
    RemoveRow,
    /// Nothing: the file is left as it is.
    None,
}

/// One problem [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What kind of problem.
    pub kind: FindingKind,
    /// What holds it.
    pub area: Area,
    /// The checkpoint (for a file, the id its name gives).
    pub id: CheckpointId,
    /// The file, for a problem with a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// What is wrong, in one line (it does not repeat the path or id).
    pub message: String,
    /// What [`repair`] does about it.
    pub remedy: Remedy,
}

impl Finding {
    fn new(kind: FindingKind, id: &CheckpointId, message: impl Into<String>) -> Self {
        let remedy = match kind.area() {
            Area::Index => Remedy::RebuildIndex,
            Area::Database if kind == FindingKind::ExtraRow => Remedy::RemoveRow,
            Area::Database => Remedy::SyncDatabase,
            Area::File => Remedy::Quarantine,
        };
        Self {
            kind,
            area: kind.area(),
            id: id.clone(),
            path: None,
            message: message.into(),
            remedy,
        }
    }
}

/// What [`verify`] looked at and found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// Checkpoint files looked at (`*.json` named as a checkpoint id).
    pub files: u64,
    /// Entries the index lists, or `None` when the directory has no index yet (it is built
    /// when the store is first opened: not a problem).
    pub index_entries: Option<u64>,
    /// The database, for messages, if one was checked.
    pub database: Option<String>,
    /// Checkpoints the database holds, if one was checked.
    pub rows: Option<u64>,
    /// Every problem, files first, each with its file or id.
    pub problems: Vec<Finding>,
    /// The directory's own database, missing or damaged (see [`verify_store`]); the files and
    /// index were then checked without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database_problem: Option<DatabaseProblem>,
}

impl VerifyReport {
    /// Whether no problem was found.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty() && self.database_problem.is_none()
    }
}

/// A checkpoint file that loads (its checkpoint is compared with the database, then dropped: a
/// store may hold far more checkpoints than fit in memory).
struct GoodFile {
    summary: CheckpointSummary,
    /// The checksum the file states, when it is in the current format.
    stated: Option<String>,
    /// The digest of its bytes, when it is in the current format (what the index records).
    digest: Option<String>,
    /// The checksum a database holds for it: the stated one, or that of its re-encoding.
    expected: Option<String>,
}

/// What one checkpoint file is.
enum FileState {
    Good(Box<(GoodFile, Checkpoint)>),
    Bad(Finding),
}

/// The checkpoint files of `dir`: `*.json`, not hidden, named as a checkpoint id, by id.
fn checkpoint_files(dir: &Path) -> Result<BTreeMap<CheckpointId, PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        if let Ok(id) = CheckpointId::new(stem) {
            out.insert(id, entry.path());
        }
    }
    Ok(out)
}

fn kind_of_load_error(e: &LoadError) -> FindingKind {
    match e {
        LoadError::Corrupted { .. } => FindingKind::Corrupted,
        LoadError::Schema { .. } | LoadError::Invalid { .. } => FindingKind::Invalid,
        LoadError::NewerVersion { .. } | LoadError::UnknownVersion { .. } => {
            FindingKind::UnsupportedVersion
        }
        LoadError::TooLarge { .. } => FindingKind::TooLarge,
        _ => FindingKind::Malformed,
    }
}

/// Reads and checks one file.
fn check_file(id: &CheckpointId, path: &Path, limits: &Limits) -> FileState {
    let bad = |kind: FindingKind, message: String| {
        let mut f = Finding::new(kind, id, message);
        f.path = Some(path.to_path_buf());
        if matches!(
            kind,
            FindingKind::UnsupportedVersion | FindingKind::Unreadable
        ) {
            f.remedy = Remedy::None;
        }
        FileState::Bad(f)
    };
    let bytes = match read_regular_file(path, limits.max_bytes) {
        Ok(b) => b,
        Err(caf_core::Error::NotRegularFile { kind, .. }) => {
            return bad(
                FindingKind::NotRegularFile,
                format!("not a regular file ({kind})"),
            )
        }
        Err(caf_core::Error::Load { error, .. }) => {
            return bad(kind_of_load_error(&error), error.to_string())
        }
        Err(caf_core::Error::Io { source, .. }) => {
            return bad(FindingKind::Unreadable, source.to_string())
        }
        Err(other) => return bad(FindingKind::Unreadable, other.to_string()),
    };
    let decoded = match decode(&bytes, limits) {
        Ok(d) => d,
        Err(e) => return bad(kind_of_load_error(&e), e.to_string()),
    };
    if &decoded.checkpoint.id != id {
        return bad(
            FindingKind::WrongName,
            format!(
                "the file is named {id}.json but holds checkpoint {}",
                decoded.checkpoint.id
            ),
        );
    }
    let stated = (!decoded.was_migrated())
        .then(|| stated_integrity(&bytes))
        .flatten();
    let expected = stated.clone().or_else(|| {
        encode(&decoded.checkpoint)
            .ok()
            .and_then(|b| stated_integrity(&b))
    });
    let good = GoodFile {
        summary: CheckpointSummary::of(&decoded.checkpoint, bytes.len() as u64),
        digest: stated.as_ref().map(|_| file_digest(&bytes)),
        stated,
        expected,
    };
    FileState::Good(Box::new((good, decoded.checkpoint)))
}

/// How the database's copy of a file that loads differs from it, if it does: no row, another
/// version, other content, or a copy that does not load.
fn compare_row(
    db: &SqlStore,
    checksums: &std::collections::HashMap<CheckpointId, String>,
    id: &CheckpointId,
    g: &GoodFile,
    checkpoint: &Checkpoint,
) -> Result<Option<Finding>> {
    let finding = match checksums.get(id) {
        None => Finding::new(FindingKind::MissingRow, id, "the database lacks it"),
        Some(stored) if Some(stored) != g.expected.as_ref() => Finding::new(
            FindingKind::RowDiffers,
            id,
            format!(
                "the database holds another version (checksum {stored}, the file's {})",
                g.expected.as_deref().unwrap_or("unknown")
            ),
        ),
        Some(_) => match db.load_checkpoint(id) {
            Ok(c) if &c == checkpoint => return Ok(None),
            Ok(_) => Finding::new(
                FindingKind::RowDiffers,
                id,
                "the database's rows load other content than the file holds",
            ),
            Err(e @ (SqlError::Corrupt { .. } | SqlError::NotFound { .. } | SqlError::Core(_))) => {
                Finding::new(
                    FindingKind::RowDamaged,
                    id,
                    format!("the database's copy does not load: {e}"),
                )
            }
            Err(e) => return Err(e.into()),
        },
    };
    Ok(Some(finding))
}

/// Checks the store in `dir` — every checkpoint file, the index as it is on disk, and, with
/// `db`, the database against the files (ids, checksums, and that each row loads back equal to
/// its file) — and reports every problem. Changes nothing (nothing is written to the directory
/// or the database).
pub fn verify(dir: &Path, db: Option<&SqlStore>) -> Result<VerifyReport> {
    if !dir.is_dir() {
        return Err(VerifyError::NoDirectory {
            dir: dir.to_path_buf(),
        });
    }
    caf_core::store::refuse_linked_internals(&dir.join(".caf"))?;
    let limits = Limits::default();
    let paths = checkpoint_files(dir)?;
    let checksums = db.map(SqlStore::checksums).transpose()?;
    let mut good: BTreeMap<CheckpointId, GoodFile> = BTreeMap::new();
    let mut problems = Vec::new();
    for (id, path) in &paths {
        match check_file(id, path, &limits) {
            FileState::Good(g) => {
                let (g, checkpoint) = *g;
                if let (Some(db), Some(checksums)) = (db, &checksums) {
                    if let Some(f) = compare_row(db, checksums, id, &g, &checkpoint)? {
                        problems.push(f);
                    }
                }
                good.insert(id.clone(), g);
            }
            FileState::Bad(f) => problems.push(f),
        }
    }

    // The index is a cache that every open brings up to date (new, changed and vanished files
    // are read again): what matters is an entry an open would trust — the file has the size and
    // modification time it records — that disagrees with the file.
    let index = read_index(dir)?;
    if let Some(index) = &index {
        let mut ids: Vec<&CheckpointId> = index.entries.keys().collect();
        ids.sort();
        for id in ids {
            let entry = &index.entries[id];
            let Some(path) = paths.get(id) else { continue };
            if !entry.matches_file(path) {
                continue;
            }
            let why = match good.get(id) {
                None => "the index lists it as it was, but its file no longer loads",
                Some(g) if entry.summary != g.summary => {
                    "the index's summary differs from the file"
                }
                Some(g) if entry.integrity.is_some() && entry.integrity != g.stated => {
                    "the index's checksum differs from the file's"
                }
                Some(g) if entry.digest.is_some() && entry.digest != g.digest => {
                    "the index's digest differs from the file's bytes"
                }
                Some(_) => continue,
            };
            let kind = if good.contains_key(id) {
                FindingKind::IndexDiffers
            } else {
                FindingKind::StaleIndexEntry
            };
            problems.push(Finding::new(kind, id, why));
        }
    }

    let mut rows = None;
    if let (Some(db), Some(checksums)) = (db, &checksums) {
        rows = Some(checksums.len() as u64);
        let mut extra: Vec<&CheckpointId> = checksums
            .keys()
            .filter(|id| !paths.contains_key(*id))
            .collect();
        extra.sort();
        for id in extra {
            problems.push(Finding::new(
                FindingKind::ExtraRow,
                id,
                "the database holds it, but it has no file",
            ));
        }
        // A damaged file with an intact copy in the database can be written back.
        for f in problems
            .iter_mut()
            .filter(|f| f.remedy == Remedy::Quarantine)
        {
            let Some(path) = &f.path else { continue };
            if db.copy_of_damaged_file(path, &f.id)?.is_some() {
                f.remedy = Remedy::RestoreFromDatabase;
            }
        }
    }
    problems.sort_by(|a, b| (a.area as u8, &a.id, a.kind).cmp(&(b.area as u8, &b.id, b.kind)));
    Ok(VerifyReport {
        dir: dir.to_path_buf(),
        files: paths.len() as u64,
        index_entries: index.map(|i| i.entries.len() as u64),
        database: db.map(SqlStore::location),
        rows,
        problems,
        database_problem: None,
    })
}
