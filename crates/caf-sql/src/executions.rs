//! The `executions` table: one summary row per execution, derived from its checkpoints.
//!
//! `status` comes from the newest checkpoint's reason (`completed` → completed, `error` → failed,
//! `paused` → paused, anything else → running); `task` from its `context.variables.task` when
//! that is a string; `started_at` is the oldest checkpoint's time and `completed_at` the newest
//! one's when the execution completed or failed. The row goes when the last checkpoint goes.

use crate::checkpoint::checkpoint_row::task_of;
use crate::checkpoint::entry_revisions::task_at;
use crate::columns::text;
use crate::connection::{AnyConnection, Backend};
use crate::error::{Result, SqlError};
use crate::schema::{checkpoints, executions};
use crate::statement::fixed::execute;
use crate::statement::{shape, Param};
use caf_core::format::{Checkpoint, CheckpointReason};
use caf_core::ExecutionStatus;
use diesel::prelude::*;
use std::borrow::Cow;

/// The status of an execution whose newest checkpoint was taken for `reason` (as stored).
pub(crate) fn status_of(reason: &str) -> ExecutionStatus {
    reason
        .parse::<CheckpointReason>()
        .map_or(ExecutionStatus::Running, |r| {
            ExecutionStatus::from_reason(&r)
        })
}

/// The status stored in an `executions` row (an unknown text, from a hand edit, reads as
/// running: nothing says the run ended).
pub(crate) fn status_from_column(s: &str) -> ExecutionStatus {
    s.parse().unwrap_or(ExecutionStatus::Running)
}

shape!(
    /// Creates an execution's row unless it has one.
    EnsureExecution,
    "INSERT INTO executions (id, agent_id, task, started_at, status) VALUES (?, ?, ?, ?, ?) \
     ON CONFLICT (id) DO NOTHING"
);

shape!(
    /// Updates an execution's row from its checkpoint if that is its newest and the row already
    /// has its agent and status (the usual case): the indexed columns are left out of `SET`,
    /// so their indexes are not rewritten.
    SavedNewestSameStatus,
    "UPDATE executions SET task = ?, completed_at = ?, last_checkpoint_id = ?, \
     last_checkpoint_at = ?, started_at = CASE WHEN started_at > ? THEN ? ELSE started_at END \
     WHERE id = ? AND agent_id = ? AND status = ? AND (last_checkpoint_at IS NULL \
     OR last_checkpoint_at < ? OR (last_checkpoint_at = ? AND last_checkpoint_id < ?))"
);

shape!(
    /// Updates an execution's row from its checkpoint if that is its newest.
    SavedNewest,
    "UPDATE executions SET agent_id = ?, task = ?, status = ?, completed_at = ?, \
     last_checkpoint_id = ?, last_checkpoint_at = ?, \
     started_at = CASE WHEN started_at > ? THEN ? ELSE started_at END \
     WHERE id = ? AND (last_checkpoint_at IS NULL OR last_checkpoint_at < ? \
     OR (last_checkpoint_at = ? AND last_checkpoint_id < ?))"
);

shape!(
    /// Moves an execution's start back to an older checkpoint's time.
    SavedOlder,
    "UPDATE executions SET started_at = ? WHERE id = ? AND started_at > ?"
);

/// Creates the execution's row if it has none yet (before its first checkpoint goes in).
pub(crate) fn ensure_execution(conn: &mut AnyConnection, c: &Checkpoint) -> Result<()> {
    let backend = conn.backend();
    let id = c.execution_id.as_str();
    let agent = text(&c.agent_id);
    let task = task_of(c);
    execute::<EnsureExecution>(
        conn,
        &[
            Param::Text(id),
            Param::Text(&agent),
            Param::Text(&task),
            Param::Int(c.timestamp.as_micros()),
            Param::Text(ExecutionStatus::Running.as_str()),
        ],
    )
    .map_err(SqlError::query(
        backend,
        format!("execution {id}: creating it"),
    ))?;
    Ok(())
}

/// What a saved checkpoint sets in its execution's row.
pub(crate) struct ExecutionUpdate<'a> {
    id: &'a str,
    checkpoint_id: &'a str,
    agent: Cow<'a, str>,
    task: String,
    status: ExecutionStatus,
    at: i64,
    completed_at: Option<i64>,
}

impl<'a> ExecutionUpdate<'a> {
    /// What `c` sets.
    pub fn of(c: &'a Checkpoint) -> Self {
        let at = c.timestamp.as_micros();
        let status = ExecutionStatus::from_reason(&c.metadata.checkpoint_reason);
        Self {
            id: c.execution_id.as_str(),
            checkpoint_id: c.id.as_str(),
            agent: text(&c.agent_id),
            task: task_of(c),
            status,
            at,
            completed_at: status.is_finished().then_some(at),
        }
    }

    /// The values of the usual update, [`SavedNewestSameStatus`] (also part of PostgreSQL's
    /// one-statement save, in the same order).
    pub fn same_status_values(&self) -> [Param<'_>; 12] {
        let at = self.at;
        [
            Param::Text(&self.task),
            Param::OptInt(self.completed_at),
            Param::Text(self.checkpoint_id),
            Param::Int(at),
            Param::Int(at),
            Param::Int(at),
            Param::Text(self.id),
            Param::Text(&self.agent),
            Param::Text(self.status.as_str()),
            Param::Int(at),
            Param::Int(at),
            Param::Text(self.checkpoint_id),
        ]
    }

    fn fail(
        &self,
        backend: Backend,
        what: &'static str,
    ) -> impl FnOnce(diesel::result::Error) -> SqlError + '_ {
        move |source| SqlError::Query {
            backend,
            context: format!("execution {}: {what}", self.id),
            source,
        }
    }

    /// Updates the execution's row after its checkpoint was saved, in one statement when that
    /// is its newest checkpoint and the agent and status stay (the usual case).
    pub fn write(&self, conn: &mut AnyConnection) -> Result<()> {
        let backend = conn.backend();
        let same = execute::<SavedNewestSameStatus>(conn, &self.same_status_values())
            .map_err(self.fail(backend, "updating it"))?;
        if same == 1 {
            return Ok(());
        }
        self.write_in_full(conn)
    }

    /// Updates the execution's row when the usual update changed nothing: all of it when the
    /// checkpoint is the newest (its agent or status differ), else only `started_at` can
    /// change.
    pub fn write_in_full(&self, conn: &mut AnyConnection) -> Result<()> {
        let backend = conn.backend();
        let at = self.at;
        let newest = execute::<SavedNewest>(
            conn,
            &[
                Param::Text(&self.agent),
                Param::Text(&self.task),
                Param::Text(self.status.as_str()),
                Param::OptInt(self.completed_at),
                Param::Text(self.checkpoint_id),
                Param::Int(at),
                Param::Int(at),
                Param::Int(at),
                Param::Text(self.id),
                Param::Int(at),
                Param::Int(at),
                Param::Text(self.checkpoint_id),
            ],
        )
        .map_err(self.fail(backend, "updating it"))?;
        if newest == 0 {
            execute::<SavedOlder>(
                conn,
                &[Param::Int(at), Param::Text(self.id), Param::Int(at)],
            )
            .map_err(self.fail(backend, "updating its start"))?;
        }
        Ok(())
    }
}

/// Brings the execution's row in line with its checkpoints (deleting it if there are none),
/// after a delete.
pub(crate) fn refresh_execution(conn: &mut AnyConnection, id: &str) -> Result<()> {
    let backend = conn.backend();
    let fail = |what: &str| SqlError::query(backend, format!("execution {id}: {what}"));
    type Newest = (String, i64, String, String, i64, i64, String);
    let newest: Option<Newest> = checkpoints::table
        .select((
            checkpoints::id,
            checkpoints::timestamp,
            checkpoints::reason,
            checkpoints::agent_id,
            checkpoints::line_id,
            checkpoints::seq,
            checkpoints::rest,
        ))
        .filter(checkpoints::execution_id.eq(id))
        .order((checkpoints::timestamp.desc(), checkpoints::id.desc()))
        .first(conn)
        .optional()
        .map_err(fail("finding its newest checkpoint"))?;
    let Some((newest_id, at, reason, agent, line, seq, rest)) = newest else {
        diesel::delete(executions::table.filter(executions::id.eq(id)))
            .execute(conn)
            .map_err(fail("deleting it"))?;
        return Ok(());
    };
    let started: Option<i64> = checkpoints::table
        .filter(checkpoints::execution_id.eq(id))
        .select(diesel::dsl::min(checkpoints::timestamp))
        .first(conn)
        .map_err(fail("finding its oldest checkpoint"))?;
    let task = match crate::checkpoint::checkpoint_row::task_in_rest(&rest) {
        Some(task) => task,
        None => task_at(conn, line, seq).map_err(fail("reading its task"))?,
    };
    let status = status_of(&reason);
    let completed_at = status.is_finished().then_some(at);
    diesel::update(executions::table.filter(executions::id.eq(id)))
        .set((
            executions::agent_id.eq(agent),
            executions::task.eq(task),
            executions::started_at.eq(started.unwrap_or(at)),
            executions::completed_at.eq(completed_at),
            executions::status.eq(status.as_str()),
            executions::last_checkpoint_id.eq(Some(newest_id)),
            executions::last_checkpoint_at.eq(Some(at)),
        ))
        .execute(conn)
        .map_err(fail("updating it"))?;
    Ok(())
}
