//! Helpers shared by the `sql_*` test files: a SQLite store in a temporary directory, and a
//! PostgreSQL store in a fresh database of its own (created on the server of
//! `CAF_TEST_POSTGRES_URL`, dropped afterwards), the demo-like and agent-run workloads
//! ([`runs`]).

#![allow(dead_code, clippy::unwrap_used)]

pub mod runs;

use caf_core::FileStore;
use caf_sql::{HybridStore, ScratchDatabase, SqlStore};
pub use caf_tests::{pg_base, pg_database};
use diesel::connection::SimpleConnection;
use diesel::Connection;
use std::path::{Path, PathBuf};

/// Where a temporary store lives.
pub enum Place {
    /// A SQLite file in a temporary directory.
    Sqlite(tempfile::TempDir, PathBuf),
    /// A PostgreSQL database.
    Postgres(ScratchDatabase),
}

/// A [`SqlStore`] in a fresh database that goes away with it.
pub struct TempSql {
    // Field order matters: the store (its connections) goes before its database.
    store: SqlStore,
    place: Place,
}

impl TempSql {
    /// A store in a new SQLite file.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("caf.db");
        let store = SqlStore::open(&format!("sqlite://{}", path.display())).unwrap();
        Self {
            store,
            place: Place::Sqlite(dir, path),
        }
    }

    /// A store in a new PostgreSQL database on the server of `base`.
    pub fn postgres(base: &str) -> Self {
        let db = pg_database(base);
        let store = SqlStore::open(db.url()).unwrap();
        Self {
            store,
            place: Place::Postgres(db),
        }
    }

    /// The URL of the database (to open more stores on it).
    pub fn url(&self) -> String {
        match &self.place {
            Place::Sqlite(_, path) => format!("sqlite://{}", path.display()),
            Place::Postgres(db) => db.url().to_string(),
        }
    }

    /// The SQLite file, if this is SQLite.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match &self.place {
            Place::Sqlite(_, path) => Some(path),
            Place::Postgres(_) => None,
        }
    }

    /// The store.
    pub fn store(&self) -> &SqlStore {
        &self.store
    }
}

impl std::ops::Deref for TempSql {
    type Target = SqlStore;
    fn deref(&self) -> &SqlStore {
        &self.store
    }
}

caf_tests::delegate_checkpoint_store!(TempSql, store);

/// Runs `f` on a fresh SQLite store, and on a fresh PostgreSQL store when
/// `CAF_TEST_POSTGRES_URL` is set (printing SKIPPED otherwise).
pub fn on_each_backend(test: &str, f: impl Fn(&TempSql)) {
    f(&TempSql::sqlite());
    if let Some(base) = pg_base(test) {
        f(&TempSql::postgres(&base));
    }
}

impl TempSql {
    /// Runs SQL on the database through a connection of its own (to plant a failing trigger, or
    /// look behind the store's back): `sqlite` on SQLite, `postgres` on PostgreSQL.
    pub fn execute_raw(&self, sqlite: &str, postgres: &str) {
        match &self.place {
            Place::Sqlite(_, path) => {
                let mut c =
                    diesel::SqliteConnection::establish(&path.display().to_string()).unwrap();
                c.batch_execute(sqlite).unwrap();
            }
            Place::Postgres(db) => {
                let mut c = diesel::PgConnection::establish(db.url()).unwrap();
                c.batch_execute(postgres).unwrap();
            }
        }
    }

    /// Makes every insert of checkpoint `id` fail (a trigger), to break a save half-way.
    pub fn fail_inserts_of(&self, id: &str) {
        self.execute_raw(
            &format!(
                "CREATE TRIGGER caf_boom BEFORE INSERT ON checkpoints WHEN NEW.id = '{id}' \
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
            ),
            &format!(
                "CREATE FUNCTION caf_boom() RETURNS trigger AS $$ BEGIN \
                 IF NEW.id = '{id}' THEN RAISE EXCEPTION 'injected failure'; END IF; \
                 RETURN NEW; END $$ LANGUAGE plpgsql; \
                 CREATE TRIGGER caf_boom BEFORE INSERT ON checkpoints \
                 FOR EACH ROW EXECUTE FUNCTION caf_boom();"
            ),
        );
    }

    /// Removes the trigger of [`TempSql::fail_inserts_of`].
    pub fn stop_failing(&self) {
        self.execute_raw(
            "DROP TRIGGER caf_boom;",
            "DROP TRIGGER caf_boom ON checkpoints; DROP FUNCTION caf_boom();",
        );
    }
}

/// A [`HybridStore`] (files in a temporary directory, SQLite next to them).
pub struct TempHybrid {
    store: HybridStore,
    dir: tempfile::TempDir,
}

impl TempHybrid {
    /// A fresh one.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let files = FileStore::open(dir.path().join("checkpoints")).unwrap();
        let sql = SqlStore::open(&dir.path().join("caf.db").display().to_string()).unwrap();
        Self {
            store: HybridStore::new(files, sql).unwrap(),
            dir,
        }
    }

    /// The directory holding `checkpoints/` and `caf.db`.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl std::ops::Deref for TempHybrid {
    type Target = HybridStore;
    fn deref(&self) -> &HybridStore {
        &self.store
    }
}

caf_tests::delegate_checkpoint_store!(TempHybrid, store);
