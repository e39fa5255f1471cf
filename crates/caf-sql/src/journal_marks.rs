//! How far a journaled store's writer has written its journal slot (the `journal_slots`
//! table): after a crash, only the records after the mark are saved again.

use crate::connection::{AnyConnection, TxMode};
use crate::error::{Result, SqlError};
use crate::statement::fixed::execute;
use crate::statement::{shape, Param, Stmt};
use crate::SqlStore;
use diesel::sql_types::BigInt;
use diesel::QueryableByName;
use diesel::RunQueryDsl;

#[derive(QueryableByName)]
struct Mark {
    #[diesel(sql_type = BigInt)]
    generation: i64,
    #[diesel(sql_type = BigInt)]
    applied: i64,
}

/// Where a journaled save's record is: the slot's name in `journal_slots`, its generation, and
/// the number after the record's (what the mark becomes once the save is written).
#[derive(Debug, Clone, Copy)]
pub(crate) struct JournalMark<'a> {
    pub(crate) slot: &'a str,
    pub(crate) generation: u64,
    pub(crate) applied: u64,
}

/// Records, in the transaction of the save of the record before `mark.applied`, that the
/// slot's records before it are written. Committed with the saves' rows (their files already
/// in place, see [`crate::HybridStore`]'s batches; unflushed, so written again from the
/// database by the next open after a power loss, see [`crate::recover`]), so that no other
/// store's later delete or save of the checkpoint can be undone from the journal.
pub(crate) fn record_in(conn: &mut AnyConnection, mark: &JournalMark<'_>) -> Result<()> {
    // The generation is stored as its bits (a BIGINT is signed).
    let (generation, applied) = (mark.generation as i64, mark.applied as i64);
    let backend = conn.backend();
    execute::<RecordMark>(
        conn,
        &[
            Param::Text(mark.slot),
            Param::Int(generation),
            Param::Int(applied),
        ],
    )
    .map_err(SqlError::query(
        backend,
        "recording how far the journal is written",
    ))?;
    Ok(())
}

shape!(
    /// Sets a slot's mark (`slot`, `generation`, `applied`): part of every journaled batch,
    /// so kept prepared.
    RecordMark,
    "INSERT INTO journal_slots (slot, generation, applied) VALUES (?, ?, ?) \
     ON CONFLICT (slot) DO UPDATE \
     SET generation = excluded.generation, applied = excluded.applied"
);

impl SqlStore {
    /// The mark of the journal slot `slot`: its generation, and the number of the first
    /// record not known to be written.
    pub(crate) fn journal_mark(&self, slot: &str) -> Result<Option<(u64, u64)>> {
        self.with_tx(TxMode::Read, |conn, _| {
            let backend = conn.backend();
            let rows: Vec<Mark> =
                Stmt::new("SELECT generation, applied FROM journal_slots WHERE slot = ?")
                    .text(slot)
                    .load(conn)
                    .map_err(SqlError::query(
                        backend,
                        "reading how far the journal is written",
                    ))?;
            Ok(rows
                .first()
                .map(|m| (m.generation as u64, m.applied as u64)))
        })
    }
}
