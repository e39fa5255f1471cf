//! [`RowsFloor`]: the least a save's rows cost in SQLite on this machine, measured beside the
//! store's own saves in the same run (`caf bench`), so that a goal for the SQL part of a save
//! can be told apart from what the machine allows.
//!
//! The floor writes exactly the rows a usual save adds — its `checkpoints` row, the revisions
//! of the thoughts, tool calls, completed steps and context entries that are new or changed,
//! its labels, and its execution's row brought up to date — with the store's own prepared
//! statements, in one transaction committed as the store commits (write-ahead log, no flush),
//! on a connection opened as the store opens its own. What it leaves out is everything a
//! store does besides adding rows:
//!
//! - the tables have no key, no index, no foreign key and no check (only the executions keep
//!   their key, by which their row is updated): each row is appended to its table's b-tree
//!   and nothing else;
//! - no replaced revision is closed, no line's tip is checked, nothing is read first;
//! - the differences from the execution's previous checkpoint, and every value's text, are
//!   computed before the transaction starts, outside the time measured.
//!
//! A store that writes these rows through these statements cannot take less, and one that can
//! also find them again (by id, by line, by time) takes more: a save's SQL part is not made
//! cheaper than the floor measured in the same run, which is what the floor is for. The
//! database it writes is scratch, good for nothing else.

use crate::checkpoint::changes::Changes;
use crate::checkpoint::checkpoint_row::{CheckpointRow, Place};
use crate::checkpoint::item_columns::ItemContext;
use crate::checkpoint::line_cache::Tip;
use crate::checkpoint::save::write_labels_and_execution;
use crate::connection::{self, AnyConnection, SqlOptions, Target, TxMode};
use crate::error::{Result, SqlError};
use crate::executions::ensure_execution;
use caf_core::format::Checkpoint;
use diesel::connection::SimpleConnection;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The tables a save adds rows to, remade without their keys, indexes, foreign keys and
/// checks (the views that read them go first). The executions keep theirs.
const STRIP: &str = "
PRAGMA foreign_keys = OFF;
DROP VIEW IF EXISTS executions_v;
DROP VIEW IF EXISTS checkpoints_v;
DROP VIEW IF EXISTS thoughts_v;
DROP VIEW IF EXISTS tool_calls_v;
CREATE TABLE floor_checkpoints AS SELECT * FROM checkpoints WHERE 0;
CREATE TABLE floor_checkpoint_labels AS SELECT * FROM checkpoint_labels WHERE 0;
CREATE TABLE floor_thoughts AS SELECT * FROM thoughts WHERE 0;
CREATE TABLE floor_tool_calls AS SELECT * FROM tool_calls WHERE 0;
CREATE TABLE floor_steps AS SELECT * FROM steps WHERE 0;
CREATE TABLE floor_entries AS SELECT * FROM entries WHERE 0;
DROP TABLE checkpoint_labels;
DROP TABLE thoughts;
DROP TABLE tool_calls;
DROP TABLE steps;
DROP TABLE entries;
DROP TABLE checkpoints;
ALTER TABLE floor_checkpoints RENAME TO checkpoints;
ALTER TABLE floor_checkpoint_labels RENAME TO checkpoint_labels;
ALTER TABLE floor_thoughts RENAME TO thoughts;
ALTER TABLE floor_tool_calls RENAME TO tool_calls;
ALTER TABLE floor_steps RENAME TO steps;
ALTER TABLE floor_entries RENAME TO entries;
PRAGMA foreign_keys = ON;
";

/// Writes each checkpoint's new rows into a scratch SQLite database, timing only the
/// transaction (see the module docs).
pub struct RowsFloor {
    conn: AnyConnection,
    /// The previous checkpoint written of each execution, as the store's line cache keeps it.
    tips: HashMap<String, Tip>,
}

impl RowsFloor {
    /// Creates the scratch database at `path` (a SQLite file, made with the store's schema,
    /// then stripped).
    pub fn create(path: &Path) -> Result<Self> {
        let mut conn = connection::open(&Target::Sqlite(path.to_owned()), &SqlOptions::default())?;
        let backend = conn.backend();
        conn.batch_execute(STRIP)
            .map_err(SqlError::query(backend, "making the rows floor's tables"))?;
        Ok(Self {
            conn,
            tips: HashMap::new(),
        })
    }

    /// Writes the rows `c` adds to its execution's previous checkpoint written here (all of
    /// them for the first), `encoded` being its file's bytes (their size and checksum go in
    /// its row): how long the transaction took, from its start to its commit.
    pub fn write(&mut self, c: &Checkpoint, encoded: &[u8]) -> Result<Duration> {
        let integrity = caf_core::store::stated_integrity(encoded).unwrap_or_default();
        let execution = c.execution_id.as_str();
        let (mut tip, place, first) = match self.tips.remove(execution) {
            Some(tip) => {
                let place = Place {
                    line_id: tip.place.line_id,
                    seq: tip.place.seq + 1,
                };
                (tip, place, false)
            }
            None => {
                let place = Place {
                    line_id: self.tips.len() as i64 + 1,
                    seq: 0,
                };
                (Tip::of_new_line(c, place), place, true)
            }
        };
        let row = CheckpointRow::of(c, place, &integrity, encoded.len() as u64);
        let changes = Changes::between(ItemContext::of(c, place), &tip, &c.snapshot);
        let backend = self.conn.backend();
        let context = || format!("the rows floor, checkpoint {}", c.id);
        let started = Instant::now();
        self.conn.in_tx(TxMode::Write, |conn| {
            if first {
                ensure_execution(conn, c)?;
            }
            row.insert(conn)
                .map_err(SqlError::query(backend, context()))?;
            changes
                .insert(conn)
                .map_err(SqlError::query(backend, context()))?;
            write_labels_and_execution(conn, c)
        })?;
        let took = started.elapsed();
        changes.apply(&mut tip, &c.snapshot);
        tip.advance(c, place);
        self.tips.insert(execution.to_owned(), tip);
        Ok(took)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::sql_types::BigInt;
    use diesel::RunQueryDsl;

    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }

    fn count(floor: &mut RowsFloor, sql: &str) -> i64 {
        let rows: Vec<N> = diesel::sql_query(sql).load(&mut floor.conn).unwrap();
        rows[0].n
    }

    #[test]
    fn writes_each_saves_new_rows_into_tables_without_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let mut floor = RowsFloor::create(&dir.path().join("floor.db")).unwrap();
        assert_eq!(
            count(
                &mut floor,
                "SELECT COUNT(*) AS n FROM sqlite_schema WHERE type = 'index' \
                 AND tbl_name IN ('checkpoints', 'checkpoint_labels', 'thoughts', \
                 'tool_calls', 'steps', 'entries')"
            ),
            0,
            "no index, and no key (a key is an index)"
        );
        let manager = caf_core::CheckpointManager::new(caf_core::MemoryStore::new());
        let mut state = caf_core::RuntimeState::new("floor-agent");
        for s in 1..=12 {
            caf_core::workload::agent_run_step(&mut state, s).unwrap();
            let options =
                caf_core::CheckpointOptions::new(caf_core::CheckpointReason::StepCompleted);
            let c = manager.checkpoint(&mut state, options).unwrap();
            let text = caf_core::format::encode(&c).unwrap();
            assert!(floor.write(&c, &text).unwrap() > Duration::ZERO);
        }
        assert_eq!(
            count(&mut floor, "SELECT COUNT(*) AS n FROM checkpoints"),
            12
        );
        // Each thought and tool call once (each is new in one save), every entry revision
        // kept (none closed).
        assert_eq!(count(&mut floor, "SELECT COUNT(*) AS n FROM thoughts"), 12);
        assert_eq!(
            count(&mut floor, "SELECT COUNT(*) AS n FROM tool_calls"),
            12
        );
        assert_eq!(
            count(
                &mut floor,
                "SELECT COUNT(*) AS n FROM entries WHERE to_seq IS NOT NULL"
            ),
            0
        );
        assert_eq!(
            count(
                &mut floor,
                "SELECT COUNT(*) AS n FROM executions WHERE last_checkpoint_id = \
                 (SELECT id FROM checkpoints WHERE seq = 11)"
            ),
            1,
            "the execution's row follows its newest checkpoint"
        );
    }
}
