//! Bringing checkpoint files into the database: [`SqlStore::sync_from`] and
//! [`SqlStore::reindex_from`].

use crate::checkpoint::save::{save_in_tx, Encoded, SyncOutcome};
use crate::connection::TxMode;
use crate::delete::delete_everything;
use crate::error::{Result, SqlError};
use crate::schema::checkpoints;
use crate::SqlStore;
use caf_core::format::{decode, encode, Checkpoint, Limits};
use caf_core::store::read_regular_file;
use caf_core::{CheckpointStore, CheckpointSummary, FileStore, ListFilter};
use diesel::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// A file that could not be brought in (unreadable, corrupted, …); it was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    /// The checkpoint id the file is named for.
    pub id: String,
    /// The file.
    pub path: String,
    /// What is wrong (it names the file).
    pub error: String,
}

/// The files `files` found unreadable when it was opened (they are not listed, so the loops
/// below never see them).
fn unreadable(files: &FileStore) -> Vec<FileProblem> {
    files
        .problems()
        .iter()
        .map(|p| FileProblem {
            id: p
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: p.path.display().to_string(),
            error: p.error.to_string(),
        })
        .collect()
}

/// What [`SqlStore::sync_from`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// Checkpoints that were not in the database.
    pub added: u64,
    /// Checkpoints already there with the same content.
    pub unchanged: u64,
    /// Checkpoints there with other content, replaced by the file's.
    pub replaced: u64,
    /// Ids in the database with no file (left in place: the database may be shared with other
    /// directories); delete them with [`SqlStore::delete_checkpoint`] to make the database a
    /// mirror of this directory.
    pub orphaned: Vec<String>,
    /// How many files were skipped: `problems.len()`.
    pub skipped: u64,
    /// The files skipped, and why.
    pub problems: Vec<FileProblem>,
}

/// What [`SqlStore::reindex_from`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Executions they belong to.
    pub executions: u64,
    /// How many files were skipped: `problems.len()`.
    pub skipped: u64,
    /// The files skipped, and why.
    pub problems: Vec<FileProblem>,
}

/// A checkpoint file read and decoded, with what its encoding is.
struct Loaded {
    checkpoint: Checkpoint,
    encoded: Encoded<'static>,
}

/// Reads the file of `s`: the checkpoint and its integrity and size as stored. A file written
/// by caf carries both; one in an older format is re-encoded (as the file store would save it).
fn read(files: &FileStore, s: &CheckpointSummary) -> std::result::Result<Loaded, String> {
    let limits = Limits::default();
    let path = files.path_of(&s.id);
    let bytes = read_regular_file(&path, limits.max_bytes).map_err(|e| e.to_string())?;
    let decoded = decode(&bytes, &limits).map_err(|e| format!("{}: {e}", path.display()))?;
    if decoded.checkpoint.id != s.id {
        return Err(format!(
            "{}: holds checkpoint {}, not {}",
            path.display(),
            decoded.checkpoint.id,
            s.id
        ));
    }
    let encoded = match Encoded::from_bytes(&bytes).filter(|_| !decoded.was_migrated()) {
        Some(e) => e,
        None => {
            let again = encode(&decoded.checkpoint).map_err(|e| e.to_string())?;
            Encoded::from_bytes(&again).ok_or("no integrity line in the encoding")?
        }
    };
    Ok(Loaded {
        checkpoint: decoded.checkpoint,
        encoded,
    })
}

/// The integrity a file states, read without decoding it (`None` if it has none).
fn stated_integrity(files: &FileStore, s: &CheckpointSummary) -> Option<String> {
    checksum_in_file(&files.path_of(&s.id))
}

/// The integrity checksum the regular file at `path` states, read without decoding it: `None`
/// when it cannot be read (missing, not a regular file, too large) or states none.
pub(crate) fn checksum_in_file(path: &std::path::Path) -> Option<String> {
    let bytes = read_regular_file(path, Limits::default().max_bytes).ok()?;
    Encoded::from_bytes(&bytes).and_then(Encoded::into_integrity)
}

/// The files' summaries grouped by execution, each group oldest first: the order that keeps
/// lines long (a child comes right after its parent).
fn in_save_order(files: &FileStore) -> Result<Vec<CheckpointSummary>> {
    let mut all = files.list(&ListFilter::default())?;
    all.sort_by(|a, b| {
        (&a.execution_id, a.timestamp, &a.id).cmp(&(&b.execution_id, b.timestamp, &b.id))
    });
    Ok(all)
}

impl SqlStore {
    /// Brings in the checkpoints of `files` that the database lacks or holds with other content
    /// (saved elsewhere, or while the database was unreachable). A file is only decoded when its
    /// stated checksum differs from the database's. One transaction per checkpoint. Ids the
    /// database has and the files do not are reported as [`SyncReport::orphaned`], not deleted.
    /// Files that cannot be read (those [`FileStore::problems`] found, and any that fail now)
    /// are skipped and reported in [`SyncReport::problems`]; the caller decides whether that is
    /// a failure.
    pub fn sync_from(&self, files: &FileStore) -> Result<SyncReport> {
        let mut report = SyncReport {
            problems: unreadable(files),
            ..SyncReport::default()
        };
        let known: HashMap<String, String> = {
            let mut inner = self.lock();
            let backend = inner.conn.backend();
            checkpoints::table
                .select((checkpoints::id, checkpoints::integrity))
                .load::<(String, String)>(&mut inner.conn)
                .map_err(SqlError::query(backend, "reading checkpoint checksums"))?
                .into_iter()
                .collect()
        };
        let summaries = in_save_order(files)?;
        let mut seen = std::collections::HashSet::new();
        for s in &summaries {
            seen.insert(s.id.as_str());
            if let Some(db) = known.get(s.id.as_str()) {
                if stated_integrity(files, s).as_ref() == Some(db) {
                    report.unchanged += 1;
                    continue;
                }
            }
            let loaded = match read(files, s) {
                Ok(l) => l,
                Err(error) => {
                    report.problems.push(FileProblem {
                        id: s.id.to_string(),
                        path: files.path_of(&s.id).display().to_string(),
                        error,
                    });
                    continue;
                }
            };
            match self.store_encoded(&loaded.checkpoint, &loaded.encoded)? {
                SyncOutcome::Added => report.added += 1,
                SyncOutcome::Unchanged => report.unchanged += 1,
                SyncOutcome::Replaced => report.replaced += 1,
            }
        }
        let mut orphaned: Vec<String> = known
            .into_keys()
            .filter(|id| !seen.contains(id.as_str()))
            .collect();
        orphaned.sort();
        report.orphaned = orphaned;
        report.skipped = report.problems.len() as u64;
        Ok(report)
    }

    /// Rebuilds the database from `files`: empties it, then saves every checkpoint, execution
    /// by execution, oldest first. All in one transaction: if it fails, the database is as it
    /// was. Files that cannot be read (those [`FileStore::problems`] found, and any that fail
    /// now) are skipped and reported in [`ReindexReport::problems`].
    pub fn reindex_from(&self, files: &FileStore) -> Result<ReindexReport> {
        let summaries = in_save_order(files)?;
        let mut report = ReindexReport {
            problems: unreadable(files),
            ..ReindexReport::default()
        };
        let mut executions: BTreeMap<String, ()> = BTreeMap::new();
        let result = self.with_tx(TxMode::Write, |conn, cache| {
            delete_everything(conn, cache)?;
            for s in &summaries {
                let loaded = match read(files, s) {
                    Ok(l) => l,
                    Err(error) => {
                        report.problems.push(FileProblem {
                            id: s.id.to_string(),
                            path: files.path_of(&s.id).display().to_string(),
                            error,
                        });
                        continue;
                    }
                };
                let saved = save_in_tx(conn, cache, &loaded.checkpoint, &loaded.encoded)?;
                // Within this one transaction the tips are current as soon as written.
                if let Some(tip) = saved.tip {
                    cache.put(tip);
                }
                report.checkpoints += 1;
                executions.insert(loaded.checkpoint.execution_id.to_string(), ());
            }
            Ok(())
        });
        if let Err(e) = result {
            self.lock().cache.clear();
            return Err(e);
        }
        report.executions = executions.len() as u64;
        report.skipped = report.problems.len() as u64;
        Ok(report)
    }
}
