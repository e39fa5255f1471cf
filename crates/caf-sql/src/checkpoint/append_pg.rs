//! PostgreSQL's usual save in one statement: the checkpoint row on the condition that its
//! parent is still the line's tip, the revisions it closes and adds in every revision table, its
//! labels, and its execution's row — one round trip (after the execution's lock), where writing
//! them one by one takes seven.
//!
//! The statement is a chain of data-modifying `WITH` queries. Each one writes only if the
//! checkpoint row went in (`EXISTS (SELECT 1 FROM appended)`), so a stale tip writes nothing.
//! Rows of any number come as one array per column (`unnest`, [`crate::statement::arrays`]), so
//! the text never changes and stays prepared. The revisions of a table are added only after
//! its closed ones are closed (`(SELECT count(*) FROM closed_…) >= 0` reads them all first):
//! a position's new current revision must not meet its old one in the `…_current` unique
//! indexes. (All parts of one statement see the same snapshot; PostgreSQL's uniqueness checks
//! see the rows this statement already updated.)
//!
//! Planning the statement costs more than running it (about half a millisecond), and
//! PostgreSQL plans a prepared statement again on every run for as long as its plans for the
//! values at hand look cheaper than a generic one. So the save's transaction asks for generic
//! plans ([`lock_for_save`], with the execution's lock: no extra round trip), and the
//! statement is written so that its generic plan still looks each row up by index (positions
//! as `= ANY (…)` on the `…_current` indexes, one part of `entries` at a time).

use crate::checkpoint::changes::Changes;
use crate::checkpoint::checkpoint_row::{CheckpointRow, Place};
use crate::checkpoint::entry_revisions::PARTS;
use crate::connection::{AnyConnection, Backend};
use crate::error::{Result, SqlError};
use crate::executions::ExecutionUpdate;
use crate::statement::arrays::{columns, Array};
use crate::statement::fixed::{execute, load, Row};
use crate::statement::{shape, Param};
use diesel::sql_types::BigInt;
use diesel::QueryableByName;

/// Closes the current entries of one part (`to_seq`, line, positions): an index lookup per
/// position in `entries_current` whatever the plan (a join with a list of (part, position)
/// pairs may be planned as a scan of the line's current entries).
macro_rules! close_entries {
    ($name:literal, $part:literal) => {
        concat!(
            $name,
            " AS (UPDATE entries SET to_seq = ? WHERE EXISTS (SELECT 1 FROM appended) \
             AND line_id = ? AND part = '",
            $part,
            "' AND to_seq IS NULL AND position = ANY (?) RETURNING 1), "
        )
    };
}

/// Closes the current revisions of an item table (`to_seq`, line, positions).
macro_rules! close_items {
    ($name:literal, $table:literal) => {
        concat!(
            $name,
            " AS (UPDATE ",
            $table,
            " SET to_seq = ? WHERE EXISTS (SELECT 1 FROM appended) AND line_id = ? \
             AND to_seq IS NULL AND position = ANY (?) RETURNING 1), "
        )
    };
}

shape!(
    /// The whole save (see the module's documentation); returns whether the checkpoint row went
    /// in and whether the execution's row took the usual update.
    AppendOnPostgres,
    concat!(
        "WITH appended AS (",
        "INSERT INTO checkpoints (id, parent_id, execution_id, agent_id, \"timestamp\", version, \
         step_number, reason, tokens_used, duration_ms, name, labels, integrity, bytes, line_id, \
         seq, thought_count, call_count, step_count, exact, rest) \
         SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? \
         WHERE EXISTS (SELECT 1 FROM lines WHERE id = ? AND NOT sealed) \
         AND EXISTS (SELECT 1 FROM checkpoints WHERE id = ? AND line_id = ? AND seq = ?) \
         AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE line_id = ? AND seq > ?) \
         ON CONFLICT DO NOTHING RETURNING 1), ",
        close_entries!("closed_history", "history"),
        close_entries!("closed_memory", "memory"),
        close_entries!("closed_messages", "messages"),
        close_entries!("closed_pending_steps", "pending_steps"),
        close_entries!("closed_results", "results"),
        close_entries!("closed_state", "state"),
        close_entries!("closed_variables", "variables"),
        "closed_entries AS (SELECT 1 FROM closed_history UNION ALL SELECT 1 FROM closed_memory \
         UNION ALL SELECT 1 FROM closed_messages UNION ALL SELECT 1 FROM closed_pending_steps \
         UNION ALL SELECT 1 FROM closed_results UNION ALL SELECT 1 FROM closed_state \
         UNION ALL SELECT 1 FROM closed_variables), ",
        close_items!("closed_thoughts", "thoughts"),
        close_items!("closed_tool_calls", "tool_calls"),
        close_items!("closed_steps", "steps"),
        "new_entries AS (INSERT INTO entries (line_id, part, position, from_seq, execution_id, \
         first_checkpoint_id, \"key\", payload) \
         SELECT * FROM unnest(?, ?, ?, ?, ?, ?, ?, ?) \
         WHERE EXISTS (SELECT 1 FROM appended) \
         AND (SELECT count(*) FROM closed_entries) >= 0), ",
        "new_thoughts AS (INSERT INTO thoughts (line_id, position, from_seq, execution_id, id, \
         first_checkpoint_id, \"type\", content, confidence, parent_id, created_at, payload) \
         SELECT * FROM unnest(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         WHERE EXISTS (SELECT 1 FROM appended) \
         AND (SELECT count(*) FROM closed_thoughts) >= 0), ",
        "new_tool_calls AS (INSERT INTO tool_calls (line_id, position, from_seq, execution_id, \
         id, first_checkpoint_id, tool_id, args, result, success, error, status, started_at, \
         completed_at, payload) \
         SELECT * FROM unnest(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         WHERE EXISTS (SELECT 1 FROM appended) \
         AND (SELECT count(*) FROM closed_tool_calls) >= 0), ",
        "new_steps AS (INSERT INTO steps (line_id, position, from_seq, execution_id, \
         first_checkpoint_id, name, completed_at, payload) \
         SELECT * FROM unnest(?, ?, ?, ?, ?, ?, ?, ?) \
         WHERE EXISTS (SELECT 1 FROM appended) \
         AND (SELECT count(*) FROM closed_steps) >= 0), ",
        "new_labels AS (INSERT INTO checkpoint_labels (checkpoint_id, label) \
         SELECT * FROM unnest(?, ?) WHERE EXISTS (SELECT 1 FROM appended)), ",
        "execution AS (UPDATE executions SET task = ?, completed_at = ?, \
         last_checkpoint_id = ?, last_checkpoint_at = ?, \
         started_at = CASE WHEN started_at > ? THEN ? ELSE started_at END \
         WHERE EXISTS (SELECT 1 FROM appended) AND id = ? AND agent_id = ? AND status = ? \
         AND (last_checkpoint_at IS NULL OR last_checkpoint_at < ? \
         OR (last_checkpoint_at = ? AND last_checkpoint_id < ?)) RETURNING 1) ",
        "SELECT (SELECT count(*) FROM appended) AS appended, \
         (SELECT count(*) FROM execution) AS execution"
    )
);

shape!(
    /// The execution's lock (as [`AnyConnection::lock_execution`]), and generic plans for the
    /// rest of the transaction.
    LockForSave,
    "SELECT pg_advisory_xact_lock(hashtextextended(?, 0)), \
     set_config('plan_cache_mode', 'force_generic_plan', true)"
);

/// Takes the lock that serializes the writers of `execution` (until the transaction ends) and
/// makes the transaction's prepared statements run their generic plans.
pub(crate) fn lock_for_save(conn: &mut AnyConnection, execution: &str) -> Result<()> {
    execute::<LockForSave>(conn, &[Param::Text(execution)])
        .map(|_| ())
        .map_err(SqlError::query(
            Backend::Postgres,
            format!("locking execution {execution}"),
        ))
}

/// What [`AppendOnPostgres`] did.
#[derive(QueryableByName)]
struct Done {
    #[diesel(sql_type = BigInt)]
    appended: i64,
    #[diesel(sql_type = BigInt)]
    execution: i64,
}

/// What the one-statement save did.
pub(crate) struct Appended {
    /// The checkpoint went in (and with it everything else); `false`: nothing was written.
    pub appended: bool,
    /// The execution's row took the usual update; `false`: it still needs
    /// [`ExecutionUpdate::write_in_full`].
    pub execution_updated: bool,
}

/// Saves `row` as the child of `parent` (at `parent_place`), with `changes`, `labels` and
/// `execution`, in one statement, if `parent` is still the tip of its line.
pub(crate) fn append(
    conn: &mut AnyConnection,
    row: &CheckpointRow,
    parent: &str,
    parent_place: Place,
    changes: &Changes<'_>,
    labels: &[impl Row],
    execution: &ExecutionUpdate<'_>,
) -> diesel::QueryResult<Appended> {
    let (line, seq) = (parent_place.line_id, parent_place.seq);
    let ctx = changes.ctx;
    let closed_entries: Vec<Array<'_>> = PARTS
        .iter()
        .map(|part| {
            let closed = changes.entries.closed.iter();
            Array::Int(
                closed
                    .filter(|c| c.part == *part)
                    .map(|c| c.position)
                    .collect(),
            )
        })
        .collect();
    let closed_thoughts = Array::Int(changes.thoughts.closed.clone());
    let closed_calls = Array::Int(changes.tool_calls.closed.clone());
    let closed_steps = Array::Int(changes.steps.closed.clone());
    let entries = columns(&changes.entries.rows)?;
    let thoughts = columns(&changes.thoughts.rows)?;
    let calls = columns(&changes.tool_calls.rows)?;
    let steps = columns(&changes.steps.rows)?;
    let labels = columns(labels)?;
    let mut values: Vec<Param<'_>> = Vec::with_capacity(100);
    values.extend(row.values());
    values.extend([
        Param::Int(line),
        Param::Text(parent),
        Param::Int(line),
        Param::Int(seq),
        Param::Int(line),
        Param::Int(seq),
    ]);
    let closed_items = [&closed_thoughts, &closed_calls, &closed_steps];
    for closed in closed_entries.iter().chain(closed_items) {
        values.extend([
            Param::Int(ctx.seq),
            Param::Int(ctx.line_id),
            Param::Array(closed),
        ]);
    }
    for table in [&entries, &thoughts, &calls, &steps, &labels] {
        values.extend(table.iter().map(Param::Array));
    }
    values.extend(execution.same_status_values());
    let done: Vec<Done> = load::<AppendOnPostgres, _>(conn, &values)?;
    let done = done.first().ok_or(diesel::result::Error::NotFound)?;
    Ok(Appended {
        appended: done.appended == 1,
        execution_updated: done.execution == 1,
    })
}
