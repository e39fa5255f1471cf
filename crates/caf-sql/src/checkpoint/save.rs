//! Saving one checkpoint: lines, incremental item revisions, idempotence.
//!
//! Everything here runs inside a transaction opened by the caller (see
//! [`crate::connection::AnyConnection::in_tx`]), so a checkpoint is stored whole or not at all.
//!
//! The usual save continues a line this store wrote last (its tip is in the [`LineCache`]): its
//! `checkpoints` row goes in first, on the condition that the parent is still the line's tip
//! ([`CheckpointRow::append`], one statement that both checks and writes); then the differences
//! from the cached snapshot, and the execution's row. That is every statement of the save,
//! each prepared once per connection: on the agent-run workload, six (the checkpoint, one
//! thought, one tool call, the variables that changed closed and their new revisions with the
//! new tool result inserted, the execution), and a seventh on SQLite when the checksum was still
//! being computed as the rows went in (a hybrid save hashes its file on another thread): the
//! checksum, written into the `checkpoints` row last. Anything else — no cached tip, the tip
//! moved on in another process, the same id saved again — takes the general path: read what is
//! stored ([`lookup`]), then replace, continue (reading the parent back if it is not cached) or
//! start a line.

use crate::checkpoint::append_pg;
use crate::checkpoint::changes::Changes;
use crate::checkpoint::checkpoint_row::{CheckpointRow, Place};
use crate::checkpoint::item_columns::ItemContext;
use crate::checkpoint::line_cache::{LineCache, Tip};
use crate::checkpoint::load::load_with_since_in_tx;
use crate::checkpoint::parent_lookup::lookup;
use crate::columns::text;
use crate::connection::{AnyConnection, Backend};
use crate::delete::delete_in_tx;
use crate::error::{Result, SqlError};
use crate::executions::{ensure_execution, ExecutionUpdate};
use crate::statement::fixed::{execute, insert_rows};
use crate::statement::{row, shape, Param};
use caf_core::format::Checkpoint;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeSet;

/// What caf writes for a checkpoint: its size and integrity checksum. The checksum may still
/// be being computed (a hybrid save hashes its file on the thread that writes it): it is then
/// asked for only where it is needed, after the rows that do not need it are written.
pub(crate) struct Encoded<'a> {
    pub bytes: u64,
    integrity: OnceCell<String>,
    /// Waits for the checksum, when it was not known at first.
    later: Option<&'a dyn Fn() -> Result<String>>,
}

impl<'a> Encoded<'a> {
    /// Reads the integrity line of an encoded document as caf writes it.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        Some(Self {
            bytes: bytes.len() as u64,
            integrity: OnceCell::from(caf_core::store::stated_integrity(bytes)?),
            later: None,
        })
    }

    /// An encoding of `bytes` bytes whose checksum is `integrity`.
    pub fn with_integrity(bytes: u64, integrity: String) -> Self {
        Self {
            bytes,
            integrity: OnceCell::from(integrity),
            later: None,
        }
    }

    /// An encoding of `bytes` bytes whose checksum `integrity` gives (waiting for it).
    pub fn later(bytes: u64, integrity: &'a dyn Fn() -> Result<String>) -> Self {
        Self {
            bytes,
            integrity: OnceCell::new(),
            later: Some(integrity),
        }
    }

    /// The checksum, once known (waited for the first time, if it was not known at first).
    pub fn integrity(&self) -> Result<&str> {
        if let Some(known) = self.integrity.get() {
            return Ok(known);
        }
        let found = match self.later {
            Some(later) => later()?,
            None => String::new(),
        };
        Ok(self.integrity.get_or_init(|| found))
    }

    /// The checksum if it is known without waiting.
    pub(crate) fn known(&self) -> Option<&str> {
        self.integrity.get().map(String::as_str)
    }

    /// The checksum, known at first.
    pub fn into_integrity(self) -> Option<String> {
        self.integrity.into_inner()
    }
}

/// What a SQLite save's `checkpoints` row holds, inside its transaction, until the checksum it
/// waits for is written over it (never committed). As long as a checksum, so that the row keeps
/// its size when it gets it.
const PENDING: &str = "sha256:pending-00000000000000000000000000000000000000000000000000000000";

shape!(
    /// Writes the checksum of a checkpoint saved before it was known (`integrity`, `id`).
    SetIntegrity,
    "UPDATE checkpoints SET integrity = ? WHERE id = ?"
);

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

shape!(
    /// Starts a line (`id`, `execution_id`).
    StartLine,
    "INSERT INTO lines (id, execution_id, sealed) VALUES (?, ?, ?)"
);

shape!(
    /// A multi-row insert into `checkpoint_labels`.
    InsertLabels,
    "INSERT INTO checkpoint_labels (checkpoint_id, label) VALUES ",
    "(?, ?)",
    ""
);

/// A `checkpoint_labels` row.
struct LabelRow<'a> {
    checkpoint_id: &'a str,
    label: &'a str,
}

row!(LabelRow<'_>, |r| [Text(r.checkpoint_id), Text(r.label)]);

/// Saves `c` (encoded as `enc`) in the open write transaction.
pub(crate) fn save_in_tx(
    conn: &mut AnyConnection,
    cache: &mut LineCache,
    c: &Checkpoint,
    enc: &Encoded<'_>,
) -> Result<Saved> {
    match conn.backend() {
        Backend::Postgres => append_pg::lock_for_save(conn, c.execution_id.as_str())?,
        Backend::Sqlite => conn.lock_execution(c.execution_id.as_str())?,
    }
    match continue_cached_line(conn, cache, c, enc)? {
        Some(saved) => Ok(saved),
        None => save_in_general(conn, cache, c, enc),
    }
}

/// The errors of saving a checkpoint: "saving ID: what was being written", built only when a
/// statement fails.
#[derive(Clone, Copy)]
struct Failing<'a> {
    backend: Backend,
    id: &'a str,
}

impl<'a> Failing<'a> {
    fn of(conn: &AnyConnection, c: &'a Checkpoint) -> Self {
        Self {
            backend: conn.backend(),
            id: c.id.as_str(),
        }
    }

    fn at(self, what: &'static str) -> impl FnOnce(diesel::result::Error) -> SqlError + 'a {
        move |source| SqlError::Query {
            backend: self.backend,
            context: format!("saving {}: {what}", self.id),
            source,
        }
    }
}

/// The usual save: `c`'s parent is the tip of a line this store wrote, remembered in `cache`.
/// `None` (nothing written) when it is not, or no longer is, or when a checkpoint with `c`'s id
/// is stored already.
fn continue_cached_line(
    conn: &mut AnyConnection,
    cache: &mut LineCache,
    c: &Checkpoint,
    enc: &Encoded<'_>,
) -> Result<Option<Saved>> {
    let Some(parent) = c.parent_id.as_ref() else {
        return Ok(None);
    };
    let Some(mut tip) = cache.take_checkpoint(parent.as_str(), c.execution_id.as_str()) else {
        return Ok(None);
    };
    let place = Place {
        line_id: tip.place.line_id,
        seq: tip.place.seq + 1,
    };
    let pending = conn.backend().hashes_beside_rows() && enc.known().is_none();
    let integrity = if pending { PENDING } else { enc.integrity()? };
    let row = CheckpointRow::of(c, place, integrity, enc.bytes);
    let changes = Changes::between(ItemContext::of(c, place), &tip, &c.snapshot);
    let fail = Failing::of(conn, c);
    if conn.backend() == Backend::Postgres {
        let labels = labels_of(c);
        let execution = ExecutionUpdate::of(c);
        let done = append_pg::append(
            conn,
            &row,
            parent.as_str(),
            tip.place,
            &changes,
            &label_rows(c, &labels),
            &execution,
        )
        .map_err(fail.at("inserting it"))?;
        if !done.appended {
            // The general path looks again (and may still use the tip, if it is one).
            cache.put(tip);
            return Ok(None);
        }
        if !done.execution_updated {
            execution.write_in_full(conn)?;
        }
    } else {
        let appended = row
            .append(conn, parent.as_str(), tip.place)
            .map_err(fail.at("inserting it"))?;
        if !appended {
            cache.put(tip);
            return Ok(None);
        }
        changes.write(conn)?;
        write_labels_and_execution(conn, c)?;
        if pending {
            let integrity = enc.integrity()?;
            execute::<SetIntegrity>(conn, &[Param::Text(integrity), Param::Text(c.id.as_str())])
                .map_err(fail.at("writing its checksum"))?;
        }
    }
    changes.apply(&mut tip, &c.snapshot);
    tip.advance(c, place);
    Ok(Some(Saved {
        outcome: SyncOutcome::Added,
        tip: Some(tip),
    }))
}

/// Every other save: reads what is stored first ([`lookup`]).
fn save_in_general(
    conn: &mut AnyConnection,
    cache: &mut LineCache,
    c: &Checkpoint,
    enc: &Encoded<'_>,
) -> Result<Saved> {
    let execution = c.execution_id.as_str();
    let fail = Failing::of(conn, c);
    let mut found = lookup(conn, c).map_err(fail.at("looking it up"))?;
    let mut outcome = SyncOutcome::Added;
    if let Some(integrity) = &found.existing_integrity {
        if integrity == enc.integrity()? {
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
        found = lookup(conn, c).map_err(fail.at("looking it up"))?;
    }
    let (place, old) = match found.continued(execution) {
        Some(parent) => {
            let place = Place {
                line_id: parent.line_id,
                seq: parent.seq + 1,
            };
            (place, previous_snapshot(conn, cache, parent, c)?)
        }
        None => {
            ensure_execution(conn, c)?;
            let place = Place {
                line_id: fastrand::i64(1..i64::MAX),
                seq: 0,
            };
            execute::<StartLine>(
                conn,
                &[
                    Param::Int(place.line_id),
                    Param::Text(execution),
                    Param::Bool(false),
                ],
            )
            .map_err(fail.at("starting a line"))?;
            (place, Tip::of_new_line(c, place))
        }
    };
    let tip = write_items(conn, c, place, old)?;
    // Last: a checksum still being computed had the items' time to be ready.
    CheckpointRow::of(c, place, enc.integrity()?, enc.bytes)
        .insert(conn)
        .map_err(fail.at("inserting it"))?;
    write_labels_and_execution(conn, c)?;
    Ok(Saved {
        outcome,
        tip: Some(tip),
    })
}

/// Writes the item and entry revisions that turn `tip` (the line's tip before `c`; empty for a
/// new line) into `c` at `place`; returns the tip `c` makes, updated in place from `tip`.
fn write_items(
    conn: &mut AnyConnection,
    c: &Checkpoint,
    place: Place,
    mut tip: Tip,
) -> Result<Tip> {
    let changes = Changes::between(ItemContext::of(c, place), &tip, &c.snapshot);
    changes.write(conn)?;
    changes.apply(&mut tip, &c.snapshot);
    tip.advance(c, place);
    Ok(tip)
}

/// `c`'s labels as stored: in their query form, each once.
fn labels_of(c: &Checkpoint) -> BTreeSet<Cow<'_, str>> {
    c.metadata.labels.iter().map(|l| text(l)).collect()
}

/// The `checkpoint_labels` rows of `c` with `labels`.
fn label_rows<'a>(c: &'a Checkpoint, labels: &'a BTreeSet<Cow<'a, str>>) -> Vec<LabelRow<'a>> {
    labels
        .iter()
        .map(|label| LabelRow {
            checkpoint_id: c.id.as_str(),
            label,
        })
        .collect()
}

/// Inserts `c`'s labels and brings its execution's row up to date.
pub(crate) fn write_labels_and_execution(conn: &mut AnyConnection, c: &Checkpoint) -> Result<()> {
    if !c.metadata.labels.is_empty() {
        let labels = labels_of(c);
        insert_rows::<InsertLabels, _>(conn, &label_rows(c, &labels))
            .map_err(Failing::of(conn, c).at("labels"))?;
    }
    ExecutionUpdate::of(c).write(conn)
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
    let (loaded, since) =
        load_with_since_in_tx(conn, parent)?.ok_or_else(|| SqlError::NotFound {
            what: "checkpoint",
            id: parent.to_string(),
        })?;
    Ok(Tip::of(&loaded, place, since))
}
