//! How big the database is: rows per table and bytes (for `caf stats`, benchmarks and tests).

use crate::connection::{with_inner, Backend};
use crate::error::{Result, SqlError};
use crate::SqlStore;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use serde::Serialize;

/// Rows per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TableCounts {
    /// `executions`.
    pub executions: u64,
    /// `lines`.
    pub lines: u64,
    /// `checkpoints`.
    pub checkpoints: u64,
    /// `checkpoint_labels`.
    pub checkpoint_labels: u64,
    /// `thoughts` (revisions).
    pub thoughts: u64,
    /// `tool_calls` (revisions).
    pub tool_calls: u64,
    /// `steps` (revisions).
    pub steps: u64,
    /// `entries` (revisions).
    pub entries: u64,
    /// `unflushed_files`: files a hybrid store wrote that may not be on disk yet.
    pub unflushed_files: u64,
}

#[derive(QueryableByName)]
struct N {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

impl SqlStore {
    /// How many rows each table holds.
    pub fn table_counts(&self) -> Result<TableCounts> {
        let mut inner = self.lock();
        let conn = &mut inner.conn;
        let backend = conn.backend();
        let mut count = |table: &str| -> Result<u64> {
            let rows: Vec<N> = diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
                .load(conn)
                .map_err(SqlError::query(backend, format!("counting {table}")))?;
            Ok(rows.first().map_or(0, |r| crate::columns::uint(r.n)))
        };
        Ok(TableCounts {
            executions: count("executions")?,
            lines: count("lines")?,
            checkpoints: count("checkpoints")?,
            checkpoint_labels: count("checkpoint_labels")?,
            thoughts: count("thoughts")?,
            tool_calls: count("tool_calls")?,
            steps: count("steps")?,
            entries: count("entries")?,
            unflushed_files: count("unflushed_files")?,
        })
    }

    /// The bytes the data takes. SQLite: the pages in use, after folding the write-ahead log
    /// into the file (what the file would weigh after `VACUUM`). PostgreSQL: the tables of
    /// the current schema with their indexes and TOAST data.
    pub fn database_bytes(&self) -> Result<u64> {
        let mut inner = self.lock();
        let conn = &mut inner.conn;
        let backend = conn.backend();
        let sql = match backend {
            Backend::Sqlite => {
                use diesel::connection::SimpleConnection;
                conn.batch_execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    .map_err(SqlError::query(backend, "checkpointing the WAL"))?;
                "SELECT (p.page_count - f.freelist_count) * s.page_size AS n \
                 FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s"
            }
            Backend::Postgres => {
                "SELECT CAST(COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS BIGINT) AS n \
                 FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace \
                 WHERE ns.nspname = current_schema() AND c.relkind = 'r'"
            }
        };
        let rows: Vec<N> = with_inner!(conn, c => diesel::sql_query(sql).load(c))
            .map_err(SqlError::query(backend, "measuring the database"))?;
        Ok(rows.first().map_or(0, |r| crate::columns::uint(r.n)))
    }
}
