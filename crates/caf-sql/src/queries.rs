//! [`SqlStore::query_tool_calls`] and [`SqlStore::query_thoughts`]: items, as of their latest
//! revision, with the checkpoints and executions they appear in.

use crate::checkpoint::checkpoint_row::Damaged;
use crate::checkpoint::item_columns::{call_from, thought_from};
use crate::columns::{text, uint};
use crate::connection::{AnyConnection, TxMode};
use crate::error::{Result, SqlError};
use crate::statement::Stmt;
use crate::SqlStore;
use caf_core::format::{Thought, ToolCall};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use serde::Serialize;
use std::collections::BTreeMap;

/// A tool call, as of its latest revision, and where it appears.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallRow {
    /// Its execution.
    pub execution_id: String,
    /// The checkpoint that first held it.
    pub first_checkpoint_id: String,
    /// The newest checkpoint that holds it.
    pub last_checkpoint_id: Option<String>,
    /// How many checkpoints hold it (any revision).
    pub checkpoints: u64,
    /// The call itself (id, tool, args, result, status, error, times), exactly as saved.
    pub call: ToolCall,
}

/// A thought, and where it appears.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThoughtRow {
    /// Its execution.
    pub execution_id: String,
    /// The checkpoint that first held it.
    pub first_checkpoint_id: String,
    /// The newest checkpoint that holds it.
    pub last_checkpoint_id: Option<String>,
    /// How many checkpoints hold it (any revision).
    pub checkpoints: u64,
    /// The thought itself, exactly as saved.
    pub thought: Thought,
}

#[derive(QueryableByName)]
struct ItemRow {
    #[diesel(sql_type = Text)]
    execution_id: String,
    #[diesel(sql_type = Text)]
    first_checkpoint_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    last_checkpoint_id: Option<String>,
    #[diesel(sql_type = BigInt)]
    appearances: i64,
    #[diesel(sql_type = Text)]
    payload: String,
    /// A thought's content, or a tool call's args.
    #[diesel(sql_type = Text)]
    a: String,
    /// A tool call's result.
    #[diesel(sql_type = Nullable<Text>)]
    b: Option<String>,
}

/// The current revisions of `table` passing `condition` (with `?` binds `args`), with where
/// they appear.
fn items(
    conn: &mut AnyConnection,
    table: &str,
    condition: &str,
    args: Vec<String>,
) -> QueryResult<Vec<ItemRow>> {
    let columns = match table {
        "thoughts" => "t.content AS a, CAST(NULL AS TEXT) AS b",
        _ => "t.args AS a, t.result AS b",
    };
    let first = format!(
        "(SELECT MIN(r.from_seq) FROM {table} r WHERE r.line_id = t.line_id \
         AND r.position = t.position AND r.id = t.id)"
    );
    let sql = format!(
        "SELECT t.execution_id, \
         COALESCE((SELECT c.id FROM checkpoints c WHERE c.line_id = t.line_id \
           AND c.seq >= {first} ORDER BY c.seq LIMIT 1), t.first_checkpoint_id) \
           AS first_checkpoint_id, \
         (SELECT c.id FROM checkpoints c WHERE c.line_id = t.line_id AND c.seq >= t.from_seq \
           ORDER BY c.seq DESC LIMIT 1) AS last_checkpoint_id, \
         (SELECT COUNT(*) FROM checkpoints c WHERE c.line_id = t.line_id \
           AND c.seq >= {first}) AS appearances, \
         t.payload, {columns} FROM {table} t WHERE t.to_seq IS NULL {condition} \
         ORDER BY t.execution_id, t.line_id, t.position"
    );
    let mut q = Stmt::new(sql);
    for a in args {
        q = q.text(a);
    }
    q.load(conn)
}

/// Keeps one row per (execution, item id): the one seen in the most checkpoints (an item can be
/// current in several lines of an execution that forked).
fn dedup<T>(rows: Vec<(ItemRow, T)>, id: impl Fn(&T) -> &str) -> Vec<(ItemRow, T)> {
    let mut best: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, (r, item)) in rows.iter().enumerate() {
        let key = (r.execution_id.clone(), id(item).to_string());
        match best.get(&key) {
            Some(&j) if rows[j].0.appearances >= r.appearances => {}
            _ => {
                best.insert(key, i);
            }
        }
    }
    let keep: std::collections::BTreeSet<usize> = best.into_values().collect();
    rows.into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, r)| r)
        .collect()
}

fn decode<T>(
    backend: crate::Backend,
    rows: Vec<ItemRow>,
    what: &str,
    item: impl Fn(&ItemRow) -> Result<T, Damaged>,
) -> Result<Vec<(ItemRow, T)>> {
    rows.into_iter()
        .map(|r| {
            let decoded = item(&r).map_err(|e| SqlError::Corrupt {
                backend,
                what: format!("a stored {what} of execution {}", r.execution_id),
                message: e.0,
            })?;
            Ok((r, decoded))
        })
        .collect()
}

impl SqlStore {
    /// Tool calls (latest revision), optionally of one tool only and failed ones only, with
    /// the checkpoints and executions they appear in; ordered by execution, then start.
    pub fn query_tool_calls(
        &self,
        tool: Option<&str>,
        failed_only: bool,
    ) -> Result<Vec<ToolCallRow>> {
        let mut condition = String::new();
        let mut args = Vec::new();
        if let Some(tool) = tool {
            condition.push_str(" AND t.tool_id = ?");
            args.push(text(tool).into_owned());
        }
        if failed_only {
            condition.push_str(" AND t.status = 'failed'");
        }
        self.with_tx(TxMode::Read, |conn, _| {
            let backend = conn.backend();
            let rows = items(conn, "tool_calls", &condition, args)
                .map_err(SqlError::query(backend, "querying tool calls"))?;
            let rows: Vec<(ItemRow, ToolCall)> = decode(backend, rows, "tool call", |r| {
                call_from(&r.payload, &r.a, r.b.as_deref())
            })?;
            let mut rows = dedup(rows, |c: &ToolCall| &c.id);
            // The column is a query form; keep exact matches only.
            rows.retain(|(_, c)| tool.is_none_or(|t| c.tool_id == t));
            rows.sort_by(|(a, x), (b, y)| {
                (&a.execution_id, x.started_at, &x.id).cmp(&(&b.execution_id, y.started_at, &y.id))
            });
            Ok(rows
                .into_iter()
                .map(|(r, call)| ToolCallRow {
                    execution_id: r.execution_id,
                    first_checkpoint_id: r.first_checkpoint_id,
                    last_checkpoint_id: r.last_checkpoint_id,
                    checkpoints: uint(r.appearances),
                    call,
                })
                .collect())
        })
    }

    /// Thoughts whose content contains `needle`, ignoring case (an empty needle matches every
    /// thought); ordered by execution, then creation. `%` and `_` are plain characters.
    pub fn query_thoughts(&self, needle: &str) -> Result<Vec<ThoughtRow>> {
        let lowered = needle.to_lowercase();
        let query_form = text(&lowered).into_owned();
        // SQL narrows the search when the needle is ASCII (lower() and LIKE agree on ASCII in
        // both backends); the exact, Unicode-aware test is done here on the exact content.
        let (condition, args) = if !query_form.is_empty() && query_form.is_ascii() {
            let escaped = query_form
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            (
                " AND lower(t.content) LIKE ? ESCAPE '\\'".to_string(),
                vec![format!("%{escaped}%")],
            )
        } else {
            (String::new(), Vec::new())
        };
        self.with_tx(TxMode::Read, |conn, _| {
            let backend = conn.backend();
            let rows = items(conn, "thoughts", &condition, args)
                .map_err(SqlError::query(backend, "querying thoughts"))?;
            let rows: Vec<(ItemRow, Thought)> = decode(backend, rows, "thought", |r| {
                thought_from(&r.payload, r.a.clone())
            })?;
            let mut rows = dedup(rows, |t: &Thought| &t.id);
            rows.retain(|(_, t)| t.content.to_lowercase().contains(&lowered));
            rows.sort_by(|(a, x), (b, y)| {
                (&a.execution_id, x.created_at, &x.id).cmp(&(&b.execution_id, y.created_at, &y.id))
            });
            Ok(rows
                .into_iter()
                .map(|(r, thought)| ThoughtRow {
                    execution_id: r.execution_id,
                    first_checkpoint_id: r.first_checkpoint_id,
                    last_checkpoint_id: r.last_checkpoint_id,
                    checkpoints: uint(r.appearances),
                    thought,
                })
                .collect())
        })
    }
}
