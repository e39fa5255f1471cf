//! Loading one checkpoint: its `checkpoints` row, then the item and entry revisions visible at
//! its place in its line.

use crate::checkpoint::checkpoint_row::{CheckpointRow, Place};
use crate::checkpoint::entry_revisions;
use crate::checkpoint::entry_since::EntrySince;
use crate::checkpoint::item_revisions::{load_items, Steps, Thoughts, ToolCalls};
use crate::connection::AnyConnection;
use crate::error::{Result, SqlError};
use crate::schema::checkpoints;
use caf_core::format::Checkpoint;
use caf_core::CheckpointId;
use diesel::prelude::*;

/// Loads a checkpoint in the open (read) transaction; `None` if there is none with this id.
pub(crate) fn load_in_tx(
    conn: &mut AnyConnection,
    id: &CheckpointId,
) -> Result<Option<Checkpoint>> {
    Ok(load_parts_in_tx(conn, id)?.map(|(c, _)| c))
}

/// [`load_in_tx`], with where the revisions of the checkpoint's entries start (for a save that
/// continues it: see [`EntrySince`]); damage there is an error.
pub(crate) fn load_with_since_in_tx(
    conn: &mut AnyConnection,
    id: &CheckpointId,
) -> Result<Option<(Checkpoint, EntrySince)>> {
    let Some((c, since)) = load_parts_in_tx(conn, id)? else {
        return Ok(None);
    };
    let since = since.map_err(|message| SqlError::Corrupt {
        backend: conn.backend(),
        what: format!("checkpoint {id}"),
        message,
    })?;
    Ok(Some((c, since)))
}

/// The checkpoint, and where the revisions of its entries start or why that does not add up.
fn load_parts_in_tx(
    conn: &mut AnyConnection,
    id: &CheckpointId,
) -> Result<Option<(Checkpoint, std::result::Result<EntrySince, String>)>> {
    let backend = conn.backend();
    let what = format!("checkpoint {id}");
    let damaged = |message: String| SqlError::Corrupt {
        backend,
        what: what.clone(),
        message,
    };
    let row: Option<CheckpointRow> = checkpoints::table
        .select(CheckpointRow::as_select())
        .filter(checkpoints::id.eq(id.as_str()))
        // The key finds one row at most; `first`'s `LIMIT ?` would make SQLite prepare the
        // statement again on every load.
        .get_result(conn)
        .optional()
        .map_err(SqlError::query(backend, format!("loading {id}")))?;
    let Some(row) = row else { return Ok(None) };
    let rest = row.rest().map_err(|d| damaged(d.0))?;
    let Place { line_id, seq } = row.place();
    let thoughts = load_items::<Thoughts>(conn, line_id, seq, row.thought_count)
        .map_err(|e| e.of_checkpoint(backend, id.as_str()))?;
    let calls = load_items::<ToolCalls>(conn, line_id, seq, row.call_count)
        .map_err(|e| e.of_checkpoint(backend, id.as_str()))?;
    let steps = load_items::<Steps>(conn, line_id, seq, row.step_count)
        .map_err(|e| e.of_checkpoint(backend, id.as_str()))?;
    let (parts, since) = entry_revisions::load(conn, line_id, seq, &rest.parts)
        .map_err(|e| e.of_checkpoint(backend, id.as_str()))?;
    let stored = row
        .into_checkpoint(rest, thoughts, calls, steps, parts)
        .map_err(|d| damaged(d.0))?;
    // A row written by an older caf holds an older format version: it loads as the current one.
    caf_core::format::upgrade(stored)
        .map(|c| Some((c, since)))
        .map_err(|e| damaged(e.to_string()))
}
