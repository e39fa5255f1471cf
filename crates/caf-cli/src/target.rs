//! Where the command line keeps checkpoints: files, files plus a database, or a database only.
//!
//! - No database configured: the files in `--dir`; and if the directory has its default
//!   database (`DIR/.caf/caf.db`, made by `caf demo`, `caf sync` or `caf reindex`), that database
//!   too, kept in sync on every save (hybrid).
//! - `--db URL` (or `CAF_DATABASE_URL`, then `DATABASE_URL`): the files plus that database.
//! - `--db URL --no-files`: the database only.

use crate::Failure;
use caf_core::{CheckpointStore, FileStore};
use caf_sql::{HybridStore, SqlStore};
use std::path::{Path, PathBuf};

/// Whether a store is opened with its database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Db {
    /// Files only.
    Skip,
    /// The database in use, if there is one.
    IfAny,
    /// The database in use, or the directory's default one, created.
    Create,
}

/// The checkpoint directory and database the user chose.
#[derive(Debug)]
pub struct Target {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// The database URL given (flag or environment).
    pub db: Option<String>,
    /// Use the database alone.
    pub no_files: bool,
    /// The store opened for reading, once per command (inspect and diff read it more than once).
    read: std::cell::OnceCell<Store>,
}

/// An open store of one of the three kinds.
#[derive(Debug)]
pub enum Store {
    /// Files only.
    Files(FileStore),
    /// Files plus a database index.
    Hybrid(Box<HybridStore>),
    /// A database only.
    Sql(SqlStore),
}

impl std::ops::Deref for Store {
    type Target = dyn CheckpointStore;
    fn deref(&self) -> &Self::Target {
        match self {
            Self::Files(s) => s,
            Self::Hybrid(s) => s.as_ref(),
            Self::Sql(s) => s,
        }
    }
}

impl CheckpointStore for Store {
    fn save(&self, c: &caf_core::Checkpoint) -> caf_core::Result<caf_core::CheckpointSummary> {
        (**self).save(c)
    }
    fn load(&self, id: &caf_core::CheckpointId) -> caf_core::Result<caf_core::Checkpoint> {
        (**self).load(id)
    }
    fn list(&self, f: &caf_core::ListFilter) -> caf_core::Result<Vec<caf_core::CheckpointSummary>> {
        (**self).list(f)
    }
    fn delete(&self, id: &caf_core::CheckpointId) -> caf_core::Result<bool> {
        (**self).delete(id)
    }
    fn delete_execution(&self, e: &caf_core::ExecutionId) -> caf_core::Result<usize> {
        (**self).delete_execution(e)
    }
    fn latest(&self, e: &caf_core::ExecutionId) -> caf_core::Result<Option<caf_core::Checkpoint>> {
        (**self).latest(e)
    }
}

impl Store {
    /// The file store, unless the database is used alone.
    pub fn files(&self) -> Option<&FileStore> {
        match self {
            Self::Files(f) => Some(f),
            Self::Hybrid(h) => Some(h.files()),
            Self::Sql(_) => None,
        }
    }

    /// The database, if there is one.
    pub fn sql(&self) -> Option<&SqlStore> {
        match self {
            Self::Files(_) => None,
            Self::Hybrid(h) => Some(h.sql()),
            Self::Sql(s) => Some(s),
        }
    }

    /// Whether the store has something under `id`: a directory entry (even a damaged file or a
    /// link, so that it can be deleted) or a database row.
    pub fn contains(&self, id: &caf_core::CheckpointId) -> bool {
        let in_files = self
            .files()
            .is_some_and(|f| std::fs::symlink_metadata(f.path_of(id)).is_ok());
        let in_db = self
            .sql()
            .is_some_and(|db| !matches!(db.load(id), Err(caf_core::Error::NotFound { .. })));
        in_files || in_db
    }

    /// The stored size of a checkpoint: its file, or its encoding.
    pub fn stored_size(&self, c: &caf_core::Checkpoint) -> u64 {
        match self.files() {
            Some(f) => std::fs::metadata(f.path_of(&c.id)).map_or(0, |m| m.len()),
            None => caf_core::format::encode(c).map_or(0, |b| b.len() as u64),
        }
    }
}

/// A URL with its password hidden, for messages.
pub use caf_sql::redact;

impl Target {
    /// The target of a command line.
    pub fn new(dir: PathBuf, db: Option<String>, no_files: bool) -> Self {
        Self {
            dir,
            db,
            no_files,
            read: std::cell::OnceCell::new(),
        }
    }

    /// The default database of the directory.
    pub fn default_db_path(&self) -> PathBuf {
        self.dir.join(".caf").join("caf.db")
    }

    fn default_db_url(&self) -> String {
        format!("sqlite://{}", self.default_db_path().display())
    }

    /// Where checkpoints live, for messages.
    pub fn describe(&self) -> String {
        match (&self.db, self.no_files) {
            (Some(db), true) => redact(db),
            _ => self.dir.display().to_string(),
        }
    }

    /// The database URL in use: the one given, else the directory's default database if it
    /// exists (or `create` is set).
    pub fn db_url(&self, create: bool) -> Option<String> {
        self.db
            .clone()
            .or_else(|| (create || self.default_db_path().is_file()).then(|| self.default_db_url()))
    }

    /// Opens the database (`create`: it may be created; otherwise a SQLite file must exist).
    pub fn database(&self, create: bool) -> Result<SqlStore, Failure> {
        let url = self.db_url(create).ok_or_else(|| {
            Failure::msg(format!(
                "{}: no database (run `caf sync` or `caf reindex` to build {}, or pass --db URL)",
                self.dir.display(),
                self.default_db_path().display()
            ))
        })?;
        if let Some(path) = caf_sql::sqlite_path(&url).filter(|p| !create && !p.is_file()) {
            return Err(Failure::msg(format!(
                "{}: no database here (`caf sync` or `caf reindex` builds one from the files)",
                path.display()
            )));
        }
        if self.db.is_none() {
            let parent = self.default_db_path();
            if let Some(p) = parent.parent() {
                std::fs::create_dir_all(p)
                    .map_err(|e| Failure::msg(format!("{}: {e}", p.display())))?;
            }
        }
        SqlStore::open(&url).map_err(|e| Failure::msg(format!("{}: {e}", redact(&url))))
    }

    fn open(&self, must_exist: bool, db: Db) -> Result<Store, Failure> {
        if self.no_files {
            if self.db.is_none() {
                return Err(Failure::Usage(
                    "--no-files needs a database: pass --db URL".into(),
                ));
            }
            return Ok(Store::Sql(self.database(!must_exist)?));
        }
        if must_exist && !self.dir.is_dir() {
            return Err(Failure::msg(format!(
                "{}: no checkpoint directory here (run `caf demo`, or pass --dir / set CAF_DIR)",
                self.dir.display()
            )));
        }
        // Reading a directory that is not (yet) a store leaves no index behind in it.
        let options = caf_core::store::FileStoreOptions {
            no_create: db == Db::Skip,
            ..Default::default()
        };
        let files = FileStore::open_with(&self.dir, options)?;
        for p in files.problems() {
            crate::output::warn_line(&format!("skipped unreadable file: {}", p.error));
        }
        let url = match db {
            Db::Skip => None,
            Db::IfAny => self.db_url(false),
            Db::Create => self.db_url(true),
        };
        match url {
            Some(_) => {
                let sql = self.database(db == Db::Create)?;
                Ok(Store::Hybrid(Box::new(HybridStore::new(files, sql))))
            }
            None => Ok(Store::Files(files)),
        }
    }

    /// The store, for commands that only read: the files alone (the database is their index),
    /// or the database with `--no-files`. Nothing is created. Opened once per command.
    pub fn open_existing(&self) -> Result<&Store, Failure> {
        if let Some(store) = self.read.get() {
            return Ok(store);
        }
        let store = self.open(true, Db::Skip)?;
        Ok(self.read.get_or_init(|| store))
    }

    /// The store, for commands that change existing checkpoints (delete): files and their
    /// database, if any, which must exist.
    pub fn open_for_update(&self) -> Result<Store, Failure> {
        self.open(true, Db::IfAny)
    }

    /// The store, for commands that add checkpoints (import): the directory is created if
    /// needed; a database in use is kept in sync.
    pub fn open_or_create(&self) -> Result<Store, Failure> {
        self.open(false, Db::IfAny)
    }

    /// The store with a database, creating the directory's default one if none is configured
    /// (`caf demo`).
    pub fn open_with_database(&self) -> Result<Store, Failure> {
        self.open(false, Db::Create)
    }

    /// The directory as a path.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
