//! Deleting checkpoints and collecting the item revisions no checkpoint can see any more.
//!
//! Deleting a checkpoint keeps every revision another checkpoint of its line still shows, and
//! deletes the ones only it showed. A line whose tip is deleted is `sealed`: nothing continues
//! it, so a revision closed at the old tip stays closed and seq numbers are never reused. A line with no checkpoint left goes with all its rows.

use crate::checkpoint::line_cache::LineCache;
use crate::connection::AnyConnection;
use crate::error::{Result, SqlError};
use crate::executions::refresh_execution;
use crate::schema::{
    checkpoint_labels, checkpoints, entries, executions, lines, steps, thoughts, tool_calls,
};
use crate::statement::Stmt;
use caf_core::{CheckpointId, ExecutionId};
use diesel::prelude::*;

const ITEM_TABLES: [&str; 4] = ["thoughts", "tool_calls", "steps", "entries"];

/// Deletes one checkpoint in the open write transaction; `false` if there is none.
pub(crate) fn delete_in_tx(
    conn: &mut AnyConnection,
    cache: &mut LineCache,
    id: &CheckpointId,
) -> Result<bool> {
    let backend = conn.backend();
    let fail = |what: &str| SqlError::query(backend, format!("deleting {id}: {what}"));
    let row: Option<(String, i64, i64)> = checkpoints::table
        .select((
            checkpoints::execution_id,
            checkpoints::line_id,
            checkpoints::seq,
        ))
        .filter(checkpoints::id.eq(id.as_str()))
        .first(conn)
        .optional()
        .map_err(fail("looking it up"))?;
    let Some((execution, line, seq)) = row else {
        return Ok(false);
    };
    conn.lock_execution(&execution)?;
    cache.forget_line(line);
    diesel::delete(
        checkpoint_labels::table.filter(checkpoint_labels::checkpoint_id.eq(id.as_str())),
    )
    .execute(conn)
    .map_err(fail("its labels"))?;
    diesel::delete(checkpoints::table.filter(checkpoints::id.eq(id.as_str())))
        .execute(conn)
        .map_err(fail("its row"))?;
    collect_line(conn, line, seq, id.as_str()).map_err(fail("collecting its line"))?;
    refresh_execution(conn, &execution)?;
    Ok(true)
}

/// After checkpoint `deleted` at `seq` left `line`: drops what only it showed, re-points
/// `first_checkpoint_id`, seals or drops the line.
fn collect_line(conn: &mut AnyConnection, line: i64, seq: i64, deleted: &str) -> QueryResult<()> {
    let left: i64 = checkpoints::table
        .filter(checkpoints::line_id.eq(line))
        .count()
        .get_result(conn)?;
    if left == 0 {
        diesel::delete(thoughts::table.filter(thoughts::line_id.eq(line))).execute(conn)?;
        diesel::delete(tool_calls::table.filter(tool_calls::line_id.eq(line))).execute(conn)?;
        diesel::delete(steps::table.filter(steps::line_id.eq(line))).execute(conn)?;
        diesel::delete(entries::table.filter(entries::line_id.eq(line))).execute(conn)?;
        diesel::delete(lines::table.filter(lines::id.eq(line))).execute(conn)?;
        return Ok(());
    }
    // The deleted checkpoint was the tip if no checkpoint of the line comes after it.
    Stmt::new(
        "UPDATE lines SET sealed = ? WHERE id = ? AND NOT EXISTS \
         (SELECT 1 FROM checkpoints WHERE line_id = ? AND seq > ?)",
    )
    .boolean(true)
    .int(line)
    .int(line)
    .int(seq)
    .execute(conn)?;
    // A revision is visible to checkpoint c when from_seq <= c.seq < to_seq.
    const VISIBLE: &str = "SELECT {what} FROM checkpoints c WHERE c.line_id = {t}.line_id \
         AND c.seq >= {t}.from_seq AND ({t}.to_seq IS NULL OR c.seq < {t}.to_seq)";
    for t in ITEM_TABLES {
        let visible = |what: &str| VISIBLE.replace("{t}", t).replace("{what}", what);
        let sql = format!(
            "DELETE FROM {t} WHERE line_id = ? AND from_seq <= ? \
             AND ({t}.to_seq IS NULL OR {t}.to_seq > ?) AND NOT EXISTS ({})",
            visible("1")
        );
        Stmt::new(sql).int(line).int(seq).int(seq).execute(conn)?;
        let sql = format!(
            "UPDATE {t} SET first_checkpoint_id = COALESCE(({} ORDER BY c.seq LIMIT 1), \
             first_checkpoint_id) WHERE line_id = ? AND first_checkpoint_id = ?",
            visible("c.id")
        );
        Stmt::new(sql).int(line).text(deleted).execute(conn)?;
    }
    Ok(())
}

/// Deletes every checkpoint of an execution (and all its rows) in the open write transaction;
/// returns how many checkpoints there were.
pub(crate) fn delete_execution_in_tx(
    conn: &mut AnyConnection,
    cache: &mut LineCache,
    execution: &ExecutionId,
) -> Result<usize> {
    let backend = conn.backend();
    let e = execution.as_str();
    let fail = |what: &str| SqlError::query(backend, format!("deleting execution {e}: {what}"));
    conn.lock_execution(e)?;
    cache.forget_execution(e);
    let n: i64 = checkpoints::table
        .filter(checkpoints::execution_id.eq(e))
        .count()
        .get_result(conn)
        .map_err(fail("counting"))?;
    let ids = checkpoints::table
        .select(checkpoints::id)
        .filter(checkpoints::execution_id.eq(e));
    diesel::delete(checkpoint_labels::table.filter(checkpoint_labels::checkpoint_id.eq_any(ids)))
        .execute(conn)
        .map_err(fail("labels"))?;
    diesel::delete(checkpoints::table.filter(checkpoints::execution_id.eq(e)))
        .execute(conn)
        .map_err(fail("checkpoints"))?;
    // Items and entries are found by line: their keys start with `line_id` (a line holds one
    // execution's checkpoints).
    let lines_of = || {
        lines::table
            .select(lines::id)
            .filter(lines::execution_id.eq(e))
    };
    diesel::delete(thoughts::table.filter(thoughts::line_id.eq_any(lines_of())))
        .execute(conn)
        .map_err(fail("thoughts"))?;
    diesel::delete(tool_calls::table.filter(tool_calls::line_id.eq_any(lines_of())))
        .execute(conn)
        .map_err(fail("tool calls"))?;
    diesel::delete(steps::table.filter(steps::line_id.eq_any(lines_of())))
        .execute(conn)
        .map_err(fail("steps"))?;
    diesel::delete(entries::table.filter(entries::line_id.eq_any(lines_of())))
        .execute(conn)
        .map_err(fail("entries"))?;
    diesel::delete(lines::table.filter(lines::execution_id.eq(e)))
        .execute(conn)
        .map_err(fail("lines"))?;
    diesel::delete(executions::table.filter(executions::id.eq(e)))
        .execute(conn)
        .map_err(fail("the execution"))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Empties every table (for a reindex), in the open write transaction.
pub(crate) fn delete_everything(conn: &mut AnyConnection, cache: &mut LineCache) -> Result<()> {
    let backend = conn.backend();
    cache.clear();
    use diesel::connection::SimpleConnection;
    conn.batch_execute(
        "DELETE FROM checkpoint_labels; DELETE FROM checkpoints; DELETE FROM thoughts; \
         DELETE FROM tool_calls; DELETE FROM steps; DELETE FROM entries; DELETE FROM lines; DELETE FROM executions;",
    )
    .map_err(SqlError::query(backend, "emptying the database"))
}
