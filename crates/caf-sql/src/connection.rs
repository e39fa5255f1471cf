//! Connections: the URL, opening (pragmas, migrations), transactions, locks.
//!
//! One code path serves both backends through diesel's `MultiConnection` derive
//! ([`AnyConnection`]); what differs (transaction modes, locks, read-only connections) is decided
//! here by matching on the variant.

#![allow(missing_docs)] // the derive generates undocumented items

#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
compile_error!("caf-sql needs at least one of the features `sqlite` and `postgres`");

use crate::error::{Result, SqlError};
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::Connection;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness};
use serde::{Deserialize, Serialize};
use std::fmt;
#[cfg(feature = "sqlite")]
use std::ops::Range;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

/// A connection to either backend; queries written once run on both.
#[derive(diesel::MultiConnection)]
pub enum AnyConnection {
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Pg(diesel::PgConnection),
    /// SQLite.
    #[cfg(feature = "sqlite")]
    Sqlite(diesel::SqliteConnection),
}

#[cfg(feature = "sqlite")]
const SQLITE_MIGRATIONS: EmbeddedMigrations =
    diesel_migrations::embed_migrations!("../../migrations/sqlite");
#[cfg(feature = "postgres")]
const POSTGRES_MIGRATIONS: EmbeddedMigrations =
    diesel_migrations::embed_migrations!("../../migrations/postgres");

/// Which database a store talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// SQLite: one file, embedded (bundled, no system library needed).
    Sqlite,
    /// PostgreSQL: a server.
    Postgres,
}

impl Backend {
    /// `sqlite` or `postgres`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }

    /// Whether a save writes its rows while its checksum is still being computed on another
    /// thread (the checksum goes into its row last): on SQLite, where each statement is a call;
    /// not on PostgreSQL, where each is a round trip as long as the hash, so its save hashes
    /// first.
    pub(crate) fn hashes_beside_rows(self) -> bool {
        self == Self::Sqlite
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How durable a commit is when it returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// Every commit is on disk when it returns (the default). SQLite (WAL mode) commits with
    /// `synchronous = NORMAL` and the store then `fdatasync`s the write-ahead log itself, after
    /// releasing the write lock, so that concurrent writers share flushes (group commit; writers
    /// of one database also take turns on a file lock `DB-writer.lock` beside it); PostgreSQL
    /// commits with `synchronous_commit = on`. A hybrid store's save relies on it: the commit is
    /// the save's one flush (see [`crate::HybridStore`]).
    #[default]
    Default,
    /// Every commit is on disk when it returns, flushed by SQLite inside the commit
    /// (`synchronous = FULL`: one flush per commit, under the write lock); on PostgreSQL the
    /// same as [`Durability::Default`].
    Full,
    /// Commits return before they reach the disk: SQLite `synchronous = NORMAL`, PostgreSQL
    /// `synchronous_commit = off`. The database is never corrupted, but a power loss (not a
    /// process crash) may undo the last commits.
    Relaxed,
}

/// Options for opening a store. [`Default`] is what [`crate::SqlStore::open`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlOptions {
    /// How long a SQLite writer waits for another one to finish (default 10 s).
    pub busy_timeout: Duration,
    /// How durable commits are (default: [`Durability::Default`]).
    pub durability: Durability,
}

impl Default for SqlOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(10),
            durability: Durability::Default,
        }
    }
}

/// A parsed database URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL.
    Postgres(String),
}

impl Target {
    /// Parses `sqlite://PATH`, `sqlite:PATH`, a bare path, or `postgres://…` /
    /// `postgresql://…`.
    pub(crate) fn parse(url: &str) -> Result<Self> {
        let refuse = |reason: &str| SqlError::Url {
            url: redact(url),
            reason: reason.to_string(),
        };
        if url.trim().is_empty() {
            return Err(refuse("empty"));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_string()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if path.is_empty() {
            return Err(refuse("no database file after `sqlite://`"));
        }
        if path == ":memory:" || path.starts_with("file:") {
            return Err(refuse(
                "give a file path (in-memory and URI databases are not supported)",
            ));
        }
        if path.contains("://") {
            return Err(refuse(
                "unsupported scheme: use sqlite://PATH or postgres://…",
            ));
        }
        if !url.starts_with("sqlite:") && path.contains('=') {
            // A key/value connection string (`host=… password=…`) is not a file name.
            return Err(refuse("not a URL: use sqlite://PATH or postgres://…"));
        }
        Ok(Self::Sqlite(PathBuf::from(path)))
    }

    pub(crate) fn backend(&self) -> Backend {
        match self {
            Self::Sqlite(_) => Backend::Sqlite,
            Self::Postgres(_) => Backend::Postgres,
        }
    }

    /// The target for messages (no password).
    pub(crate) fn display(&self) -> String {
        match self {
            Self::Sqlite(p) => p.display().to_string(),
            Self::Postgres(u) => redact(u),
        }
    }
}

/// The file of a SQLite database URL (`None` for PostgreSQL or a URL caf refuses).
pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    match Target::parse(url) {
        Ok(Target::Sqlite(p)) => Some(p),
        _ => None,
    }
}

/// Where `url` holds passwords: the password of its user-info part (everything up to the last
/// `@` before any query, so a password holding `/` or `@` is covered), then the value of each
/// `password=` parameter (in a query string or a key/value connection string), in order.
pub(crate) fn password_spans(url: &str) -> (Option<Range<usize>>, Vec<Range<usize>>) {
    let user_info = url.find("://").and_then(|scheme_end| {
        let from = scheme_end + 3;
        let rest = &url[from..];
        let query_at = rest.find('?').unwrap_or(rest.len());
        let at = rest[..query_at].rfind('@')?;
        let colon = rest[..at].find(':')?;
        Some(from + colon + 1..from + at)
    });
    let lower = url.to_ascii_lowercase();
    let mut params = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find("password=") {
        let start = from + i + "password=".len();
        let end = url[start..]
            .find(|c: char| c == '&' || c.is_whitespace())
            .map_or(url.len(), |e| start + e);
        params.push(start..end);
        from = end;
    }
    (user_info, params)
}

/// `url` with any password hidden: the password of its user-info part and the value of the
/// first `password=` parameter after it (see [`password_spans`]).
pub fn redact(url: &str) -> String {
    let (user_info, params) = password_spans(url);
    let after = user_info.as_ref().map_or(0, |r| r.end);
    let param = params.into_iter().find(|r| r.start >= after);
    let mut out = url.to_string();
    // The later span first, so that the earlier one's position still holds.
    for span in [param, user_info].into_iter().flatten() {
        out.replace_range(span, "***");
    }
    out
}

/// The SQLite URI of a path, opened read-only when `read_only`, else through the `caf-wal` VFS.
#[cfg(feature = "sqlite")]
fn sqlite_uri(path: &Path, read_only: bool) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    if read_only {
        uri.push_str("?mode=ro");
    } else if let Some(vfs) = caf_wal_vfs::register() {
        // Writes each commit's log frames in one system call (the crate's docs say why).
        uri.push_str("?vfs=");
        uri.push_str(vfs);
    }
    uri
}

/// Opens the read-write connection of a store and brings its schema up to date.
pub(crate) fn open(target: &Target, options: &SqlOptions) -> Result<AnyConnection> {
    match target {
        #[cfg(feature = "sqlite")]
        Target::Sqlite(path) => open_sqlite(path, options),
        #[cfg(feature = "postgres")]
        Target::Postgres(url) => open_postgres(url, options),
        #[allow(unreachable_patterns)]
        other => Err(SqlError::Url {
            url: other.display(),
            reason: format!("this build of caf has no {} support", other.backend()),
        }),
    }
}

/// Opens a connection for [`crate::SqlStore::read_only_sql`]: a SQLite file opened read-only
/// (and `query_only`), or a PostgreSQL session whose transactions default to read-only (each
/// statement also runs in `BEGIN READ ONLY`).
pub(crate) fn open_read_only(target: &Target, options: &SqlOptions) -> Result<AnyConnection> {
    match target {
        #[cfg(feature = "sqlite")]
        Target::Sqlite(path) => Ok(AnyConnection::Sqlite(establish_read_only(path, options)?)),
        #[cfg(feature = "postgres")]
        Target::Postgres(url) => {
            let _ = options;
            let backend = Backend::Postgres;
            let mut c = diesel::PgConnection::establish(url)
                .map_err(|source| SqlError::connect(backend, url, source))?;
            c.batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                .map_err(SqlError::query(
                    backend,
                    "configuring the read-only connection",
                ))?;
            drop_privileges(&mut c, backend)?;
            Ok(AnyConnection::Pg(c))
        }
        #[allow(unreachable_patterns)]
        other => Err(SqlError::Url {
            url: other.display(),
            reason: format!("this build of caf has no {} support", other.backend()),
        }),
    }
}

/// Whether SQLite said the database is busy or locked.
#[cfg(feature = "sqlite")]
fn is_busy(e: &diesel::result::Error) -> bool {
    let text = e.to_string();
    text.contains("database is locked") || text.contains("database is busy")
}

/// Opens a SQLite database for reading and writing; a database that cannot be written (a
/// read-only file, directory or file system) is opened read-only instead, so that what only
/// reads still works, and every write fails with [`SqlError::ReadOnlyDatabase`].
#[cfg(feature = "sqlite")]
fn open_sqlite(path: &Path, options: &SqlOptions) -> Result<AnyConnection> {
    match open_sqlite_read_write(path, options) {
        Err(e) if path.is_file() && says_read_only(&e) => {
            open_sqlite_read_only(path, options).map_err(|_| e)
        }
        other => other,
    }
}

/// Whether an error opening SQLite says the database (or its directory, where the `-wal` and
/// `-shm` files go) cannot be written.
#[cfg(feature = "sqlite")]
fn says_read_only(e: &SqlError) -> bool {
    let text = e.to_string();
    text.contains("readonly database") || text.contains("unable to open database file")
}

/// Establishes a read-only connection to the SQLite file at `path` (`query_only`, with the busy
/// timeout): `mode=ro`, or, where even its `-shm` file cannot be made (a read-only directory or
/// file system, where no one can be writing it), `immutable=1`. Each is tried with a read.
#[cfg(feature = "sqlite")]
fn establish_read_only(path: &Path, options: &SqlOptions) -> Result<diesel::SqliteConnection> {
    let backend = Backend::Sqlite;
    // As it is; failing that (a directory it cannot write its lock files in), immutable.
    let attempt = |immutable: bool| {
        let mut uri = sqlite_uri(path, true);
        if immutable {
            uri.push_str("&immutable=1");
        }
        let mut c =
            diesel::SqliteConnection::establish(&uri).map_err(|source| SqlError::Connect {
                backend,
                target: path.display().to_string(),
                source,
            })?;
        c.batch_execute(&format!(
            "PRAGMA busy_timeout = {}; PRAGMA query_only = ON; \
             SELECT count(*) FROM sqlite_master;",
            options.busy_timeout.as_millis()
        ))
        .map_err(SqlError::query(
            backend,
            "configuring the read-only connection",
        ))?;
        Ok(c)
    };
    attempt(false).or_else(|_| attempt(true))
}

/// Opens an existing SQLite database that cannot be written ([`establish_read_only`]). Its
/// schema must be up to date (a read-only database cannot be migrated).
#[cfg(feature = "sqlite")]
fn open_sqlite_read_only(path: &Path, options: &SqlOptions) -> Result<AnyConnection> {
    let backend = Backend::Sqlite;
    let mut c = establish_read_only(path, options)?;
    let pending = c
        .has_pending_migration(SQLITE_MIGRATIONS)
        .map_err(|source| SqlError::Migrate { backend, source })?;
    if pending {
        return Err(SqlError::ReadOnlyDatabase {
            backend,
            target: path.display().to_string(),
            context: "opening".into(),
            reason: "its schema is older than this caf's and cannot be brought up to date".into(),
        });
    }
    Ok(AnyConnection::Sqlite(c))
}

#[cfg(feature = "sqlite")]
fn open_sqlite_read_write(path: &Path, options: &SqlOptions) -> Result<AnyConnection> {
    let backend = Backend::Sqlite;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| caf_core::Error::io(parent, e))?;
    }
    let mut c =
        diesel::SqliteConnection::establish(&sqlite_uri(path, false)).map_err(|source| {
            SqlError::Connect {
                backend,
                target: path.display().to_string(),
                source,
            }
        })?;
    // The busy timeout first, so that the pragmas below wait for other processes too.
    // Default: the store flushes the log itself after each commit (crate::group_commit).
    let sync = match options.durability {
        Durability::Full => "FULL",
        Durability::Default | Durability::Relaxed => "NORMAL",
    };
    c.batch_execute(&format!(
        "PRAGMA busy_timeout = {}; PRAGMA foreign_keys = ON;",
        options.busy_timeout.as_millis()
    ))
    .map_err(SqlError::query(backend, "configuring the connection"))?;
    // Switching a new database to WAL needs an exclusive lock, and SQLite may report "database
    // is locked" at once rather than wait (its busy handler is not always called for it), when
    // several connections open a fresh file together: retry within the busy timeout.
    let deadline = std::time::Instant::now() + options.busy_timeout;
    loop {
        match c.batch_execute("PRAGMA journal_mode = WAL;") {
            Ok(()) => break,
            Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(SqlError::query(backend, "switching to WAL")(e)),
        }
    }
    c.batch_execute(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA cache_size = -16384;"
    ))
    .map_err(SqlError::query(backend, "configuring the connection"))?;
    // Migrations inside BEGIN IMMEDIATE: processes opening a fresh database at the same time
    // take turns instead of racing to create the tables.
    AnsiTransactionManager::begin_transaction_sql(&mut c, "BEGIN IMMEDIATE")
        .map_err(SqlError::query(backend, "starting the migrations"))?;
    let ran = c
        .run_pending_migrations(SQLITE_MIGRATIONS)
        .map(|_| ())
        .map_err(|source| SqlError::Migrate { backend, source });
    finish(&mut c, ran, backend)?;
    Ok(AnyConnection::Sqlite(c))
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str, options: &SqlOptions) -> Result<AnyConnection> {
    let backend = Backend::Postgres;
    let mut c = diesel::PgConnection::establish(url)
        .map_err(|source| SqlError::connect(backend, url, source))?;
    let sync = match options.durability {
        Durability::Relaxed => "off",
        Durability::Default | Durability::Full => "on",
    };
    c.batch_execute(&format!(
        "SET client_min_messages = WARNING; SET synchronous_commit = {sync}"
    ))
    .map_err(SqlError::query(backend, "configuring the connection"))?;
    // One migrator at a time across every process (a transaction-scoped advisory lock).
    AnsiTransactionManager::begin_transaction(&mut c)
        .map_err(SqlError::query(backend, "starting the migrations"))?;
    let ran = c
        .batch_execute("SELECT pg_advisory_xact_lock(7236188310432251905)")
        .map_err(SqlError::query(backend, "locking the schema"))
        .and_then(|()| {
            c.run_pending_migrations(POSTGRES_MIGRATIONS)
                .map(|_| ())
                .map_err(|source| SqlError::Migrate { backend, source })
        });
    finish(&mut c, ran, backend)?;
    Ok(AnyConnection::Pg(c))
}

/// Commits after `ran` succeeded, rolls back otherwise.
fn finish<C>(c: &mut C, ran: Result<()>, backend: Backend) -> Result<()>
where
    C: Connection<TransactionManager = AnsiTransactionManager>,
{
    match ran {
        Ok(()) => AnsiTransactionManager::commit_transaction(c)
            .map_err(SqlError::query(backend, "committing")),
        Err(e) => {
            let _ = AnsiTransactionManager::rollback_transaction(c);
            Err(e)
        }
    }
}

/// The kinds of transaction the store runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxMode {
    /// A write: `BEGIN IMMEDIATE` on SQLite (take the write lock up front, so the busy
    /// timeout applies and no deferred upgrade can fail with "database is locked").
    Write,
    /// A consistent read: a deferred transaction on SQLite (a WAL snapshot), `REPEATABLE READ,
    /// READ ONLY` on PostgreSQL.
    Read,
    /// A statement from outside: read-only on both backends (the connection is read-only too).
    ReadOnly,
}

impl AnyConnection {
    /// Which backend this is.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(_) => Backend::Sqlite,
            #[cfg(feature = "postgres")]
            Self::Pg(_) => Backend::Postgres,
        }
    }

    fn begin(&mut self, mode: TxMode) -> diesel::QueryResult<()> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(c) => AnsiTransactionManager::begin_transaction_sql(
                c,
                match mode {
                    TxMode::Write => "BEGIN IMMEDIATE",
                    TxMode::Read | TxMode::ReadOnly => "BEGIN DEFERRED",
                },
            ),
            #[cfg(feature = "postgres")]
            Self::Pg(c) => AnsiTransactionManager::begin_transaction_sql(
                c,
                match mode {
                    TxMode::Write => "BEGIN",
                    TxMode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                    TxMode::ReadOnly => "BEGIN READ ONLY",
                },
            ),
        }
    }

    /// Runs `f` in a transaction of `mode`: committed if it returns `Ok` (rolled back for
    /// [`TxMode::ReadOnly`], whatever happens), rolled back otherwise — also if `f` panics (the
    /// panic then goes on), so that the connection, and on SQLite the database's write lock,
    /// is not left held by a transaction nobody ends (a journal's writer survives a panic).
    pub(crate) fn in_tx<T>(
        &mut self,
        mode: TxMode,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let backend = self.backend();
        self.begin(mode)
            .map_err(SqlError::query(backend, "starting a transaction"))?;
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut *self)));
        let ran = ran.unwrap_or_else(|panic| {
            let _ = <Self as Connection>::TransactionManager::rollback_transaction(self);
            std::panic::resume_unwind(panic)
        });
        match ran {
            Ok(v) if mode != TxMode::ReadOnly => {
                <Self as Connection>::TransactionManager::commit_transaction(self)
                    .map_err(SqlError::query(backend, "committing"))?;
                Ok(v)
            }
            other => {
                let _ = <Self as Connection>::TransactionManager::rollback_transaction(self);
                other
            }
        }
    }

    /// Takes the PostgreSQL lock that serializes writers of one execution (released at the end
    /// of the transaction); nothing on SQLite, where `BEGIN IMMEDIATE` serializes every writer.
    pub(crate) fn lock_execution(&mut self, execution_id: &str) -> Result<()> {
        match self {
            #[cfg(feature = "postgres")]
            Self::Pg(_) => {
                use diesel::RunQueryDsl;
                crate::statement::Stmt::new("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))")
                    .text(execution_id)
                    .execute(self)
                    .map(|_| ())
                    .map_err(SqlError::query(
                        Backend::Postgres,
                        format!("locking execution {execution_id}"),
                    ))
            }
            #[allow(unreachable_patterns)]
            _ => {
                let _ = execution_id;
                Ok(())
            }
        }
    }
}

/// Evaluates `$body` with `$c` bound to the concrete connection inside `$conn`: for the
/// statements that run on the backend's own connection (the fixed statements of
/// `crate::statement::fixed`, raw SQL).
macro_rules! with_inner {
    ($conn:expr, $c:ident => $body:expr) => {
        match $conn {
            #[cfg(feature = "sqlite")]
            $crate::connection::AnyConnection::Sqlite($c) => $body,
            #[cfg(feature = "postgres")]
            $crate::connection::AnyConnection::Pg($c) => $body,
        }
    };
}
pub(crate) use with_inner;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            Target::parse("sqlite://a/b.db").ok(),
            Some(Target::Sqlite("a/b.db".into()))
        );
        assert_eq!(
            Target::parse("sqlite:///abs/b.db").ok(),
            Some(Target::Sqlite("/abs/b.db".into()))
        );
        assert_eq!(
            Target::parse("x.db").ok(),
            Some(Target::Sqlite("x.db".into()))
        );
        assert_eq!(
            Target::parse("postgresql://u@h/db").ok(),
            Some(Target::Postgres("postgresql://u@h/db".into()))
        );
        assert!(Target::parse("mysql://h/db").is_err());
        assert!(Target::parse("").is_err());
        assert!(Target::parse("sqlite://").is_err());
        assert_eq!(
            redact("postgres://me:secret@host:5432/db"),
            "postgres://me:***@host:5432/db"
        );
        assert_eq!(redact("postgres://me@host/db"), "postgres://me@host/db");
    }

    #[test]
    fn a_transaction_that_panics_is_rolled_back_and_the_connection_goes_on() {
        use diesel::connection::SimpleConnection;
        let dir = tempfile::tempdir().unwrap();
        let target = Target::Sqlite(dir.path().join("t.db"));
        let mut conn = open(&target, &SqlOptions::default()).unwrap();
        conn.batch_execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
            .unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            conn.in_tx(TxMode::Write, |c| -> Result<()> {
                c.batch_execute("INSERT INTO t VALUES (1)").unwrap();
                panic!("a bug in a save")
            })
        }));
        assert!(panicked.is_err());
        // Not left inside the transaction: another one starts, and the row is not there
        // (the same key goes in again).
        conn.in_tx(TxMode::Write, |c| {
            c.batch_execute("INSERT INTO t VALUES (1)")
                .map_err(SqlError::query(Backend::Sqlite, "inserting"))
        })
        .unwrap();
        // Nor is the database locked for another connection.
        let mut other = open(&target, &SqlOptions::default()).unwrap();
        other.batch_execute("INSERT INTO t VALUES (2)").unwrap();
    }
}

#[cfg(test)]
mod redact_tests {
    use super::redact;

    #[test]
    fn hides_passwords_everywhere() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(
            redact("postgres://u:pa/ss@127.0.0.1:1/db"),
            "postgres://u:***@127.0.0.1:1/db"
        );
        assert_eq!(redact("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
        assert_eq!(
            redact("postgres://h/db?user=u&password=pw&x=1"),
            "postgres://h/db?user=u&password=***&x=1"
        );
        assert_eq!(
            redact("host=h password=hunter2 user=u"),
            "host=h password=*** user=u"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }
}

/// A read-only transaction does not stop what a privileged role can do outside the database
/// (`COPY … TO PROGRAM` runs a shell command as a superuser; `pg_terminate_backend` ends other
/// sessions). So the read-only connection takes the privileges of the predefined role
/// `pg_read_all_data` (PostgreSQL 14+: it reads every table and can do nothing else); if it
/// cannot, it must not be a superuser.
#[cfg(feature = "postgres")]
fn drop_privileges(c: &mut diesel::PgConnection, backend: Backend) -> Result<()> {
    use diesel::connection::SimpleConnection;
    use diesel::RunQueryDsl;
    if c.batch_execute("SET SESSION ROLE pg_read_all_data").is_ok() {
        return Ok(());
    }
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        value: String,
    }
    let superuser = diesel::sql_query("SELECT current_setting('is_superuser') AS value")
        .get_result::<Setting>(c)
        .map_err(SqlError::query(
            backend,
            "configuring the read-only connection",
        ))?;
    if superuser.value == "on" {
        return Err(SqlError::Refused {
            backend,
            reason: "the database user is a superuser and cannot take the role pg_read_all_data \
                      (PostgreSQL 14 or later): caf will not run SQL with a superuser's powers; \
                      connect as a less privileged user"
                .into(),
        });
    }
    Ok(())
}
