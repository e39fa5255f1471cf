//! The database as a second copy of the files: the intact database copy of a checkpoint whose
//! file is damaged ([`SqlStore::intact_copy`]), and how far a directory and a database agree,
//! told cheaply from the index's and the database's checksums ([`SqlStore::compare_with_files`]).

use crate::error::{Result, SqlError};
use crate::schema::checkpoints;
use crate::SqlStore;
use caf_core::format::{decode, encode, Checkpoint, Limits};
use caf_core::store::{read_regular_file, stated_integrity};
use caf_core::{CheckpointId, FileStore};
use diesel::prelude::*;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// An intact database copy of a checkpoint: the checkpoint, and its encoding — what its file
/// holds, byte for byte ([`caf_core::format::encode`] is deterministic).
#[derive(Debug, Clone, PartialEq)]
pub struct DatabaseCopy {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Its encoding, whose integrity checksum is the one the database stores for it.
    pub bytes: Vec<u8>,
}

/// The checksum the damaged file at `path`, meant to hold checkpoint `id`, still states on its
/// `integrity` line: what a copy of the same version has. `None` when that says nothing about
/// `id`'s version: the file cannot be read (missing, not a regular file, too large), has no such
/// line, or holds another checkpoint whole (it was copied over `id`'s file).
fn damaged_file_checksum(path: &Path, id: &CheckpointId) -> Option<String> {
    let limits = Limits::default();
    let bytes = read_regular_file(path, limits.max_bytes).ok()?;
    if decode(&bytes, &limits).is_ok_and(|d| &d.checkpoint.id != id) {
        return None;
    }
    stated_integrity(&bytes)
}

/// Where a directory's files and a database disagree, told from the file store's index and the
/// database's checksums alone (no checkpoint is decoded). See [`SqlStore::compare_with_files`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    /// Checkpoints whose file is listed but that the database lacks.
    pub only_in_files: Vec<CheckpointId>,
    /// Checkpoints in the database with no file at all (a database shared with other
    /// directories holds these normally).
    pub only_in_database: Vec<CheckpointId>,
    /// Checkpoints in the database whose file is damaged: the database still counts them.
    pub damaged_files: Vec<CheckpointId>,
    /// Checkpoints in both whose checksums differ.
    pub different: Vec<CheckpointId>,
}

impl Disagreement {
    /// How many checkpoints disagree, counting those only in the database when
    /// `count_only_in_database` (a database that belongs to the directory alone).
    pub fn count(&self, count_only_in_database: bool) -> usize {
        let extra = if count_only_in_database {
            self.only_in_database.len()
        } else {
            0
        };
        self.only_in_files.len() + self.damaged_files.len() + self.different.len() + extra
    }
}

impl SqlStore {
    /// Every checkpoint's id and the integrity checksum the database stores for it (that of the
    /// checkpoint's encoding, which is what its file states).
    pub fn checksums(&self) -> Result<HashMap<CheckpointId, String>> {
        let rows: Vec<(String, String)> = self.on_conn(|inner| {
            let backend = inner.conn.backend();
            checkpoints::table
                .select((checkpoints::id, checkpoints::integrity))
                .load(&mut inner.conn)
                .map_err(SqlError::query(backend, "reading checkpoint checksums"))
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, integrity)| Some((CheckpointId::new(id).ok()?, integrity)))
            .collect())
    }

    /// The integrity checksum the database stores for checkpoint `id`, if it holds it.
    pub(crate) fn checksum_of(&self, id: &CheckpointId) -> Result<Option<String>> {
        let rows: Vec<String> = self.on_conn(|inner| {
            let backend = inner.conn.backend();
            checkpoints::table
                .select(checkpoints::integrity)
                .filter(checkpoints::id.eq(id.as_str()))
                .load(&mut inner.conn)
                .map_err(SqlError::query(backend, "reading a checkpoint's checksum"))
        })?;
        Ok(rows.into_iter().next())
    }

    /// The database's copy of checkpoint `id`, if it holds an intact one: the rows load, and the
    /// loaded checkpoint encodes to the checksum the database stores for it. With `expected`
    /// (what a damaged file still states on its `integrity` line), only a copy of that same
    /// version is returned — otherwise the database holds another version of the checkpoint,
    /// and this returns `None` rather than substitute it. Damaged rows give `None`; only a
    /// failing database is an error.
    pub fn intact_copy(
        &self,
        id: &CheckpointId,
        expected: Option<&str>,
    ) -> Result<Option<DatabaseCopy>> {
        let Some(stored) = self.checksum_of(id)? else {
            return Ok(None);
        };
        if expected.is_some_and(|e| e != stored) {
            return Ok(None);
        }
        let checkpoint = match self.load_checkpoint(id) {
            Ok(c) => c,
            Err(SqlError::Corrupt { .. } | SqlError::NotFound { .. } | SqlError::Core(_)) => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        let Ok(bytes) = encode(&checkpoint) else {
            return Ok(None);
        };
        if stated_integrity(&bytes).as_deref() != Some(stored.as_str()) {
            return Ok(None);
        }
        Ok(Some(DatabaseCopy { checkpoint, bytes }))
    }

    /// The database's intact copy of checkpoint `id` whose file at `path` cannot be loaded
    /// (see [`SqlStore::intact_copy`]): when the damaged file still states its checksum, only a
    /// copy of that same version.
    pub fn copy_of_damaged_file(
        &self,
        path: &Path,
        id: &CheckpointId,
    ) -> Result<Option<DatabaseCopy>> {
        self.intact_copy(id, damaged_file_checksum(path, id).as_deref())
    }

    /// Compares the checkpoints of `files` with the database's, from the file store's index
    /// (ids and the checksums it records) and the database's checksums: cheap, no checkpoint
    /// is decoded. A file whose checksum the index does not know (a file in an older format)
    /// counts as agreeing when the database has its id. Damaged files are those `files` found
    /// when it was opened ([`FileStore::problems`]).
    pub fn compare_with_files(&self, files: &FileStore) -> Result<Disagreement> {
        let indexed = files.indexed_checksums()?;
        let in_db = self.checksums()?;
        let damaged: BTreeSet<CheckpointId> = files
            .problems()
            .iter()
            .filter_map(|p| {
                let stem = p.path.file_stem()?.to_str()?;
                CheckpointId::new(stem).ok()
            })
            .collect();
        let mut out = Disagreement::default();
        for (id, checksum) in &indexed {
            match (in_db.get(id), checksum) {
                (None, _) => out.only_in_files.push(id.clone()),
                (Some(db), Some(file)) if db != file => out.different.push(id.clone()),
                _ => {}
            }
        }
        for id in in_db.keys() {
            if indexed.contains_key(id) {
                continue;
            }
            if damaged.contains(id) {
                out.damaged_files.push(id.clone());
            } else {
                out.only_in_database.push(id.clone());
            }
        }
        for v in [
            &mut out.only_in_files,
            &mut out.only_in_database,
            &mut out.damaged_files,
            &mut out.different,
        ] {
            v.sort();
        }
        Ok(out)
    }
}
