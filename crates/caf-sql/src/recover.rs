//! What opening a [`HybridStore`](crate::HybridStore) does about the files its records of
//! unflushed files name (see [`crate::unflushed`]): after a power loss they may be missing or
//! torn, and a delete may have been cut between its database commit and its file's removal.

use crate::error::SqlError;
use crate::unflushed;
use crate::SqlStore;
use caf_core::format::encode;
use caf_core::store::{read_regular_file, Fs};
use caf_core::{CheckpointId, CheckpointStore, Error, FileStore, Result};
use std::collections::BTreeMap;

/// What opening a hybrid store did for the files the last saves and deletes before a power
/// loss may have left missing, torn or half deleted.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Files written again from the database.
    pub rewritten: Vec<CheckpointId>,
    /// Torn files of checkpoints the database no longer holds (a delete committed, its file
    /// not yet removed when the power went): removed, which finishes the delete.
    pub removed: Vec<CheckpointId>,
    /// Whole files of checkpoints the database no longer holds (a delete cut short the same
    /// way): put back into the database, which undoes the delete.
    pub restored_rows: Vec<CheckpointId>,
    /// Files that could not be written again or removed, and why (their records stay).
    pub failed: Vec<(CheckpointId, String)>,
}

impl Recovery {
    /// Whether a file changed (the file store must be opened again to see it).
    pub(crate) fn changed_files(&self) -> bool {
        !self.rewritten.is_empty() || !self.removed.is_empty()
    }
}

/// Checks the files recorded as unflushed: those of an earlier boot (a power loss came between)
/// against their database copy, byte for byte; those of this boot only for being there (a
/// writer killed between its commit and its rename). Any that differs is written again from
/// the database. A file of an earlier boot whose checkpoint the database no longer holds was
/// being deleted: a torn one is removed, a whole one goes back into the database. Then the file
/// system is synced before the earlier boot's records are forgotten.
pub(crate) fn recover<F: Fs>(
    files: &FileStore<F>,
    sql: &SqlStore,
    store_id: &str,
    boot: Option<&str>,
) -> Result<Recovery> {
    let rows = sql
        .with_conn(|c| unflushed::of_store(c, store_id))
        .map_err(SqlError::query(sql.backend(), "reading unflushed files"))?;
    // One check per file, of an earlier boot if any of its records is.
    let mut ids: BTreeMap<CheckpointId, bool> = BTreeMap::new();
    for row in &rows {
        if let Ok(id) = CheckpointId::new(&row.checkpoint_id) {
            *ids.entry(id).or_default() |= Some(row.boot_id.as_str()) != boot;
        }
    }
    let earlier_boot = ids.values().any(|earlier| *earlier);
    let mut out = Recovery::default();
    for (id, earlier) in ids {
        let path = files.path_of(&id);
        if !earlier && std::fs::symlink_metadata(&path).is_ok() {
            // A writer killed between its commit and its rename leaves the file it replaced:
            // a file that states the database's checksum is the one committed.
            let stated = crate::files::checksum_in_file(&path);
            if stated.is_some() && stated == sql.checksum_of(&id)? {
                continue;
            }
        }
        let checkpoint = match sql.load_checkpoint(&id) {
            Ok(c) => c,
            Err(SqlError::NotFound { .. }) if earlier => {
                settle_delete(files, sql, id, &mut out);
                continue;
            }
            // Deleted since, in this boot: nothing to write.
            Err(SqlError::NotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        let bytes = encode(&checkpoint).map_err(|error| Error::Encode {
            id: id.to_string(),
            error,
        })?;
        let whole = read_regular_file(&path, bytes.len() as u64).is_ok_and(|b| b == bytes);
        if whole {
            continue;
        }
        // As it is, not redacted again: the file is to be its database copy, byte for byte.
        let rewritten = files
            .stage_as_is(&checkpoint, &bytes)
            .and_then(|staged| files.publish(staged));
        match rewritten {
            Ok(_) => out.rewritten.push(id),
            Err(e) => out.failed.push((id, e.to_string())),
        }
    }
    if out.changed_files() || earlier_boot {
        unflushed::sync_file_system(files.fs(), files.root())?;
    }
    if earlier_boot && out.failed.is_empty() {
        sql.with_conn(|c| unflushed::forget_earlier_boots(c, store_id, boot.unwrap_or("")))
            .map_err(SqlError::query(sql.backend(), "forgetting checked files"))?;
    }
    Ok(out)
}

/// The file of a checkpoint the database no longer holds, recorded in an earlier boot: its
/// delete committed in the database, and the power went before the removal of its file was on
/// the disk. A whole file goes back into the database (the delete never returned: undoing it
/// loses nothing); a torn one, which no copy can mend, is removed.
fn settle_delete<F: Fs>(
    files: &FileStore<F>,
    sql: &SqlStore,
    id: CheckpointId,
    out: &mut Recovery,
) {
    let path = files.path_of(&id);
    if std::fs::symlink_metadata(&path).is_err() {
        return;
    }
    match files.load(&id) {
        Ok(checkpoint) => {
            let restored = encode(&checkpoint)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    sql.sync_encoded(&checkpoint, &bytes)
                        .map_err(|e| e.to_string())
                });
            match restored {
                Ok(_) => out.restored_rows.push(id),
                Err(e) => out.failed.push((id, e)),
            }
        }
        Err(Error::Load { .. }) => match files.delete(&id) {
            Ok(_) => out.removed.push(id),
            Err(e) => out.failed.push((id, e.to_string())),
        },
        Err(e) => out.failed.push((id, e.to_string())),
    }
}
