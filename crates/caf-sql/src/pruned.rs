//! The `pruned` table: tombstones of pruned checkpoints (see `caf_core::prune`), so that a
//! database-only store keeps lineage readable after a prune, as a directory does with
//! `DIR/.caf/pruned.jsonl`.

use crate::connection::AnyConnection;
use crate::error::{Result, SqlError};
use crate::schema::pruned;
use caf_core::prune::Tombstone;
use caf_core::{CheckpointId, ExecutionId, Timestamp};
use diesel::prelude::*;
use std::collections::HashMap;

/// Records tombstones (replacing any of the same id).
pub(crate) fn record(conn: &mut AnyConnection, stones: &[Tombstone]) -> Result<()> {
    let backend = conn.backend();
    let fail = || SqlError::query(backend, "recording pruned checkpoints");
    for t in stones {
        diesel::delete(pruned::table.filter(pruned::id.eq(t.id.as_str())))
            .execute(conn)
            .map_err(fail())?;
        diesel::insert_into(pruned::table)
            .values((
                pruned::id.eq(t.id.as_str()),
                pruned::parent_id.eq(t.parent_id.as_ref().map(CheckpointId::as_str)),
                pruned::execution_id.eq(t.execution_id.as_str()),
                pruned::timestamp.eq(t.timestamp.as_micros()),
                pruned::pruned_at.eq(t.pruned_at.as_micros()),
            ))
            .execute(conn)
            .map_err(fail())?;
    }
    Ok(())
}

/// Every tombstone, by id (a row whose ids are no longer valid is skipped).
pub(crate) fn load(conn: &mut AnyConnection) -> Result<HashMap<CheckpointId, Tombstone>> {
    let backend = conn.backend();
    type Row = (String, Option<String>, String, i64, i64);
    let rows: Vec<Row> = pruned::table
        .select((
            pruned::id,
            pruned::parent_id,
            pruned::execution_id,
            pruned::timestamp,
            pruned::pruned_at,
        ))
        .load(conn)
        .map_err(SqlError::query(backend, "reading pruned checkpoints"))?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, parent, exec, at, pruned_at)| {
            let stone = Tombstone {
                id: CheckpointId::new(id).ok()?,
                parent_id: match parent {
                    Some(p) => Some(CheckpointId::new(p).ok()?),
                    None => None,
                },
                execution_id: ExecutionId::new(exec).ok()?,
                timestamp: Timestamp::from_micros(at),
                pruned_at: Timestamp::from_micros(pruned_at),
            };
            Some((stone.id.clone(), stone))
        })
        .collect())
}
