//! The three item tables (thoughts, tool calls, completed steps) and their revisions.
//!
//! A row is one revision of the item at `position` in a line, visible to the checkpoints of the
//! line with `from_seq <= seq < to_seq` (`to_seq` NULL: still current). Saving a checkpoint that
//! continues a line compares its items with those of the previous checkpoint, position by
//! position, and writes only the differences; restoring reads the revisions visible at a seq.
//! Every statement of a save here has a fixed shape ([`crate::statement::fixed`]), so it stays
//! prepared whatever the number of items.

use crate::checkpoint::checkpoint_row::Damaged;
use crate::checkpoint::item_columns::{
    call_from, thought_from, InsertSteps, InsertThoughts, InsertToolCalls, ItemContext, NewStep,
    NewThought, NewToolCall,
};
use crate::columns::count;
use crate::connection::{AnyConnection, Backend};
use crate::error::SqlError;
use crate::schema::{steps, thoughts, tool_calls};
use crate::statement::fixed::{execute_groups, insert_rows, padded, Row};
use crate::statement::{shape, Param, Shape};
use caf_core::format::{same, CompletedStep, Snapshot, Thought, ToolCall};
use diesel::prelude::*;
use diesel::QueryResult;
use std::sync::Arc;

/// One of the item tables.
pub(crate) trait ItemTable {
    /// The item.
    type Item: PartialEq + Clone;
    /// The new row of an item.
    type NewRow<'a>: Row
    where
        Self::Item: 'a;
    /// The multi-row insert into the table.
    type Insert: Shape;
    /// The statement that closes the current revisions at a list of positions.
    type Close: Shape;
    /// The table's name, for messages.
    const NAME: &'static str;
    /// Whether two items are the same (for shared items, first by pointer: a runtime state
    /// shares each unchanged item with every checkpoint taken of it, and the line's cached tip
    /// keeps them).
    fn same(a: &Self::Item, b: &Self::Item) -> bool {
        a == b
    }
    /// The items of a snapshot.
    fn of(s: &Snapshot) -> &[Self::Item];
    /// The items of a snapshot, to change.
    fn of_mut(s: &mut Snapshot) -> &mut Vec<Self::Item>;
    /// The new row of the item at `position`, first shown at `ctx`.
    fn new_row<'a>(ctx: ItemContext<'a>, position: usize, item: &'a Self::Item)
        -> Self::NewRow<'a>;
    /// The items visible at `seq` in `line`, positions `0..count`, in order.
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<Self::Item>, LoadRowsError>;
}

/// The revisions of `$table` visible at `$seq` in `$line`, positions below `$count`, in order.
macro_rules! visible {
    ($table:ident, $line:expr, $seq:expr, $count:expr) => {
        $table::table
            .filter($table::line_id.eq($line))
            .filter($table::position.lt($count))
            .filter($table::from_seq.le($seq))
            .filter($table::to_seq.is_null().or($table::to_seq.gt($seq)))
            .order($table::position.asc())
    };
}

fn damaged(what: &str) -> impl Fn(Damaged) -> LoadRowsError + '_ {
    move |d| LoadRowsError::Damaged(format!("a stored {what}: {}", d.0))
}

shape!(
    /// Closes the current `thoughts` revisions at a list of positions.
    CloseThoughts,
    "UPDATE thoughts SET to_seq = ? WHERE line_id = ? AND to_seq IS NULL AND position IN (",
    "?",
    ")"
);
shape!(
    /// Closes the current `tool_calls` revisions at a list of positions.
    CloseToolCalls,
    "UPDATE tool_calls SET to_seq = ? WHERE line_id = ? AND to_seq IS NULL AND position IN (",
    "?",
    ")"
);
shape!(
    /// Closes the current `steps` revisions at a list of positions.
    CloseSteps,
    "UPDATE steps SET to_seq = ? WHERE line_id = ? AND to_seq IS NULL AND position IN (",
    "?",
    ")"
);

/// `thoughts`.
pub(crate) struct Thoughts;
/// `tool_calls`.
pub(crate) struct ToolCalls;
/// `steps`.
pub(crate) struct Steps;

impl ItemTable for Thoughts {
    type Item = Arc<Thought>;
    type NewRow<'a> = NewThought<'a>;
    type Insert = InsertThoughts;
    type Close = CloseThoughts;
    const NAME: &'static str = "thoughts";
    fn same(a: &Arc<Thought>, b: &Arc<Thought>) -> bool {
        same(a, b)
    }
    fn of(s: &Snapshot) -> &[Arc<Thought>] {
        &s.thought_chain.thoughts
    }
    fn of_mut(s: &mut Snapshot) -> &mut Vec<Arc<Thought>> {
        &mut s.thought_chain.thoughts
    }
    fn new_row<'a>(
        ctx: ItemContext<'a>,
        position: usize,
        item: &'a Arc<Thought>,
    ) -> NewThought<'a> {
        NewThought::new(ctx, position, item)
    }
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<Arc<Thought>>, LoadRowsError> {
        let rows: Vec<(String, String)> = visible!(thoughts, line, seq, count)
            .select((thoughts::payload, thoughts::content))
            .load(conn)
            .map_err(LoadRowsError::Query)?;
        rows.into_iter()
            .map(|(p, content)| {
                thought_from(&p, content)
                    .map(Arc::new)
                    .map_err(damaged("thought"))
            })
            .collect()
    }
}

impl ItemTable for ToolCalls {
    type Item = Arc<ToolCall>;
    type NewRow<'a> = NewToolCall<'a>;
    type Insert = InsertToolCalls;
    type Close = CloseToolCalls;
    const NAME: &'static str = "tool calls";
    fn same(a: &Arc<ToolCall>, b: &Arc<ToolCall>) -> bool {
        same(a, b)
    }
    fn of(s: &Snapshot) -> &[Arc<ToolCall>] {
        &s.tool_state.calls
    }
    fn of_mut(s: &mut Snapshot) -> &mut Vec<Arc<ToolCall>> {
        &mut s.tool_state.calls
    }
    fn new_row<'a>(
        ctx: ItemContext<'a>,
        position: usize,
        item: &'a Arc<ToolCall>,
    ) -> NewToolCall<'a> {
        NewToolCall::new(ctx, position, item)
    }
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<Arc<ToolCall>>, LoadRowsError> {
        let rows: Vec<(String, String, Option<String>)> = visible!(tool_calls, line, seq, count)
            .select((tool_calls::payload, tool_calls::args, tool_calls::result))
            .load(conn)
            .map_err(LoadRowsError::Query)?;
        rows.into_iter()
            .map(|(p, args, result)| {
                call_from(&p, &args, result.as_deref())
                    .map(Arc::new)
                    .map_err(damaged("tool call"))
            })
            .collect()
    }
}

impl ItemTable for Steps {
    type Item = CompletedStep;
    type NewRow<'a> = NewStep<'a>;
    type Insert = InsertSteps;
    type Close = CloseSteps;
    const NAME: &'static str = "completed steps";
    fn of(s: &Snapshot) -> &[CompletedStep] {
        &s.progress.completed_steps
    }
    fn of_mut(s: &mut Snapshot) -> &mut Vec<CompletedStep> {
        &mut s.progress.completed_steps
    }
    fn new_row<'a>(ctx: ItemContext<'a>, position: usize, item: &'a CompletedStep) -> NewStep<'a> {
        NewStep::new(ctx, position, item)
    }
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<CompletedStep>, LoadRowsError> {
        let rows: Vec<String> = visible!(steps, line, seq, count)
            .select(steps::payload)
            .load(conn)
            .map_err(LoadRowsError::Query)?;
        rows.iter()
            .map(|p| {
                serde_json::from_str(p)
                    .map_err(|e| LoadRowsError::Damaged(format!("a stored step: {e}")))
            })
            .collect()
    }
}

/// Closes the current revisions at `positions` in `line` with statement `S` (whose values are
/// `to_seq`, the line, any `fixed` ones, then the positions): they end before `seq`.
pub(crate) fn close_positions<S: Shape>(
    conn: &mut AnyConnection,
    line: i64,
    seq: i64,
    fixed: &[Param<'_>],
    positions: &[i64],
) -> QueryResult<()> {
    let mut values = Vec::new();
    for list in padded(positions) {
        values.clear();
        values.extend([Param::Int(seq), Param::Int(line)]);
        values.extend_from_slice(fixed);
        values.extend(list.iter().map(|p| Param::Int(*p)));
        execute_groups::<S>(conn, list.len(), &values)?;
    }
    Ok(())
}

/// The revisions a save writes into one item table: the positions whose current revision it
/// closes, and its new rows.
pub(crate) struct ItemChanges<'a, K: ItemTable + 'a> {
    /// Positions whose current revision ends before the save's seq.
    pub closed: Vec<i64>,
    /// The new revisions, by position, in order.
    pub added: Vec<(usize, &'a K::Item)>,
    /// Their rows.
    pub rows: Vec<K::NewRow<'a>>,
}

impl<'a, K: ItemTable + 'a> ItemChanges<'a, K> {
    /// What turns `old` (the items of the previous checkpoint of the line, empty for a new
    /// line) into `new` at `ctx.seq`: unchanged positions cost nothing.
    pub fn between(ctx: ItemContext<'a>, old: &[K::Item], new: &'a [K::Item]) -> Self {
        let mut closed = Vec::new();
        let mut added = Vec::new();
        for i in 0..old.len().max(new.len()) {
            match (old.get(i), new.get(i)) {
                (Some(o), Some(n)) if K::same(o, n) => {}
                (o, n) => {
                    if o.is_some() {
                        closed.push(count(i));
                    }
                    if let Some(n) = n {
                        added.push((i, n));
                    }
                }
            }
        }
        let rows = added.iter().map(|(i, n)| K::new_row(ctx, *i, n)).collect();
        Self {
            closed,
            added,
            rows,
        }
    }

    /// Writes them, statement by statement (fixed shapes).
    pub fn write(&self, conn: &mut AnyConnection, ctx: ItemContext<'_>) -> QueryResult<()> {
        close_positions::<K::Close>(conn, ctx.line_id, ctx.seq, &[], &self.closed)?;
        self.insert(conn)
    }

    /// Inserts the new revisions only, closing nothing (what [`Changes::insert`] measures).
    ///
    /// [`Changes::insert`]: crate::checkpoint::changes::Changes::insert
    pub fn insert(&self, conn: &mut AnyConnection) -> QueryResult<()> {
        insert_rows::<K::Insert, _>(conn, &self.rows)
    }

    /// Makes `old` the `new_len` items they were computed against, copying only the changed
    /// ones (for the line cache).
    pub fn apply(&self, old: &mut Vec<K::Item>, new_len: usize) {
        old.truncate(new_len);
        for (i, n) in &self.added {
            match old.get_mut(*i) {
                Some(slot) => *slot = (*n).clone(),
                None => old.push((*n).clone()),
            }
        }
    }
}

/// The items visible at `seq` in `line` (`count` of them), decoded.
pub(crate) fn load_items<K: ItemTable>(
    conn: &mut AnyConnection,
    line: i64,
    seq: i64,
    count: i64,
) -> Result<Vec<K::Item>, LoadRowsError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let items = K::load(conn, line, seq, count)?;
    if items.len() as i64 != count {
        return Err(LoadRowsError::Damaged(format!(
            "{} {} of {count} found at line {line} seq {seq}",
            items.len(),
            K::NAME
        )));
    }
    Ok(items)
}

/// Why the rows of a checkpoint (its items, its entries) could not be read back.
#[derive(Debug)]
pub(crate) enum LoadRowsError {
    /// The statement failed.
    Query(diesel::result::Error),
    /// What is stored does not add up or does not decode.
    Damaged(String),
}

impl LoadRowsError {
    /// The error of loading checkpoint `id` (whose rows these are) from `backend`.
    pub fn of_checkpoint(self, backend: Backend, id: &str) -> SqlError {
        match self {
            Self::Query(source) => SqlError::Query {
                backend,
                context: format!("loading checkpoint {id}"),
                source,
            },
            Self::Damaged(message) => SqlError::Corrupt {
                backend,
                what: format!("checkpoint {id}"),
                message,
            },
        }
    }
}
