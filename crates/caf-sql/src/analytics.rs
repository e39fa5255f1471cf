//! [`SqlStore::stats`]: per-execution statistics, totals and averages.
//!
//! Every result is a plain serde-serializable struct (the command line prints them, or their
//! JSON with `--json`). Items are counted once each — a thought seen in 100 checkpoints is one
//! thought — and tool calls by their latest revision.

use crate::columns::uint;
use crate::connection::{AnyConnection, TxMode};
use crate::error::{Result, SqlError};
use crate::statement::Stmt;
use crate::SqlStore;
use caf_core::ExecutionStatus;
use caf_core::{ExecutionId, Timestamp};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use serde::Serialize;
use std::collections::BTreeMap;

/// Statistics of one execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionStats {
    /// The execution.
    pub execution_id: String,
    /// Its agent.
    pub agent_id: String,
    /// Its task (`context.variables.task` of its newest checkpoint, or empty).
    pub task: String,
    /// Where it stands (from its newest checkpoint's reason).
    pub status: ExecutionStatus,
    /// Its oldest checkpoint's time.
    pub started_at: Timestamp,
    /// Its newest checkpoint's time, once completed or failed.
    pub completed_at: Option<Timestamp>,
    /// Its newest checkpoint.
    pub last_checkpoint_id: Option<String>,
    /// How many checkpoints it has.
    pub checkpoints: u64,
    /// How many distinct thoughts (by id) its checkpoints hold.
    pub thoughts: u64,
    /// How many distinct tool calls (by id).
    pub tool_calls: u64,
    /// How many of those failed (latest revision).
    pub failed_tool_calls: u64,
    /// Distinct tool calls per tool.
    pub tool_calls_by_tool: BTreeMap<String, u64>,
    /// Tokens used, as of its newest checkpoint.
    pub tokens_used: u64,
    /// Milliseconds spent, as of its newest checkpoint.
    pub duration_ms: u64,
}

/// Averages over the executions reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Averages {
    /// Tokens per execution.
    pub tokens_per_execution: f64,
    /// Checkpoints per execution.
    pub checkpoints_per_execution: f64,
    /// Thoughts per execution.
    pub thoughts_per_execution: f64,
    /// Tool calls per execution.
    pub tool_calls_per_execution: f64,
    /// Milliseconds per execution.
    pub duration_ms_per_execution: f64,
}

/// Totals over the executions reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    /// Executions.
    pub executions: u64,
    /// Checkpoints.
    pub checkpoints: u64,
    /// Distinct thoughts.
    pub thoughts: u64,
    /// Distinct tool calls.
    pub tool_calls: u64,
    /// Failed tool calls.
    pub failed_tool_calls: u64,
    /// Tokens (the sum of each execution's newest count).
    pub tokens_used: u64,
    /// Milliseconds (the sum of each execution's newest duration).
    pub duration_ms: u64,
    /// Tool calls per tool.
    pub tool_calls_by_tool: BTreeMap<String, u64>,
    /// Executions per status.
    pub executions_by_status: BTreeMap<ExecutionStatus, u64>,
    /// Averages per execution (0 when there is none).
    pub averages: Averages,
}

/// What [`SqlStore::stats`] returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Each execution, oldest first.
    pub executions: Vec<ExecutionStats>,
    /// Totals and averages over them.
    pub totals: Totals,
}

#[derive(QueryableByName)]
struct ExecutionRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    agent_id: String,
    #[diesel(sql_type = Text)]
    task: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = BigInt)]
    started_at: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    completed_at: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    last_checkpoint_id: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    tokens_used: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    duration_ms: Option<i64>,
}

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = Text)]
    execution_id: String,
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Runs `sql` on a table with a `line_id` (with `?` for the optional execution id, appended as
/// `{where}` / `{and}`). An execution's rows are found through its lines: `lines_execution`,
/// then the table's key, which starts with `line_id` (no index of the items is on
/// `execution_id`: see the migration `…_fewer_item_indexes`).
fn counts(
    conn: &mut AnyConnection,
    sql: &str,
    execution: Option<&str>,
) -> QueryResult<Vec<CountRow>> {
    const OF_EXECUTION: &str = "line_id IN (SELECT id FROM lines WHERE execution_id = ?)";
    let (filter_where, filter_and) = match execution {
        Some(_) => (
            format!("WHERE {OF_EXECUTION}"),
            format!("AND {OF_EXECUTION}"),
        ),
        None => (String::new(), String::new()),
    };
    let sql = sql
        .replace("{where}", &filter_where)
        .replace("{and}", &filter_and);
    let q = Stmt::new(sql);
    let q = match execution {
        Some(e) => q.text(e),
        None => q,
    };
    q.load(conn)
}

fn per_execution(rows: Vec<CountRow>) -> BTreeMap<String, u64> {
    rows.into_iter()
        .map(|r| (r.execution_id, uint(r.n)))
        .collect()
}

impl SqlStore {
    /// Statistics of every execution, or of one; with totals and averages.
    pub fn stats(&self, execution: Option<&ExecutionId>) -> Result<Stats> {
        let e = execution.map(ExecutionId::as_str);
        self.with_tx(TxMode::Read, |conn, _| {
            let backend = conn.backend();
            let fail = || SqlError::query(backend, "computing statistics");
            let where_e = if e.is_some() { "WHERE e.id = ?" } else { "" };
            let sql = format!(
                "SELECT e.id, e.agent_id, e.task, e.status, e.started_at, e.completed_at, \
                 e.last_checkpoint_id, c.tokens_used, c.duration_ms FROM executions e \
                 LEFT JOIN checkpoints c ON c.id = e.last_checkpoint_id {where_e} \
                 ORDER BY e.started_at, e.id"
            );
            let q = Stmt::new(sql);
            let q = match e {
                Some(e) => q.text(e),
                None => q,
            };
            let rows: Vec<ExecutionRow> = q.load(conn).map_err(fail())?;
            let checkpoints = per_execution(
                counts(
                    conn,
                    "SELECT execution_id, '' AS key, COUNT(*) AS n FROM checkpoints {where} \
                     GROUP BY execution_id",
                    e,
                )
                .map_err(fail())?,
            );
            let thoughts = per_execution(
                counts(
                    conn,
                    "SELECT execution_id, '' AS key, COUNT(DISTINCT id) AS n FROM thoughts \
                     {where} GROUP BY execution_id",
                    e,
                )
                .map_err(fail())?,
            );
            let by_tool = counts(
                conn,
                "SELECT execution_id, tool_id AS key, COUNT(DISTINCT id) AS n FROM tool_calls \
                 WHERE to_seq IS NULL {and} GROUP BY execution_id, tool_id",
                e,
            )
            .map_err(fail())?;
            let failed = per_execution(
                counts(
                    conn,
                    "SELECT execution_id, '' AS key, COUNT(DISTINCT id) AS n FROM tool_calls \
                     WHERE to_seq IS NULL AND status = 'failed' {and} GROUP BY execution_id",
                    e,
                )
                .map_err(fail())?,
            );
            let calls = per_execution(
                counts(
                    conn,
                    "SELECT execution_id, '' AS key, COUNT(DISTINCT id) AS n FROM tool_calls \
                     {where} GROUP BY execution_id",
                    e,
                )
                .map_err(fail())?,
            );
            let mut tools: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
            for r in by_tool {
                tools
                    .entry(r.execution_id)
                    .or_default()
                    .insert(r.key, uint(r.n));
            }
            let executions = rows
                .into_iter()
                .map(|r| ExecutionStats {
                    checkpoints: checkpoints.get(&r.id).copied().unwrap_or(0),
                    thoughts: thoughts.get(&r.id).copied().unwrap_or(0),
                    tool_calls: calls.get(&r.id).copied().unwrap_or(0),
                    failed_tool_calls: failed.get(&r.id).copied().unwrap_or(0),
                    tool_calls_by_tool: tools.remove(&r.id).unwrap_or_default(),
                    tokens_used: r.tokens_used.map_or(0, uint),
                    duration_ms: r.duration_ms.map_or(0, uint),
                    started_at: Timestamp::from_micros(r.started_at),
                    completed_at: r.completed_at.map(Timestamp::from_micros),
                    execution_id: r.id,
                    agent_id: r.agent_id,
                    task: r.task,
                    status: crate::executions::status_from_column(&r.status),
                    last_checkpoint_id: r.last_checkpoint_id,
                })
                .collect::<Vec<_>>();
            let totals = totals(&executions);
            Ok(Stats { executions, totals })
        })
    }
}

fn totals(executions: &[ExecutionStats]) -> Totals {
    let sum = |f: fn(&ExecutionStats) -> u64| {
        executions
            .iter()
            .map(f)
            .fold(0u64, |a, b| a.saturating_add(b))
    };
    let mut by_tool: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_status: BTreeMap<ExecutionStatus, u64> = BTreeMap::new();
    for e in executions {
        for (tool, n) in &e.tool_calls_by_tool {
            *by_tool.entry(tool.clone()).or_default() += n;
        }
        *by_status.entry(e.status).or_default() += 1;
    }
    let n = executions.len() as u64;
    // Rounded to three decimals: `2.333`, not `2.3333333333333335`.
    let avg = |total: u64| {
        if n == 0 {
            0.0
        } else {
            (total as f64 / n as f64 * 1000.0).round() / 1000.0
        }
    };
    let t = Totals {
        executions: n,
        checkpoints: sum(|e| e.checkpoints),
        thoughts: sum(|e| e.thoughts),
        tool_calls: sum(|e| e.tool_calls),
        failed_tool_calls: sum(|e| e.failed_tool_calls),
        tokens_used: sum(|e| e.tokens_used),
        duration_ms: sum(|e| e.duration_ms),
        tool_calls_by_tool: by_tool,
        executions_by_status: by_status,
        averages: Averages {
            tokens_per_execution: 0.0,
            checkpoints_per_execution: 0.0,
            thoughts_per_execution: 0.0,
            tool_calls_per_execution: 0.0,
            duration_ms_per_execution: 0.0,
        },
    };
    Totals {
        averages: Averages {
            tokens_per_execution: avg(t.tokens_used),
            checkpoints_per_execution: avg(t.checkpoints),
            thoughts_per_execution: avg(t.thoughts),
            tool_calls_per_execution: avg(t.tool_calls),
            duration_ms_per_execution: avg(t.duration_ms),
        },
        ..t
    }
}
