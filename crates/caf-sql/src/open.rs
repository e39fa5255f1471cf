//! Opening a store: a directory of files, a database, or both. Every front end (the `caf`
//! command line, the MCP server, an embedding program) opens stores by these rules.
//!
//! - No database given: the files in `dir`; and if the directory has its default database
//!   (`DIR/.caf/caf.db`), that database too, kept in sync on every save (hybrid).
//! - A database URL: the files plus that database (hybrid).
//! - A database URL with `no_files`: the database only.
//!
//! What may be created depends on the [`Access`] asked for: reading creates nothing (not even
//! the directory's index), updating needs the store to exist, adding checkpoints creates the
//! directory, and [`Access::CreateWithDatabase`] also creates the default database.

use crate::{HybridStore, JournaledStore, SqlError, SqlStore};
use caf_core::config::Config;
use caf_core::redact::RedactionRules;
use caf_core::store::{AsyncStore, RealFs, SaveMode};
use caf_core::{Checkpoint, CheckpointId, CheckpointStore, FileStore};
use std::path::{Path, PathBuf};

/// Where a store is: its checkpoint directory, and the database to use with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// The database URL given, if any (`sqlite://PATH` or `postgres://…`).
    pub db: Option<String>,
    /// Use the database alone, without files.
    pub no_files: bool,
}

/// What the caller will do with the store, which decides what may be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only: the files alone (the database is their index), or the database with
    /// `no_files`. Nothing is created; the store must exist.
    Read,
    /// Change existing checkpoints (delete, label, prune): the files and their database, if
    /// any. The store must exist.
    Update,
    /// Add checkpoints (save, import): the directory is created if needed; a database in use
    /// is kept in sync.
    Create,
    /// Add checkpoints with a database: the directory's default database is created when no
    /// database is given.
    CreateWithDatabase,
}

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `no_files` without a database.
    #[error("a database-only store needs a database URL")]
    NoFilesWithoutDatabase,
    /// The checkpoint directory does not exist.
    #[error("{}: no checkpoint directory here", dir.display())]
    NoDirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// A database was needed, but none is configured and the default one does not exist.
    #[error("{}: no database (none given, and no {})", dir.display(), default.display())]
    NoDatabase {
        /// The directory.
        dir: PathBuf,
        /// Its default database path.
        default: PathBuf,
    },
    /// A SQLite database file that must exist does not.
    #[error("{}: no database here", path.display())]
    NoDatabaseFile {
        /// The missing file.
        path: PathBuf,
    },
    /// The directory's own database (`DIR/.caf/caf.db`) is gone: the directory had one (see
    /// [`crate::own_database`]). The files hold every checkpoint: it can be rebuilt from them.
    #[error("{}: the directory's database is missing (deleted?); it can be rebuilt from the files", path.display())]
    MissingDatabase {
        /// The missing file.
        path: PathBuf,
    },
    /// The directory's own database is damaged (truncated, overwritten): SQLite cannot read it.
    /// Nothing was written. It can be rebuilt from the files, once moved aside.
    #[error("{}: the directory's database is damaged ({error}); it can be rebuilt from the files", path.display())]
    DamagedDatabase {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        error: SqlError,
    },
    /// The files could not be opened.
    #[error(transparent)]
    Files(#[from] caf_core::Error),
    /// The database could not be opened.
    #[error("{url}: {error}")]
    Database {
        /// The URL, password hidden.
        url: String,
        /// Why.
        error: SqlError,
    },
    /// The directory's `caf.toml` could not be used (its redaction rules apply to every save).
    #[error(transparent)]
    Config(#[from] caf_core::ConfigError),
    /// A directory could not be created.
    #[error("{}: {error}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// Why [`Store::delete_all`] deleted nothing, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeleteError {
    /// These checkpoints are not in the store; nothing was deleted.
    #[error("{} not found", .0.iter().map(|id| format!("checkpoint {id}")).collect::<Vec<_>>().join(", "))]
    Missing(Vec<CheckpointId>),
    /// The store failed (the checkpoints before the failing one are deleted).
    #[error(transparent)]
    Store(#[from] caf_core::Error),
}

/// An open store of one of the three kinds.
#[derive(Debug)]
pub enum Store {
    /// Files only.
    Files(FileStore),
    /// Files plus a database index.
    Hybrid(Box<HybridStore>),
    /// Files plus a SQLite index, each save durable after one append to the store's journal
    /// (what a store opened to write is, when its database flushes its own commits).
    Journaled(Box<JournaledStore>),
    /// A database only.
    Sql(SqlStore),
    /// One of the others, its saves written by a background writer (the `async` durability
    /// mode, [`caf_core::store::SaveMode::Async`]): see [`Store::into_async`].
    Async(Box<AsyncStore<Store>>),
}

impl std::ops::Deref for Store {
    type Target = dyn CheckpointStore;
    fn deref(&self) -> &Self::Target {
        match self {
            Self::Files(s) => s,
            Self::Hybrid(s) => s.as_ref(),
            Self::Journaled(s) => s.as_ref(),
            Self::Sql(s) => s,
            Self::Async(s) => s.as_ref(),
        }
    }
}

caf_core::delegate_checkpoint_store!(impl[] Store, |this| &**this);

impl Store {
    /// This store with the durability `mode`: [`SaveMode::Async`] hands its saves to a
    /// background writer ([`AsyncStore`]); dropping it waits until they are written.
    pub fn into_async_if(self, mode: SaveMode) -> Self {
        match (mode, self) {
            (SaveMode::Async, s @ Self::Async(_)) => s,
            (SaveMode::Async, s) => Self::Async(Box::new(AsyncStore::new(s))),
            (SaveMode::Sync, s) => s,
        }
    }

    /// Waits until every save is written (an async store's queue); returns a failed one.
    /// Nothing to wait for in the other modes.
    pub fn flush(&self) -> caf_core::Result<()> {
        match self {
            Self::Async(a) => a.flush(),
            Self::Journaled(j) => j.flush(),
            _ => Ok(()),
        }
    }

    /// The file store, unless the database is used alone. (An async store's writer is waited
    /// for first, so that the files hold every save made so far.)
    pub fn files(&self) -> Option<&FileStore> {
        match self {
            Self::Files(f) => Some(f),
            Self::Hybrid(h) => Some(h.files()),
            Self::Journaled(j) => Some(j.settled_hybrid().files()),
            Self::Sql(_) => None,
            Self::Async(a) => {
                a.wait_idle();
                a.inner().files()
            }
        }
    }

    /// The database, if there is one. (An async store's writer is waited for first.)
    pub fn sql(&self) -> Option<&SqlStore> {
        match self {
            Self::Files(_) => None,
            Self::Hybrid(h) => Some(h.sql()),
            Self::Journaled(j) => Some(j.settled_hybrid().sql()),
            Self::Sql(s) => Some(s),
            Self::Async(a) => {
                a.wait_idle();
                a.inner().sql()
            }
        }
    }

    /// Whether the store has something under `id`: a directory entry (even a damaged file or a
    /// link, so that it can be deleted) or a database row.
    pub fn contains(&self, id: &CheckpointId) -> bool {
        let in_files = self
            .files()
            .is_some_and(|f| std::fs::symlink_metadata(f.path_of(id)).is_ok());
        // A row that exists counts, even a corrupt one (so that it can be deleted).
        let in_db = self
            .sql()
            .is_some_and(|db| !matches!(CheckpointStore::summary(db, id), Ok(None)));
        in_files || in_db
    }

    /// Deletes the checkpoints `ids`, all or none: if any is not in the store
    /// ([`Store::contains`]: a damaged file counts, so that it can be deleted), nothing is
    /// deleted and the missing ones are returned (`caf delete`, the MCP tool
    /// `checkpoint_delete`).
    pub fn delete_all(&self, ids: &[CheckpointId]) -> Result<(), DeleteError> {
        let missing: Vec<CheckpointId> = ids
            .iter()
            .filter(|id| !self.contains(id))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(DeleteError::Missing(missing));
        }
        for id in ids {
            self.delete(id)?;
        }
        Ok(())
    }

    /// The stored size of a checkpoint: its file, or its encoding (which its file equals,
    /// byte for byte: what an async store gives without waiting for its writer).
    pub fn stored_size(&self, c: &Checkpoint) -> u64 {
        if let Self::Async(_) = self {
            return caf_core::format::encode(c).map_or(0, |b| b.len() as u64);
        }
        match self.files() {
            Some(f) => std::fs::metadata(f.path_of(&c.id)).map_or(0, |m| m.len()),
            None => caf_core::format::encode(c).map_or(0, |b| b.len() as u64),
        }
    }
}

impl Location {
    /// A location.
    pub fn new(dir: impl Into<PathBuf>, db: Option<String>, no_files: bool) -> Self {
        Self {
            dir: dir.into(),
            db,
            no_files,
        }
    }

    /// The directory's default database: `DIR/.caf/caf.db`.
    pub fn default_db_path(&self) -> PathBuf {
        self.dir.join(".caf").join("caf.db")
    }

    fn default_db_url(&self) -> String {
        format!("sqlite://{}", self.default_db_path().display())
    }

    /// Where checkpoints live, for messages (a database URL has its password hidden).
    pub fn describe(&self) -> String {
        match (&self.db, self.no_files) {
            (Some(db), true) => crate::redact(db),
            _ => self.dir.display().to_string(),
        }
    }

    /// The database URL in use: the one given, else the directory's default database if it
    /// exists (or `create` is set).
    pub fn db_url(&self, create: bool) -> Option<String> {
        self.db.clone().or_else(|| {
            (create || self.default_db_path().is_file() || self.expects_own_database())
                .then(|| self.default_db_url())
        })
    }

    /// Whether the directory has had its own database (`DIR/.caf/caf.db`), which may since
    /// have been deleted (see [`crate::own_database`]).
    pub fn expects_own_database(&self) -> bool {
        crate::own_database::expected(&self.dir.join(".caf"))
    }

    /// Opens the database. With `create` it may be created; otherwise a SQLite file must exist.
    pub fn database(&self, create: bool) -> Result<SqlStore, OpenError> {
        let url = self.db_url(create).ok_or_else(|| OpenError::NoDatabase {
            dir: self.dir.clone(),
            default: self.default_db_path(),
        })?;
        if let Some(path) = crate::sqlite_path(&url).filter(|p| !create && !p.is_file()) {
            if self.db.is_none() && self.expects_own_database() {
                return Err(OpenError::MissingDatabase { path });
            }
            return Err(OpenError::NoDatabaseFile { path });
        }
        if self.db.is_none() {
            let path = self.default_db_path();
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(OpenError::Files(caf_core::Error::LinkedInternal { path }));
            }
            if let Some(p) = self.default_db_path().parent() {
                std::fs::create_dir_all(p).map_err(|error| OpenError::Io {
                    path: p.to_path_buf(),
                    error,
                })?;
            }
        }
        match SqlStore::open(&url) {
            Ok(db) => {
                if self.db.is_none() {
                    crate::own_database::mark(&self.dir.join(".caf"));
                }
                Ok(db)
            }
            Err(error) if self.db.is_none() && crate::own_database::is_damage(&error) => {
                Err(OpenError::DamagedDatabase {
                    path: self.default_db_path(),
                    error,
                })
            }
            Err(error) => Err(OpenError::Database {
                url: crate::redact(&url),
                error,
            }),
        }
    }

    /// The redaction rules of the directory's `caf.toml` (`[redaction]`; the built-in rules
    /// when there is no such file).
    pub fn redaction_rules(&self) -> Result<RedactionRules, OpenError> {
        let config = Config::load(&self.dir)?;
        Ok(config.redaction_rules(&Config::path(&self.dir))?)
    }

    /// Opens the store for `access`. Unreadable files in the directory are skipped, and listed
    /// by [`FileStore::problems`].
    ///
    /// A store opened to write ([`Access::Update`], [`Access::Create`],
    /// [`Access::CreateWithDatabase`]) redacts every checkpoint it saves by the directory's
    /// `caf.toml` ([`Location::redaction_rules`]); a `caf.toml` that cannot be read is an error
    /// then, so that no save goes ahead without the rules its owner wrote.
    pub fn open(&self, access: Access) -> Result<Store, OpenError> {
        self.open_with(access, false)
    }

    /// [`Location::open`], for a store that saves many times (an agent, `caf mcp`, `caf
    /// watch`): opened to write, with a SQLite database that flushes its own commits (the
    /// default), its saves are journaled — [`Store::Journaled`], see [`JournaledStore`]: a
    /// save is durable after one append to the journal, and its file and rows are written
    /// after. A store that saves once and exits gains nothing from a journal (emptying it
    /// costs two flushes) and reports a failed write from the save itself: [`Location::open`].
    /// Where the journal cannot be made (no space for it, a read-only directory), the saves
    /// are flushed as [`HybridStore`] flushes them.
    pub fn open_journaled(&self, access: Access) -> Result<Store, OpenError> {
        self.open_with(access, true)
    }

    fn open_with(&self, access: Access, journal: bool) -> Result<Store, OpenError> {
        let must_exist = matches!(access, Access::Read | Access::Update);
        let rules = match access {
            Access::Read => None,
            _ => Some(self.redaction_rules()?),
        };
        if self.no_files {
            if self.db.is_none() {
                return Err(OpenError::NoFilesWithoutDatabase);
            }
            let mut sql = self.database(!must_exist)?;
            if let Some(rules) = rules {
                sql.set_redaction(rules);
            }
            return Ok(Store::Sql(sql));
        }
        if must_exist && !self.dir.is_dir() {
            return Err(OpenError::NoDirectory {
                dir: self.dir.clone(),
            });
        }
        // Reading a directory that is not (yet) a store leaves no index behind in it.
        let options = caf_core::store::FileStoreOptions {
            no_create: access == Access::Read,
            ..Default::default()
        };
        let mut files = FileStore::open_with(&self.dir, options)?;
        if let Some(rules) = rules {
            files.set_redaction(rules);
        }
        // Saves journaled by a store that is gone, to apply before anything is read (a store
        // opened to write applies them in any case).
        let journal_left = access == Access::Read
            && crate::journal::Slot::any_left(&RealFs, &crate::journal::dir(&self.dir));
        let url = match access {
            // Reading uses the files alone, unless a power loss may have left some of them
            // missing or torn (the database then writes them again, see `HybridStore`), or a
            // store that is gone left journaled saves.
            Access::Read if journal_left || self.unflushed_from_earlier_boot() => {
                self.db_url(false)
            }
            Access::Read => None,
            Access::Update | Access::Create => self.db_url(false),
            Access::CreateWithDatabase => self.db_url(true),
        };
        match url {
            Some(_) => {
                let sql = self.database(access == Access::CreateWithDatabase)?;
                let mut hybrid = HybridStore::new(files, sql)?;
                if access == Access::Read {
                    if !journal_left {
                        return Ok(Store::Files(hybrid.into_parts().0));
                    }
                    // Saves that a store which is gone journaled: applied, then the files read
                    // again (if they cannot be applied now, a store opened to write says why).
                    if crate::journaled::apply_left(&hybrid).is_ok_and(|n| n > 0) {
                        drop(hybrid);
                        return Ok(Store::Files(FileStore::open_with(&self.dir, options)?));
                    }
                    return Ok(Store::Files(hybrid.into_parts().0));
                }
                if journal {
                    // Without a journal (the database does not flush its own commits, no room
                    // for one), the hybrid store back.
                    match JournaledStore::open_or_back(hybrid)? {
                        Ok(journaled) => return Ok(Store::Journaled(Box::new(journaled))),
                        Err((back, _)) => hybrid = back,
                    }
                }
                // Saves that a store which is gone journaled are applied first.
                crate::journaled::apply_left(&hybrid)?;
                Ok(Store::Hybrid(Box::new(hybrid)))
            }
            None => Ok(Store::Files(files)),
        }
    }

    /// Whether an earlier boot left files saved in the directory that were not yet flushed.
    fn unflushed_from_earlier_boot(&self) -> bool {
        let boot = crate::unflushed::boot_id();
        !crate::unflushed::earlier_boots(&self.dir.join(".caf"), boot.as_deref()).is_empty()
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_creates_nothing_and_needs_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = Location::new(tmp.path().join("nope"), None, false);
        assert!(matches!(
            missing.open(Access::Read),
            Err(OpenError::NoDirectory { .. })
        ));
        let here = Location::new(tmp.path(), None, false);
        assert!(matches!(here.open(Access::Read), Ok(Store::Files(_))));
        assert!(
            !tmp.path().join(".caf").exists(),
            "reading left .caf behind"
        );
    }

    #[test]
    fn create_with_database_makes_the_default_database_and_later_opens_are_hybrid() {
        let tmp = tempfile::tempdir().unwrap();
        let loc = Location::new(tmp.path().join("d"), None, false);
        assert!(matches!(loc.open(Access::Create), Ok(Store::Files(_))));
        assert!(matches!(
            loc.open(Access::CreateWithDatabase),
            Ok(Store::Hybrid(_))
        ));
        assert!(loc.default_db_path().is_file());
        assert!(matches!(loc.open(Access::Update), Ok(Store::Hybrid(_))));
        // A store that saves many times journals its saves (SQLite flushes its own commits).
        assert!(matches!(
            loc.open_journaled(Access::Update),
            Ok(Store::Journaled(_))
        ));
        assert!(matches!(loc.open(Access::Read), Ok(Store::Files(_))));
    }

    #[test]
    fn database_only_needs_a_url_and_an_existing_sqlite_file_to_read() {
        let tmp = tempfile::tempdir().unwrap();
        let none = Location::new(tmp.path(), None, true);
        assert!(matches!(
            none.open(Access::Create),
            Err(OpenError::NoFilesWithoutDatabase)
        ));
        let url = format!("sqlite://{}", tmp.path().join("x.db").display());
        let db = Location::new(tmp.path(), Some(url), true);
        assert!(matches!(
            db.open(Access::Read),
            Err(OpenError::NoDatabaseFile { .. })
        ));
        assert!(matches!(db.open(Access::Create), Ok(Store::Sql(_))));
        assert!(matches!(db.open(Access::Read), Ok(Store::Sql(_))));
    }
}
