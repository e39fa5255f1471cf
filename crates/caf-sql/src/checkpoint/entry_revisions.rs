//! The `entries` table: revisions of the snapshot's lists and maps (context history, messages,
//! memory, state, variables; tool results; the pending plan steps).
//!
//! Conversations and histories grow with every step; storing them once per checkpoint would
//! make the database grow with checkpoints × state size. They are stored like items instead:
//! one row per distinct entry per position, visible from `from_seq` to `to_seq`. Map entries
//! sit at their position in key order; pending steps are numbered from the end, so that
//! completing the next step (removing the first) closes one row instead of moving all.

use crate::checkpoint::item_columns::ItemContext;
use crate::columns::{count, json, text};
use crate::connection::{insert_rows, AnyConnection};
use crate::schema::entries;
use caf_core::format::{JsonObject, Snapshot};
use diesel::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// Rows per multi-row statement.
const CHUNK: usize = 400;

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

impl Entry<'_> {
    fn key(&self) -> Option<String> {
        match self {
            Self::Member(k, _) => Some(text(k).into_owned()),
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
        .iter()
        .map(|p| (*p, part_of(s, p).len() as u64))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[derive(Insertable)]
#[diesel(table_name = entries, treat_none_as_default_value = false)]
struct NewEntry<'a> {
    line_id: i64,
    part: &'static str,
    position: i64,
    from_seq: i64,
    execution_id: &'a str,
    first_checkpoint_id: &'a str,
    key: Option<String>,
    payload: String,
}

/// Writes the entry revisions that turn `old` (the previous checkpoint of the line; `None` for a
/// new line) into `new` at `ctx.seq`.
pub(crate) fn write_diff(
    conn: &mut AnyConnection,
    ctx: &ItemContext,
    old: Option<&Snapshot>,
    new: &Snapshot,
) -> QueryResult<()> {
    let mut added = Vec::new();
    for part in PARTS {
        let before = old.map(|s| part_of(s, part)).unwrap_or_default();
        let after = part_of(new, part);
        let mut closed = Vec::new();
        for i in 0..before.len().max(after.len()) {
            match (before.get(i), after.get(i)) {
                (Some(b), Some(a)) if b == a => {}
                (b, a) => {
                    if b.is_some() {
                        closed.push(count(i));
                    }
                    if let Some(a) = a {
                        added.push(NewEntry {
                            line_id: ctx.line_id,
                            part,
                            position: count(i),
                            from_seq: ctx.seq,
                            execution_id: &ctx.execution_id,
                            first_checkpoint_id: &ctx.checkpoint_id,
                            key: a.key(),
                            payload: a.payload(),
                        });
                    }
                }
            }
        }
        for chunk in closed.chunks(CHUNK) {
            let current = entries::table
                .filter(entries::line_id.eq(ctx.line_id))
                .filter(entries::part.eq(part))
                .filter(entries::to_seq.is_null());
            match chunk {
                [one] => diesel::update(current.filter(entries::position.eq(*one)))
                    .set(entries::to_seq.eq(ctx.seq))
                    .execute(conn)?,
                many => diesel::update(current.filter(entries::position.eq_any(many)))
                    .set(entries::to_seq.eq(ctx.seq))
                    .execute(conn)?,
            };
        }
    }
    for chunk in added.chunks(CHUNK) {
        insert_rows!(conn, entries::table, chunk)?;
    }
    Ok(())
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

/// Why the entries could not be read back.
#[derive(Debug)]
pub(crate) enum LoadError {
    /// The statement failed.
    Query(diesel::result::Error),
    /// What is stored does not add up or does not decode.
    Damaged(String),
}

/// Reads the entries visible at `seq` in `line`; `expected` are the counts per part.
pub(crate) fn load(
    conn: &mut AnyConnection,
    line: i64,
    seq: i64,
    expected: &BTreeMap<String, u64>,
) -> Result<Parts, LoadError> {
    let mut parts = Parts::default();
    if expected.values().all(|n| *n == 0) {
        return Ok(parts);
    }
    let rows: Vec<(String, String)> = entries::table
        .select((entries::part, entries::payload))
        .filter(entries::line_id.eq(line))
        .filter(entries::from_seq.le(seq))
        .filter(entries::to_seq.is_null().or(entries::to_seq.gt(seq)))
        .order((entries::part.asc(), entries::position.asc()))
        .load(conn)
        .map_err(LoadError::Query)?;
    let mut found: BTreeMap<String, u64> = BTreeMap::new();
    for (part, payload) in rows {
        let bad = |e: serde_json::Error| LoadError::Damaged(format!("a stored {part} entry: {e}"));
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
            other => return Err(LoadError::Damaged(format!("unknown entry part {other:?}"))),
        }
        *found.entry(part).or_default() += 1;
    }
    let expected: BTreeMap<String, u64> = expected
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (k.clone(), *n))
        .collect();
    if found != expected {
        return Err(LoadError::Damaged(format!(
            "entries at line {line} seq {seq}: found {found:?}, expected {expected:?}"
        )));
    }
    parts.pending_steps.reverse();
    Ok(parts)
}

/// The task (`variables.task`, when a string) of the checkpoint at `seq` in `line`.
pub(crate) fn task_at(conn: &mut AnyConnection, line: i64, seq: i64) -> QueryResult<String> {
    let payload: Option<String> = entries::table
        .select(entries::payload)
        .filter(entries::line_id.eq(line))
        .filter(entries::part.eq("variables"))
        .filter(entries::key.eq("task"))
        .filter(entries::from_seq.le(seq))
        .filter(entries::to_seq.is_null().or(entries::to_seq.gt(seq)))
        .first(conn)
        .optional()?;
    Ok(
        match payload.and_then(|p| serde_json::from_str::<(String, Value)>(&p).ok()) {
            Some((k, Value::String(s))) if k == "task" => text(&s).into_owned(),
            _ => String::new(),
        },
    )
}
