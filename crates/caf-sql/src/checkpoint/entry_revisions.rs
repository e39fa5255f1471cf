//! The `entries` table: revisions of the snapshot's lists and maps (context history, messages,
//! memory, state, variables; tool results; the pending plan steps).
//!
//! Conversations and histories grow with every step; storing them once per checkpoint would
//! make the database grow with checkpoints × state size. They are stored like items instead:
//! one row per distinct entry per position, visible from `from_seq` to `to_seq`. Map entries
//! sit at their position in key order; pending steps are numbered from the end, so that
//! completing the next step (removing the first) closes one row instead of moving all.
//!
//! A save closes the revisions it replaces by the table's key: the line's tip knows where each
//! current revision starts ([`EntrySince`]).

use crate::checkpoint::entry_since::EntrySince;
use crate::checkpoint::item_columns::ItemContext;
use crate::checkpoint::item_revisions::LoadRowsError;
use crate::columns::{count, json, text};
use crate::connection::AnyConnection;
use crate::schema::entries;
use crate::statement::fixed::{execute_groups, insert_rows, padded, MAX_GROUPS};
use crate::statement::{row, shape, Param};
use caf_core::format::{JsonObject, Snapshot};
use diesel::prelude::*;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

/// The parts, in the order they are stored.
pub(crate) const PARTS: [&str; 7] = [
    "history",
    "memory",
    "messages",
    "pending_steps",
    "results",
    "state",
    "variables",
];

/// One entry of a part, borrowed from a snapshot.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry<'a> {
    /// A list element.
    Item(&'a Value),
    /// A map member.
    Member(&'a str, &'a Value),
    /// A pending step.
    Step(&'a str),
}

impl<'a> Entry<'a> {
    fn key(&self) -> Option<Cow<'a, str>> {
        match self {
            Self::Member(k, _) => Some(text(k)),
            _ => None,
        }
    }

    fn payload(&self) -> String {
        match self {
            Self::Item(v) => json(v),
            Self::Member(k, v) => json(&(k, v)),
            Self::Step(s) => json(s),
        }
    }
}

fn members(m: &JsonObject) -> Vec<Entry<'_>> {
    m.iter().map(|(k, v)| Entry::Member(k, v)).collect()
}

fn items(v: &[Value]) -> Vec<Entry<'_>> {
    v.iter().map(Entry::Item).collect()
}

/// The `entries` revisions visible at `$seq` in `$line`, by part and position.
macro_rules! visible_entries {
    ($line:expr, $seq:expr) => {
        entries::table
            .filter(entries::line_id.eq($line))
            .filter(entries::from_seq.le($seq))
            .filter(entries::to_seq.is_null().or(entries::to_seq.gt($seq)))
            .order((entries::part.asc(), entries::position.asc()))
    };
}

/// How many entries part `part` of a snapshot has.
fn len_of(s: &Snapshot, part: &str) -> usize {
    let c = &s.context;
    match part {
        "history" => c.history.len(),
        "memory" => c.memory.len(),
        "messages" => c.messages.len(),
        "pending_steps" => s.progress.pending_steps.len(),
        "results" => s.tool_state.results.len(),
        "state" => c.state.len(),
        "variables" => c.variables.len(),
        _ => 0,
    }
}

/// The entries of `part` in a snapshot, by position.
fn part_of<'a>(s: &'a Snapshot, part: &str) -> Vec<Entry<'a>> {
    let c = &s.context;
    match part {
        "history" => items(&c.history),
        "memory" => items(&c.memory),
        "messages" => items(&c.messages),
        "pending_steps" => s
            .progress
            .pending_steps
            .iter()
            .rev()
            .map(|p| Entry::Step(p))
            .collect(),
        "results" => members(&s.tool_state.results),
        "state" => members(&c.state),
        "variables" => members(&c.variables),
        _ => Vec::new(),
    }
}

/// How many entries each part of `s` has (parts with none are left out).
pub(crate) fn counts(s: &Snapshot) -> BTreeMap<&'static str, u64> {
    PARTS
        .into_iter()
        .map(|p| (p, len_of(s, p)))
        .filter(|(_, n)| *n > 0)
        .map(|(p, n)| (p, n as u64))
        .collect()
}

shape!(
    /// A multi-row insert into `entries`.
    InsertEntries,
    "INSERT INTO entries (line_id, part, position, from_seq, execution_id, \
     first_checkpoint_id, \"key\", payload) VALUES ",
    "(?, ?, ?, ?, ?, ?, ?, ?)",
    ""
);

shape!(
    /// Closes the current entries at a list of (from_seq, part, position) triples of a line:
    /// `to_seq`, the triples, the line. (A join with the list, so that each triple is one
    /// lookup of the key.)
    CloseEntries,
    "UPDATE entries SET to_seq = ? FROM (VALUES ",
    "(?, ?, ?)",
    ") AS closed WHERE entries.line_id = ? AND entries.from_seq = closed.column1 \
     AND entries.part = closed.column2 AND entries.position = closed.column3 \
     AND entries.to_seq IS NULL"
);

/// A new `entries` row.
pub(crate) struct NewEntry<'a> {
    ctx: ItemContext<'a>,
    part: &'static str,
    position: i64,
    key: Option<Cow<'a, str>>,
    payload: String,
}

row!(NewEntry<'_>, |r| [
    Int(r.ctx.line_id),
    Text(r.part),
    Int(r.position),
    Int(r.ctx.seq),
    Text(r.ctx.execution_id),
    Text(r.ctx.checkpoint_id),
    OptText(r.key.as_deref()),
    Text(&r.payload),
]);

/// A current revision that a save closes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Closed {
    pub part: &'static str,
    pub position: i64,
    /// Where the revision starts (`None`: the line's tip did not say, which the write reports
    /// as damage rather than leave the revision current).
    pub from_seq: Option<i64>,
}

/// The entry revisions a save writes: the revisions it closes, and its new rows.
pub(crate) struct EntryChanges<'a> {
    /// The revisions that end before the save's seq.
    pub closed: Vec<Closed>,
    /// The new entries, by position.
    added: Vec<(usize, Entry<'a>)>,
    /// Their rows.
    pub rows: Vec<NewEntry<'a>>,
    /// The parts that differ (indexes into [`PARTS`]), with the range of `added` that is theirs.
    changed: Vec<(usize, Range<usize>)>,
    /// The save's seq.
    seq: i64,
}

impl<'a> EntryChanges<'a> {
    /// What turns `old` (the snapshot of the previous checkpoint of the line; empty for a new
    /// line), whose revisions start at `since`, into `new` at `ctx.seq`.
    pub fn between(
        ctx: ItemContext<'a>,
        old: &Snapshot,
        since: &EntrySince,
        new: &'a Snapshot,
    ) -> Self {
        let mut changes = Self {
            closed: Vec::new(),
            added: Vec::new(),
            rows: Vec::new(),
            changed: Vec::new(),
            seq: ctx.seq,
        };
        for (k, part) in PARTS.into_iter().enumerate() {
            let before = part_of(old, part);
            let after = part_of(new, part);
            let (first, closed_before) = (changes.added.len(), changes.closed.len());
            for i in 0..before.len().max(after.len()) {
                match (before.get(i), after.get(i)) {
                    (Some(b), Some(a)) if b == a => {}
                    (b, a) => {
                        if b.is_some() {
                            changes.closed.push(Closed {
                                part,
                                position: count(i),
                                from_seq: since.get(k, i),
                            });
                        }
                        if let Some(a) = a {
                            changes.added.push((i, *a));
                            changes.rows.push(NewEntry {
                                ctx,
                                part,
                                position: count(i),
                                key: a.key(),
                                payload: a.payload(),
                            });
                        }
                    }
                }
            }
            if changes.closed.len() > closed_before || changes.added.len() > first {
                changes.changed.push((k, first..changes.added.len()));
            }
        }
        changes
    }

    /// Writes them, statement by statement (fixed shapes). Fails with [`WriteError::Damaged`]
    /// when a revision to close is not the current one the line's tip said.
    pub fn write(&self, conn: &mut AnyConnection, ctx: ItemContext<'_>) -> Result<(), WriteError> {
        let mut values = Vec::new();
        // Each list is a chunk of the revisions, padded with copies of its last one (which close
        // nothing more): the chunk is what must be closed.
        for (list, chunk) in padded(&self.closed).zip(self.closed.chunks(MAX_GROUPS)) {
            values.clear();
            values.push(Param::Int(ctx.seq));
            for c in &list {
                values.extend([
                    Param::Int(c.from_seq.unwrap_or(-1)),
                    Param::Text(c.part),
                    Param::Int(c.position),
                ]);
            }
            values.push(Param::Int(ctx.line_id));
            let closed = execute_groups::<CloseEntries>(conn, list.len(), &values)?;
            if closed != chunk.len() {
                let said: Vec<String> = chunk
                    .iter()
                    .map(|c| match c.from_seq {
                        Some(from) => format!("{} {} from seq {from}", c.part, c.position),
                        None => format!("{} {} (not known)", c.part, c.position),
                    })
                    .collect();
                return Err(WriteError::Damaged(format!(
                    "{closed} of the {} entry revisions to close are current in line {}: {}",
                    chunk.len(),
                    ctx.line_id,
                    said.join(", ")
                )));
            }
        }
        self.insert(conn)?;
        Ok(())
    }

    /// Inserts the new revisions only, closing nothing (what [`Changes::insert`] measures).
    ///
    /// [`Changes::insert`]: crate::checkpoint::changes::Changes::insert
    pub fn insert(&self, conn: &mut AnyConnection) -> QueryResult<()> {
        insert_rows::<InsertEntries, _>(conn, &self.rows)
    }

    /// Makes `old`'s lists and maps `new`'s (the snapshot they were computed against), copying
    /// only the entries that changed, and `since` where their revisions now start (for the
    /// line cache).
    pub fn apply(&self, old: &mut Snapshot, since: &mut EntrySince, new: &Snapshot) {
        for (k, range) in &self.changed {
            let (part, added) = (PARTS[*k], &self.added[range.clone()]);
            catch_up(old, new, part, added);
            let written = added.iter().map(|(i, _)| *i);
            since.advance(*k, len_of(new, part), written, self.seq);
        }
    }
}

/// Makes part `part` of `old` equal to `new`'s, given the entries `added` at their positions
/// (all the positions where the two differ, in order).
fn catch_up(old: &mut Snapshot, new: &Snapshot, part: &str, added: &[(usize, Entry<'_>)]) {
    fn list(old: &mut Vec<Value>, new: &[Value], added: &[(usize, Entry<'_>)]) {
        old.truncate(new.len());
        for (i, entry) in added {
            if let Entry::Item(v) = entry {
                match old.get_mut(*i) {
                    Some(slot) => *slot = (*v).clone(),
                    None => old.push((*v).clone()),
                }
            }
        }
    }
    fn map(old: &mut JsonObject, new: &JsonObject, added: &[(usize, Entry<'_>)]) {
        for (_, entry) in added {
            if let Entry::Member(k, v) = entry {
                old.insert((*k).to_string(), (*v).clone());
            }
        }
        // `old` now has every key of `new`: it has others only if its size differs.
        if old.len() != new.len() {
            old.retain(|k, _| new.contains_key(k));
        }
    }
    let (c, n) = (&mut old.context, &new.context);
    match part {
        "history" => list(&mut c.history, &n.history, added),
        "memory" => list(&mut c.memory, &n.memory, added),
        "messages" => list(&mut c.messages, &n.messages, added),
        "state" => map(&mut c.state, &n.state, added),
        "variables" => map(&mut c.variables, &n.variables, added),
        "results" => map(&mut old.tool_state.results, &new.tool_state.results, added),
        _ => old
            .progress
            .pending_steps
            .clone_from(&new.progress.pending_steps),
    }
}

/// The lists and maps of a snapshot, read back.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub history: Vec<Value>,
    pub memory: Vec<Value>,
    pub messages: Vec<Value>,
    pub pending_steps: Vec<String>,
    pub results: JsonObject,
    pub state: JsonObject,
    pub variables: JsonObject,
}

/// Why the entries could not be written.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// A statement failed.
    Query(diesel::result::Error),
    /// What is stored does not match the line's tip.
    Damaged(String),
}

impl From<diesel::result::Error> for WriteError {
    fn from(e: diesel::result::Error) -> Self {
        Self::Query(e)
    }
}

/// Reads the entries visible at `seq` in `line`, and where their revisions start (or why that
/// does not add up: only a save continuing the checkpoint needs it); `expected` are the counts
/// per part.
pub(crate) fn load(
    conn: &mut AnyConnection,
    line: i64,
    seq: i64,
    expected: &BTreeMap<String, u64>,
) -> Result<(Parts, Result<EntrySince, String>), LoadRowsError> {
    let mut parts = Parts::default();
    let mut since = Ok(EntrySince::default());
    if expected.values().all(|n| *n == 0) {
        return Ok((parts, since));
    }
    let rows: Vec<(String, i64, i64, String)> = visible_entries!(line, seq)
        .select((
            entries::part,
            entries::position,
            entries::from_seq,
            entries::payload,
        ))
        .load(conn)
        .map_err(LoadRowsError::Query)?;
    let mut found: BTreeMap<String, u64> = BTreeMap::new();
    for (part, position, from_seq, payload) in rows {
        if let Ok(known) = &mut since {
            if let Err(m) = known.push(&part, position, from_seq) {
                since = Err(format!("entries at line {line} seq {seq}: {m}"));
            }
        }
        let bad =
            |e: serde_json::Error| LoadRowsError::Damaged(format!("a stored {part} entry: {e}"));
        match part.as_str() {
            "history" => parts
                .history
                .push(serde_json::from_str(&payload).map_err(bad)?),
            "memory" => parts
                .memory
                .push(serde_json::from_str(&payload).map_err(bad)?),
            "messages" => parts
                .messages
                .push(serde_json::from_str(&payload).map_err(bad)?),
            "pending_steps" => parts
                .pending_steps
                .push(serde_json::from_str(&payload).map_err(bad)?),
            "results" | "state" | "variables" => {
                let (k, v): (String, Value) = serde_json::from_str(&payload).map_err(bad)?;
                let map = match part.as_str() {
                    "results" => &mut parts.results,
                    "state" => &mut parts.state,
                    _ => &mut parts.variables,
                };
                map.insert(k, v);
            }
            other => {
                return Err(LoadRowsError::Damaged(format!(
                    "unknown entry part {other:?}"
                )))
            }
        }
        *found.entry(part).or_default() += 1;
    }
    let expected: BTreeMap<String, u64> = expected
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (k.clone(), *n))
        .collect();
    if found != expected {
        return Err(LoadRowsError::Damaged(format!(
            "entries at line {line} seq {seq}: found {found:?}, expected {expected:?}"
        )));
    }
    parts.pending_steps.reverse();
    Ok((parts, since))
}

/// The task (`variables.task`, when a string) of the checkpoint at `seq` in `line`.
pub(crate) fn task_at(conn: &mut AnyConnection, line: i64, seq: i64) -> QueryResult<String> {
    let payload: Option<String> = visible_entries!(line, seq)
        .select(entries::payload)
        .filter(entries::part.eq("variables"))
        .filter(entries::key.eq("task"))
        .first(conn)
        .optional()?;
    Ok(
        match payload.and_then(|p| serde_json::from_str::<(String, Value)>(&p).ok()) {
            Some((k, Value::String(s))) if k == "task" => text(&s).into_owned(),
            _ => String::new(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::tests::assert_kinds;
    use serde_json::json;

    #[test]
    fn changes_write_the_differences_and_bring_the_old_snapshot_up_to_date() {
        let ctx = ItemContext {
            line_id: 1,
            seq: 5,
            execution_id: "exec",
            checkpoint_id: "ckpt",
        };
        let mut old = Snapshot::default();
        old.context.history = vec![json!("a"), json!("b"), json!("c")];
        old.context.variables.insert("k".into(), json!(1));
        old.context.variables.insert("m".into(), json!(2));
        old.progress.pending_steps = vec!["one".into(), "two".into()];
        let mut new = old.clone();
        new.context.history[1] = json!("B");
        new.context.history.pop();
        new.context.variables.remove("k");
        new.context.variables.insert("j".into(), json!(0));
        new.tool_state.results.insert("call".into(), json!([1]));
        new.progress.pending_steps.remove(0);
        // Where the old revisions start: history at 1, 2, 3; pending steps at 2; variables at 4.
        let part = |name: &str| PARTS.iter().position(|p| *p == name).unwrap();
        let mut since = EntrySince::default();
        since.advance(part("history"), 1, [0].into_iter(), 1);
        since.advance(part("history"), 2, [1].into_iter(), 2);
        since.advance(part("history"), 3, [2].into_iter(), 3);
        since.advance(part("pending_steps"), 2, [0, 1].into_iter(), 2);
        since.advance(part("variables"), 2, [0, 1].into_iter(), 4);
        let changes = EntryChanges::between(ctx, &old, &since, &new);
        changes.rows.iter().for_each(assert_kinds);
        let mut closed: Vec<(&str, i64, Option<i64>)> = changes
            .closed
            .iter()
            .map(|c| (c.part, c.position, c.from_seq))
            .collect();
        closed.sort();
        // history: 1 changed, 2 gone; pending steps (from the end): "one" gone; variables:
        // "j" at position 0 where "k" was, "m" stays at 1.
        assert_eq!(
            closed,
            [
                ("history", 1, Some(2)),
                ("history", 2, Some(3)),
                ("pending_steps", 1, Some(2)),
                ("variables", 0, Some(4))
            ]
        );
        let added: Vec<(&str, i64, Option<&str>)> = changes
            .rows
            .iter()
            .map(|r| (r.part, r.position, r.key.as_deref()))
            .collect();
        assert_eq!(
            added,
            [
                ("history", 1, None),
                ("results", 0, Some("call")),
                ("variables", 0, Some("j"))
            ]
        );
        changes.apply(&mut old, &mut since, &new);
        assert_eq!(old, new);
        // history 1 and variables 0 start at the save's seq now; history 2 and the first
        // pending step are gone; results 0 is new.
        let mut expected = EntrySince::default();
        expected.advance(part("history"), 2, [0].into_iter(), 1);
        expected.advance(part("history"), 2, [1].into_iter(), 5);
        expected.advance(part("pending_steps"), 1, [0].into_iter(), 2);
        expected.advance(part("results"), 1, [0].into_iter(), 5);
        expected.advance(part("variables"), 2, [0].into_iter(), 5);
        expected.advance(part("variables"), 2, [1].into_iter(), 4);
        assert_eq!(since, expected);
        assert!(EntryChanges::between(ctx, &new, &since, &new)
            .rows
            .is_empty());
    }
}
