//! Listing checkpoint summaries with a [`ListFilter`], in SQL.

use crate::checkpoint::checkpoint_row::SummaryRow;
use crate::columns::{is_ambiguous, text};
use crate::connection::{AnyConnection, MultiBackend};
use crate::error::{Result, SqlError};
use crate::schema::{checkpoint_labels, checkpoints};
use caf_core::{CheckpointSummary, ListFilter};
use diesel::dsl::exists;
use diesel::prelude::*;

type Boxed<'a> = checkpoints::BoxedQuery<'a, MultiBackend>;

/// The checkpoints passing every filter but `before` and `limit`.
fn filtered<'a>(f: &'a ListFilter, agent: Option<&'a str>, label: Option<&'a str>) -> Boxed<'a> {
    let mut q = checkpoints::table.into_boxed::<MultiBackend>();
    if let Some(e) = &f.execution_id {
        q = q.filter(checkpoints::execution_id.eq(e.as_str()));
    }
    if let Some(a) = agent {
        q = q.filter(checkpoints::agent_id.eq(a));
    }
    if let Some(r) = &f.reason {
        q = q.filter(checkpoints::reason.eq(r.as_str()));
    }
    if let Some(l) = label {
        q = q.filter(exists(
            checkpoint_labels::table
                .filter(checkpoint_labels::checkpoint_id.eq(checkpoints::id))
                .filter(checkpoint_labels::label.eq(l)),
        ));
    }
    if let Some(t) = f.since {
        q = q.filter(checkpoints::timestamp.ge(t.as_micros()));
    }
    if let Some(t) = f.until {
        q = q.filter(checkpoints::timestamp.lt(t.as_micros()));
    }
    q
}

/// Lists summaries newest first, as [`ListFilter::apply`] would.
pub(crate) fn list_in(conn: &mut AnyConnection, f: &ListFilter) -> Result<Vec<CheckpointSummary>> {
    let backend = conn.backend();
    let fail = || SqlError::query(backend, "listing checkpoints");
    // A filter value with a NUL (or U+FFFD) could match a stored value whose column form
    // differs from it: filter those exactly, in memory, on the exact values.
    let exact_agent = f.agent_id.as_deref().is_some_and(is_ambiguous);
    let exact_label = f.label.as_deref().is_some_and(is_ambiguous);
    if exact_agent || exact_label {
        let agent = f.agent_id.as_deref().map(text);
        let label = f.label.as_deref().map(text);
        let rows: Vec<SummaryRow> = filtered(f, agent.as_deref(), label.as_deref())
            .select(SummaryRow::as_select())
            .load(conn)
            .map_err(fail())?;
        let all = summaries(backend, rows)?;
        return Ok(f.apply(all));
    }
    let (agent, label) = (f.agent_id.as_deref(), f.label.as_deref());
    let mut q = filtered(f, agent, label);
    if let Some(before) = &f.before {
        // The cursor must be a listed checkpoint; else nothing is older than it.
        let at: Option<i64> = filtered(f, agent, label)
            .select(checkpoints::timestamp)
            .filter(checkpoints::id.eq(before.as_str()))
            // One row at most (the key); no `LIMIT ?`, which SQLite re-prepares for.
            .get_result(conn)
            .optional()
            .map_err(fail())?;
        let Some(at) = at else { return Ok(Vec::new()) };
        q = q.filter(
            checkpoints::timestamp.lt(at).or(checkpoints::timestamp
                .eq(at)
                .and(checkpoints::id.lt(before.as_str()))),
        );
    }
    q = q.order((checkpoints::timestamp.desc(), checkpoints::id.desc()));
    let rows: Vec<SummaryRow> = match (f.limit, backend) {
        // SQLite reads rows as they are stepped: taking `limit` of them reads no more. A
        // `LIMIT ?` would cost more than it saves: SQLite prepares a statement again each time
        // a value that could change its plan (a limit) is bound.
        (Some(limit), crate::Backend::Sqlite) => q
            .select(SummaryRow::as_select())
            .load_iter::<SummaryRow, diesel::connection::DefaultLoadingMode>(conn)
            .map_err(fail())?
            .take(limit)
            .collect::<QueryResult<_>>()
            .map_err(fail())?,
        (limit, _) => {
            if let Some(limit) = limit {
                q = q.limit(i64::try_from(limit).unwrap_or(i64::MAX));
            }
            q.select(SummaryRow::as_select())
                .load(conn)
                .map_err(fail())?
        }
    };
    summaries(backend, rows)
}

/// The summary of one checkpoint, if it is stored.
pub(crate) fn summary_in(
    conn: &mut AnyConnection,
    id: &caf_core::CheckpointId,
) -> Result<Option<CheckpointSummary>> {
    let backend = conn.backend();
    let row: Option<SummaryRow> = checkpoints::table
        .filter(checkpoints::id.eq(id.as_str()))
        .select(SummaryRow::as_select())
        // Not `first`: its `LIMIT ?` makes SQLite prepare the statement again each time (the
        // key finds one row at most).
        .get_result(conn)
        .optional()
        .map_err(SqlError::query(backend, "reading a checkpoint summary"))?;
    Ok(summaries(backend, row.into_iter().collect())?.pop())
}

fn summaries(backend: crate::Backend, rows: Vec<SummaryRow>) -> Result<Vec<CheckpointSummary>> {
    rows.into_iter()
        .map(|r| {
            let id = r.id.clone();
            r.into_summary().map_err(|d| SqlError::Corrupt {
                backend,
                what: format!("checkpoint {id}"),
                message: d.0,
            })
        })
        .collect()
}
