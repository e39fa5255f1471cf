//! How far a journaled store's writer has written its journal slot (the `journal_slots`
//! table): after a crash, only the records after the mark are saved again.

use crate::connection::TxMode;
use crate::error::{Result, SqlError};
use crate::statement::Stmt;
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

impl SqlStore {
    /// Records that the records of the journal slot `slot` numbered below `applied`, in its
    /// generation `generation`, are written: rows committed, files in place. Not flushed: the
    /// journal keeps them until the log is.
    pub(crate) fn mark_journal(&self, slot: &str, generation: u64, applied: u64) -> Result<()> {
        // The generation is stored as its bits (a BIGINT is signed).
        let (generation, applied) = (generation as i64, applied as i64);
        self.with_tx_unflushed(TxMode::Write, |conn, _| {
            let backend = conn.backend();
            let failed = || SqlError::query(backend, "recording how far the journal is written");
            Stmt::new("DELETE FROM journal_slots WHERE slot = ?")
                .text(slot)
                .execute(conn)
                .map_err(failed())?;
            Stmt::new("INSERT INTO journal_slots (slot, generation, applied) VALUES (?, ?, ?)")
                .text(slot)
                .int(generation)
                .int(applied)
                .execute(conn)
                .map_err(failed())?;
            Ok(())
        })
    }

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
