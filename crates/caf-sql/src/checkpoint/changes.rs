//! [`Changes`]: every revision a save writes, computed before anything is written — the entries,
//! thoughts, tool calls and completed steps that differ from the line's previous checkpoint.
//!
//! Computing first and writing after lets a backend choose how to write them: statement by
//! statement ([`Changes::write`]), or all in one statement (PostgreSQL,
//! [`crate::checkpoint::append_pg`]). Then [`Changes::apply`] brings the line's cached tip up to
//! date, copying only what changed.

use crate::checkpoint::entry_revisions::{EntryChanges, WriteError};
use crate::checkpoint::item_columns::ItemContext;
use crate::checkpoint::item_revisions::{ItemChanges, ItemTable, Steps, Thoughts, ToolCalls};
use crate::checkpoint::line_cache::Tip;
use crate::connection::AnyConnection;
use crate::error::SqlError;
use caf_core::format::Snapshot;

/// The revisions that turn one snapshot of a line into the next.
pub(crate) struct Changes<'a> {
    pub ctx: ItemContext<'a>,
    pub entries: EntryChanges<'a>,
    pub thoughts: ItemChanges<'a, Thoughts>,
    pub tool_calls: ItemChanges<'a, ToolCalls>,
    pub steps: ItemChanges<'a, Steps>,
}

impl<'a> Changes<'a> {
    /// What turns `tip` (the previous checkpoint of the line; empty for a new line) into `new`,
    /// written at `ctx`.
    pub fn between(ctx: ItemContext<'a>, tip: &Tip, new: &'a Snapshot) -> Self {
        let old = &tip.snapshot;
        Self {
            ctx,
            entries: EntryChanges::between(ctx, old, &tip.entry_since, new),
            thoughts: ItemChanges::between(ctx, Thoughts::of(old), Thoughts::of(new)),
            tool_calls: ItemChanges::between(ctx, ToolCalls::of(old), ToolCalls::of(new)),
            steps: ItemChanges::between(ctx, Steps::of(old), Steps::of(new)),
        }
    }

    /// Writes them statement by statement; an error names the table and the checkpoint.
    pub fn write(&self, conn: &mut AnyConnection) -> Result<(), SqlError> {
        let backend = conn.backend();
        let fail = |what: &'static str| {
            let id = self.ctx.checkpoint_id;
            move |source| SqlError::Query {
                backend,
                context: format!("saving {id}: {what}"),
                source,
            }
        };
        let ctx = self.ctx;
        self.entries.write(conn, ctx).map_err(|e| match e {
            WriteError::Query(source) => fail("context entries")(source),
            WriteError::Damaged(message) => SqlError::Corrupt {
                backend,
                what: format!("the line of checkpoint {}", ctx.checkpoint_id),
                message,
            },
        })?;
        self.thoughts.write(conn, ctx).map_err(fail("thoughts"))?;
        self.tool_calls
            .write(conn, ctx)
            .map_err(fail("tool calls"))?;
        self.steps.write(conn, ctx).map_err(fail("steps"))
    }

    /// Inserts the new revisions only — no revision is closed, nothing is checked: the rows
    /// alone, for [`crate::RowsFloor`], in tables that have no keys to close them by.
    #[cfg(all(feature = "sqlite", feature = "test-support"))]
    pub fn insert(&self, conn: &mut AnyConnection) -> diesel::QueryResult<()> {
        self.entries.insert(conn)?;
        self.thoughts.insert(conn)?;
        self.tool_calls.insert(conn)?;
        self.steps.insert(conn)
    }

    /// Makes `tip` (what they were computed against) `new`'s items and entries.
    pub fn apply(&self, tip: &mut Tip, new: &Snapshot) {
        let old = &mut tip.snapshot;
        self.entries.apply(old, &mut tip.entry_since, new);
        self.thoughts
            .apply(Thoughts::of_mut(old), Thoughts::of(new).len());
        self.tool_calls
            .apply(ToolCalls::of_mut(old), ToolCalls::of(new).len());
        self.steps.apply(Steps::of_mut(old), Steps::of(new).len());
    }
}
