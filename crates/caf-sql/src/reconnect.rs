//! A lost connection (PostgreSQL: the server restarted, the backend was terminated, the network
//! dropped): the call that finds it lost fails or is tried again, and the next call reconnects.
//!
//! - After a failed call on PostgreSQL the connection is suspect: the next call first asks it
//!   something (`SELECT 1`) and, if that fails, opens a new one. A store never needs to be
//!   opened again, and a process never needs to restart.
//! - A transaction whose connection was lost before its `COMMIT` was sent did nothing (the
//!   server rolls it back): it is run again on a new connection, within the store's retries.
//!   If the server cannot be reached, the call fails with the connection error.
//! - A connection lost while committing leaves the outcome unknown: the save fails with
//!   [`SqlError::CommitUnknown`], and the store remembers it. Before anything else, the next call
//!   takes that checkpoint out of the database if the commit did go through, so that a failed
//!   save saved nothing (and a caller that saves again does not find two).

use crate::checkpoint::line_cache::LineCache;
use crate::connection::{self, Backend, TxMode};
use crate::delete::delete_in_tx;
use crate::error::{Result, SqlError};
use crate::schema::checkpoints;
use crate::store::Inner;
use crate::SqlStore;
use caf_core::CheckpointId;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use std::sync::MutexGuard;

/// Whether a database error says the connection to the server is gone.
pub(crate) fn is_connection_loss(e: &SqlError) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    let source = match e {
        SqlError::Query { source, .. } => source,
        SqlError::CommitUnknown { .. } => return true,
        _ => return false,
    };
    if matches!(
        source,
        Error::DatabaseError(DatabaseErrorKind::ClosedConnection, _)
            | Error::DatabaseError(DatabaseErrorKind::UnableToSendCommand, _)
            | Error::BrokenTransactionManager
    ) {
        return true;
    }
    let text = source.to_string();
    [
        "server closed the connection",
        "terminating connection",
        "no connection to the server",
        "connection to server",
        "could not receive data from server",
        "could not send data to server",
        "SSL connection has been closed",
        "the database system is shutting down",
        "the database system is starting up",
        "the database system is in recovery mode",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// Whether `e` is a failed `COMMIT` on a lost connection (see the [module docs](self)).
fn is_commit_lost(e: &SqlError) -> bool {
    matches!(e, SqlError::Query { context, .. } if context == "committing") && is_connection_loss(e)
}

impl SqlStore {
    /// The connection, made ready: reconnected if the last call found it lost, and any save of
    /// unknown outcome taken out (see the [module docs](self)). Fails if the server cannot be
    /// reached.
    pub(crate) fn ready(&self) -> Result<MutexGuard<'_, Inner>> {
        let mut inner = self.lock_raw();
        self.revive(&mut inner)?;
        Ok(inner)
    }

    /// Marks the connection suspect after a failed call (PostgreSQL; a SQLite connection is a
    /// file and is not lost).
    pub(crate) fn note_failure(&self, inner: &mut Inner) {
        if self.backend() == Backend::Postgres {
            inner.suspect = true;
        }
    }

    /// Reconnects a suspect connection that no longer answers, then takes out the saves of
    /// unknown outcome.
    pub(crate) fn revive(&self, inner: &mut Inner) -> Result<()> {
        if inner.suspect {
            if inner.conn.batch_execute("SELECT 1").is_err() {
                inner.conn = connection::open(&self.target, &self.options)?;
                inner.cache = LineCache::default();
            }
            inner.suspect = false;
        }
        while let Some((id, integrity)) = inner.unknown.last().cloned() {
            let Inner { conn, cache, .. } = &mut *inner;
            let taken = conn.in_tx(TxMode::Write, |conn| {
                let stored: Option<String> = checkpoints::table
                    .select(checkpoints::integrity)
                    .filter(checkpoints::id.eq(id.as_str()))
                    .first(conn)
                    .optional()
                    .map_err(SqlError::query(conn.backend(), format!("looking up {id}")))?;
                if stored.as_deref() == Some(integrity.as_str()) {
                    delete_in_tx(conn, cache, &id)?;
                }
                Ok(())
            });
            if let Err(e) = taken {
                self.note_failure(inner);
                return Err(e);
            }
            inner.unknown.pop();
        }
        Ok(())
    }

    /// Whether a save's transaction that failed with `e` may be run again on a new connection:
    /// the connection was lost before the commit (PostgreSQL).
    pub(crate) fn may_run_again(&self, e: &SqlError) -> bool {
        self.backend() == Backend::Postgres && is_connection_loss(e) && !is_commit_lost(e)
    }

    /// The error of a failed save of `saves` (ids and checksums; one transaction): a commit
    /// cut off with the connection becomes [`SqlError::CommitUnknown`] (naming the last), and
    /// each is remembered to be taken out (see the [module docs](self)); anything else is
    /// returned as it is.
    pub(crate) fn save_failed(
        &self,
        inner: &mut Inner,
        e: SqlError,
        saves: &[(&CheckpointId, String)],
    ) -> SqlError {
        let Some((last, _)) = saves.last().filter(|_| is_commit_lost(&e)) else {
            return e;
        };
        let id = last.to_string();
        // Taken out last first: the newest goes before the checkpoints it continues.
        inner.unknown.extend(
            saves
                .iter()
                .map(|(id, integrity)| ((*id).clone(), integrity.clone())),
        );
        SqlError::CommitUnknown {
            backend: self.backend(),
            id,
            source: Box::new(e),
        }
    }

    /// Whether a save's outcome is still unknown (its connection was lost while committing, and
    /// the server has not been reached since).
    #[cfg(test)]
    fn has_unknown_saves(&self) -> bool {
        !self.lock_raw().unknown.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::SqlStore;
    use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore};
    use caf_core::{ListFilter, RuntimeState};

    #[test]
    fn a_save_of_unknown_outcome_is_taken_out_by_the_next_call_if_it_went_through() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("caf.db").display());
        let manager = CheckpointManager::new(SqlStore::open(&url).unwrap());
        let mut state = RuntimeState::new("agent");
        let kept = manager
            .checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::Manual))
            .unwrap();
        let cut = manager
            .checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::Manual))
            .unwrap();
        let integrity =
            caf_core::store::stated_integrity(&caf_core::format::encode(&cut).unwrap()).unwrap();
        let store = manager.store();
        // As a commit cut off with its connection leaves it: it went through, the caller was
        // told it failed. A stale entry (another version under the same id) is left alone.
        store.lock_raw().unknown.push((cut.id.clone(), integrity));
        store
            .lock_raw()
            .unknown
            .push((kept.id.clone(), "sha256:other".into()));
        assert!(store.has_unknown_saves());
        let ids: Vec<_> = store
            .list(&ListFilter::default())
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, vec![kept.id.clone()]);
        assert!(!store.has_unknown_saves());
        // Saving goes on.
        manager
            .checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::Manual))
            .unwrap();
        assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 2);
    }
}
