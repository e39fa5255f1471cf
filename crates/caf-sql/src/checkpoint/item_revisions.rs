//! The three item tables (thoughts, tool calls, completed steps) and their revisions.
//!
//! A row is one revision of the item at `position` in a line, visible to the checkpoints of the
//! line with `from_seq <= seq < to_seq` (`to_seq` NULL: still current). Saving a checkpoint that
//! continues a line compares its items with those of the previous checkpoint, position by
//! position, and writes only the differences; restoring reads the revisions visible at a seq.

use crate::checkpoint::checkpoint_row::Damaged;
use crate::checkpoint::item_columns::{
    call_from, thought_from, ItemContext, NewStep, NewThought, NewToolCall,
};
use crate::columns::count;
use crate::connection::{insert_rows, AnyConnection};
use crate::schema::{steps, thoughts, tool_calls};
use caf_core::format::{CompletedStep, Snapshot, Thought, ToolCall};
use diesel::prelude::*;
use diesel::QueryResult;

/// Rows per multi-row statement (well under both backends' bind-parameter limits).
const CHUNK: usize = 400;

/// One of the item tables.
pub(crate) trait ItemTable {
    /// The item.
    type Item: PartialEq + Clone;
    /// The table's name, for messages.
    const NAME: &'static str;
    /// The items of a snapshot.
    fn of(s: &Snapshot) -> &[Self::Item];
    /// The items of a snapshot, to change.
    fn of_mut(s: &mut Snapshot) -> &mut Vec<Self::Item>;
    /// Inserts new revisions (position, item) starting at `ctx.seq`.
    fn insert(
        conn: &mut AnyConnection,
        ctx: &ItemContext,
        items: &[(usize, &Self::Item)],
    ) -> QueryResult<()>;
    /// Closes the current revisions at these positions: they end before `seq`.
    fn close(conn: &mut AnyConnection, line: i64, seq: i64, positions: &[i64]) -> QueryResult<()>;
    /// The items visible at `seq` in `line`, positions `0..count`, in order.
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<Self::Item>, LoadItemsError>;
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

fn damaged(what: &str) -> impl Fn(Damaged) -> LoadItemsError + '_ {
    move |d| LoadItemsError::Damaged(format!("a stored {what}: {}", d.0))
}

macro_rules! close {
    ($table:ident) => {
        fn close(
            conn: &mut AnyConnection,
            line: i64,
            seq: i64,
            positions: &[i64],
        ) -> QueryResult<()> {
            for chunk in positions.chunks(CHUNK) {
                let current = $table::table
                    .filter($table::line_id.eq(line))
                    .filter($table::to_seq.is_null());
                match chunk {
                    // One position (the usual case): a statement diesel keeps prepared.
                    [one] => diesel::update(current.filter($table::position.eq(*one)))
                        .set($table::to_seq.eq(seq))
                        .execute(conn)?,
                    many => diesel::update(current.filter($table::position.eq_any(many)))
                        .set($table::to_seq.eq(seq))
                        .execute(conn)?,
                };
            }
            Ok(())
        }
    };
}

/// `thoughts`.
pub(crate) struct Thoughts;
/// `tool_calls`.
pub(crate) struct ToolCalls;
/// `steps`.
pub(crate) struct Steps;

impl ItemTable for Thoughts {
    type Item = Thought;
    const NAME: &'static str = "thoughts";
    fn of(s: &Snapshot) -> &[Thought] {
        &s.thought_chain.thoughts
    }
    fn of_mut(s: &mut Snapshot) -> &mut Vec<Thought> {
        &mut s.thought_chain.thoughts
    }
    fn insert(
        conn: &mut AnyConnection,
        ctx: &ItemContext,
        items: &[(usize, &Thought)],
    ) -> QueryResult<()> {
        for chunk in items.chunks(CHUNK) {
            let rows: Vec<NewThought<'_>> = chunk
                .iter()
                .map(|(i, t)| NewThought::new(ctx, *i, t))
                .collect();
            insert_rows!(conn, thoughts::table, &rows[..])?;
        }
        Ok(())
    }
    close!(thoughts);
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<Thought>, LoadItemsError> {
        let rows: Vec<(String, String)> = visible!(thoughts, line, seq, count)
            .select((thoughts::payload, thoughts::content))
            .load(conn)
            .map_err(LoadItemsError::Query)?;
        rows.into_iter()
            .map(|(p, content)| thought_from(&p, content).map_err(damaged("thought")))
            .collect()
    }
}

impl ItemTable for ToolCalls {
    type Item = ToolCall;
    const NAME: &'static str = "tool calls";
    fn of(s: &Snapshot) -> &[ToolCall] {
        &s.tool_state.calls
    }
    fn of_mut(s: &mut Snapshot) -> &mut Vec<ToolCall> {
        &mut s.tool_state.calls
    }
    fn insert(
        conn: &mut AnyConnection,
        ctx: &ItemContext,
        items: &[(usize, &ToolCall)],
    ) -> QueryResult<()> {
        for chunk in items.chunks(CHUNK) {
            let rows: Vec<NewToolCall<'_>> = chunk
                .iter()
                .map(|(i, c)| NewToolCall::new(ctx, *i, c))
                .collect();
            insert_rows!(conn, tool_calls::table, &rows[..])?;
        }
        Ok(())
    }
    close!(tool_calls);
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<ToolCall>, LoadItemsError> {
        let rows: Vec<(String, String, Option<String>)> = visible!(tool_calls, line, seq, count)
            .select((tool_calls::payload, tool_calls::args, tool_calls::result))
            .load(conn)
            .map_err(LoadItemsError::Query)?;
        rows.into_iter()
            .map(|(p, args, result)| {
                call_from(&p, &args, result.as_deref()).map_err(damaged("tool call"))
            })
            .collect()
    }
}

impl ItemTable for Steps {
    type Item = CompletedStep;
    const NAME: &'static str = "completed steps";
    fn of(s: &Snapshot) -> &[CompletedStep] {
        &s.progress.completed_steps
    }
    fn of_mut(s: &mut Snapshot) -> &mut Vec<CompletedStep> {
        &mut s.progress.completed_steps
    }
    fn insert(
        conn: &mut AnyConnection,
        ctx: &ItemContext,
        items: &[(usize, &CompletedStep)],
    ) -> QueryResult<()> {
        for chunk in items.chunks(CHUNK) {
            let rows: Vec<NewStep<'_>> = chunk
                .iter()
                .map(|(i, s)| NewStep::new(ctx, *i, s))
                .collect();
            insert_rows!(conn, steps::table, &rows[..])?;
        }
        Ok(())
    }
    close!(steps);
    fn load(
        conn: &mut AnyConnection,
        line: i64,
        seq: i64,
        count: i64,
    ) -> Result<Vec<CompletedStep>, LoadItemsError> {
        let rows: Vec<String> = visible!(steps, line, seq, count)
            .select(steps::payload)
            .load(conn)
            .map_err(LoadItemsError::Query)?;
        rows.iter()
            .map(|p| {
                serde_json::from_str(p)
                    .map_err(|e| LoadItemsError::Damaged(format!("a stored step: {e}")))
            })
            .collect()
    }
}

/// Writes the revisions that turn `old` (the items of the previous checkpoint of the line, empty
/// for a new line) into `new` at `ctx.seq`: unchanged positions cost nothing. `old` is updated
/// to `new` on the way (only the changed items are copied), for the line cache.
pub(crate) fn write_diff<K: ItemTable>(
    conn: &mut AnyConnection,
    ctx: &ItemContext,
    old: &mut Vec<K::Item>,
    new: &[K::Item],
) -> QueryResult<()> {
    let mut closed = Vec::new();
    let mut added = Vec::new();
    for i in 0..old.len().max(new.len()) {
        match (old.get(i), new.get(i)) {
            (Some(o), Some(n)) if o == n => {}
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
    if !closed.is_empty() {
        K::close(conn, ctx.line_id, ctx.seq, &closed)?;
    }
    if !added.is_empty() {
        K::insert(conn, ctx, &added)?;
    }
    old.truncate(new.len());
    for (i, n) in added {
        match old.get_mut(i) {
            Some(slot) => *slot = n.clone(),
            None => old.push(n.clone()),
        }
    }
    Ok(())
}

/// The items visible at `seq` in `line` (`count` of them), decoded.
pub(crate) fn load_items<K: ItemTable>(
    conn: &mut AnyConnection,
    line: i64,
    seq: i64,
    count: i64,
) -> Result<Vec<K::Item>, LoadItemsError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let items = K::load(conn, line, seq, count)?;
    if items.len() as i64 != count {
        return Err(LoadItemsError::Damaged(format!(
            "{} {} of {count} found at line {line} seq {seq}",
            items.len(),
            K::NAME
        )));
    }
    Ok(items)
}

/// Why items could not be loaded.
#[derive(Debug)]
pub(crate) enum LoadItemsError {
    /// The statement failed.
    Query(diesel::result::Error),
    /// What is stored does not add up or does not decode.
    Damaged(String),
}
