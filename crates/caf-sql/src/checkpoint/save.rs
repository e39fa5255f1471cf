//! Saving one checkpoint: lines, incremental item revisions, idempotence.
//!
//! Everything here runs inside a transaction opened by the caller (see
//! [`crate::connection::AnyConnection::in_tx`]), so a checkpoint is stored whole or not at all.

use crate::checkpoint::checkpoint_row::{CheckpointRow, Place};
use crate::checkpoint::entry_revisions;
use crate::checkpoint::item_columns::ItemContext;
use crate::checkpoint::item_revisions::{write_diff, ItemTable, Steps, Thoughts, ToolCalls};
use crate::checkpoint::line_cache::{LineCache, Tip};
use crate::checkpoint::load::load_in_tx;
use crate::columns::text;
use crate::connection::{with_inner, AnyConnection};
use crate::delete::delete_in_tx;
use crate::error::{Result, SqlError};
use crate::executions::{ensure_execution, saved_into_execution};
use crate::schema::{checkpoint_labels, checkpoints, lines};
use crate::statement::Stmt;
use caf_core::format::Checkpoint;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use std::collections::BTreeSet;

/// What caf writes for a checkpoint: its integrity checksum and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Encoded {
    pub integrity: String,
    pub bytes: u64,
}

impl Encoded {
    /// Reads the integrity line of an encoded document as caf writes it.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        const PREFIX: &[u8] = b"\n  \"integrity\": \"";
        let start = bytes.windows(PREFIX.len()).position(|w| w == PREFIX)? + PREFIX.len();
        let len = bytes[start..].iter().position(|b| *b == b'"')?;
        let integrity = std::str::from_utf8(&bytes[start..start + len]).ok()?;
        Some(Self {
            integrity: integrity.to_string(),
            bytes: bytes.len() as u64,
        })
    }
}

/// What a save did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncOutcome {
    /// The checkpoint was new.
    Added,
    /// The same checkpoint (same id, same content) was already stored: nothing changed.
    Unchanged,
    /// A checkpoint with this id but other content was stored: it was replaced.
    Replaced,
}

/// The result of [`save_in_tx`]: what happened, and the line tip to cache once committed.
pub(crate) struct Saved {
    pub outcome: SyncOutcome,
    pub tip: Option<Tip>,
}

/// What a save needs to know first, read in one statement: the stored version of the
/// checkpoint, if any, and where its parent is.
#[derive(QueryableByName)]
struct Lookup {
    #[diesel(sql_type = Nullable<Text>)]
    existing_integrity: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    existing_execution: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    parent_line: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    parent_seq: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    line_execution: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    line_sealed: Option<bool>,
    #[diesel(sql_type = Nullable<BigInt>)]
    tip_seq: Option<i64>,
}

const LOOKUP: &str = "SELECT \
    (SELECT integrity FROM checkpoints WHERE id = ?) AS existing_integrity, \
    (SELECT execution_id FROM checkpoints WHERE id = ?) AS existing_execution, \
    p.line_id AS parent_line, p.seq AS parent_seq, l.execution_id AS line_execution, \
    l.sealed AS line_sealed, \
    (SELECT MAX(t.seq) FROM checkpoints t WHERE t.line_id = p.line_id) AS tip_seq \
    FROM (SELECT 1 AS one) AS o \
    LEFT JOIN checkpoints p ON p.id = ? \
    LEFT JOIN lines l ON l.id = p.line_id";

fn lookup(conn: &mut AnyConnection, c: &Checkpoint) -> QueryResult<Lookup> {
    let parent = c.parent_id.as_ref().map(|p| p.as_str());
    let rows: Vec<Lookup> = Stmt::new(LOOKUP)
        .text(c.id.as_str())
        .text(c.id.as_str())
        .opt_text(parent)
        .load(conn)?;
    rows.into_iter()
        .next()
        .ok_or(diesel::result::Error::NotFound)
}

impl Lookup {
    /// The parent's place, when `c` continues its line: the parent is the newest checkpoint of
    /// a line of the same execution that is not sealed.
    fn continued(&self, execution: &str) -> Option<Place> {
        match (self.parent_line, self.parent_seq, &self.line_execution) {
            (Some(line_id), Some(seq), Some(e))
                if e == execution
                    && self.line_sealed == Some(false)
                    && self.tip_seq == Some(seq) =>
            {
                Some(Place { line_id, seq })
            }
            _ => None,
        }
    }
}

/// Saves `c` (encoded as `enc`) in the open write transaction.
pub(crate) fn save_in_tx(
    conn: &mut AnyConnection,
    cache: &mut LineCache,
    c: &Checkpoint,
    enc: &Encoded,
) -> Result<Saved> {
    let backend = conn.backend();
    let id = c.id.as_str();
    let execution = c.execution_id.as_str();
    let fail = |what: &str| SqlError::query(backend, format!("saving {id}: {what}"));
    conn.lock_execution(execution)?;
    let mut found = lookup(conn, c).map_err(fail("looking it up"))?;
    let mut outcome = SyncOutcome::Added;
    if let Some(integrity) = &found.existing_integrity {
        if *integrity == enc.integrity {
            return Ok(Saved {
                outcome: SyncOutcome::Unchanged,
                tip: None,
            });
        }
        if let Some(old_execution) = found.existing_execution.as_deref() {
            if old_execution != execution {
                conn.lock_execution(old_execution)?;
            }
        }
        delete_in_tx(conn, cache, &c.id)?;
        outcome = SyncOutcome::Replaced;
        // The old version may have been its parent's line's tip: look again.
        found = lookup(conn, c).map_err(fail("looking it up"))?;
    }
    let (place, old) = match found.continued(execution) {
        Some(parent) => {
            let place = Place {
                line_id: parent.line_id,
                seq: parent.seq + 1,
            };
            (place, Some(previous_snapshot(conn, cache, parent, c)?))
        }
        None => {
            ensure_execution(conn, c)?;
            let place = Place {
                line_id: fastrand::i64(1..i64::MAX),
                seq: 0,
            };
            diesel::insert_into(lines::table)
                .values((
                    lines::id.eq(place.line_id),
                    lines::execution_id.eq(execution),
                    lines::sealed.eq(false),
                ))
                .execute(conn)
                .map_err(fail("starting a line"))?;
            (place, None)
        }
    };
    let ctx = ItemContext {
        line_id: place.line_id,
        seq: place.seq,
        execution_id: execution.to_string(),
        checkpoint_id: id.to_string(),
    };
    let new = &c.snapshot;
    entry_revisions::write_diff(conn, &ctx, old.as_ref().map(|t| &t.snapshot), new)
        .map_err(fail("context entries"))?;
    // The previous snapshot becomes this one, copying only what changed: the next save of the
    // line compares against it.
    let mut tip = old.unwrap_or_else(|| Tip::of_new_line(c, place));
    let s = &mut tip.snapshot;
    write_diff::<Thoughts>(conn, &ctx, Thoughts::of_mut(s), Thoughts::of(new))
        .map_err(fail("thoughts"))?;
    write_diff::<ToolCalls>(conn, &ctx, ToolCalls::of_mut(s), ToolCalls::of(new))
        .map_err(fail("tool calls"))?;
    write_diff::<Steps>(conn, &ctx, Steps::of_mut(s), Steps::of(new)).map_err(fail("steps"))?;
    tip.advance(c, place);
    diesel::insert_into(checkpoints::table)
        .values(CheckpointRow::of(c, place, &enc.integrity, enc.bytes))
        .execute(conn)
        .map_err(fail("inserting it"))?;
    let labels: BTreeSet<String> = c
        .metadata
        .labels
        .iter()
        .map(|l| text(l).into_owned())
        .collect();
    if !labels.is_empty() {
        let rows: Vec<_> = labels
            .iter()
            .map(|l| {
                (
                    checkpoint_labels::checkpoint_id.eq(id),
                    checkpoint_labels::label.eq(l.as_str()),
                )
            })
            .collect();
        with_inner!(conn, c => diesel::insert_into(checkpoint_labels::table)
            .values(&rows)
            .execute(c))
        .map_err(fail("labels"))?;
    }
    saved_into_execution(conn, c)?;
    Ok(Saved {
        outcome,
        tip: Some(tip),
    })
}

/// The snapshot of the line's tip (the parent): from the cache when it is current, else read
/// back.
fn previous_snapshot(
    conn: &mut AnyConnection,
    cache: &mut LineCache,
    place: Place,
    c: &Checkpoint,
) -> Result<Tip> {
    let Some(parent) = c.parent_id.as_ref() else {
        return Err(SqlError::Corrupt {
            backend: conn.backend(),
            what: format!("checkpoint {}", c.id),
            message: "continues a line without a parent".into(),
        });
    };
    if let Some(tip) = cache.take(place, parent.as_str()) {
        return Ok(tip);
    }
    let loaded = load_in_tx(conn, parent)?.ok_or_else(|| SqlError::NotFound {
        what: "checkpoint",
        id: parent.to_string(),
    })?;
    Ok(Tip::of(&loaded, place))
}
