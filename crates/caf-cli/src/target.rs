//! The store a command works on: [`caf_sql::Location`] from the command line, opened by the
//! library's rules ([`caf_sql::open`]), with the CLI's hints added to its errors.

use crate::Failure;
use caf_sql::{Access, Location, OpenError, SqlStore};
use std::path::Path;

pub use caf_sql::{redact, Store};

/// The checkpoint directory and database the user chose.
#[derive(Debug)]
pub struct Target {
    /// Where the store is.
    pub location: Location,
    /// The store opened for reading, once per command (inspect and diff read it more than once).
    read: std::cell::OnceCell<Store>,
}

/// The error of a failed open, with the command line's hint where one helps.
pub fn open_failure(e: OpenError) -> Failure {
    match e {
        OpenError::NoFilesWithoutDatabase => {
            Failure::Usage("--no-files needs a database: pass --db URL".into())
        }
        e @ OpenError::NoDirectory { .. } => {
            Failure::msg(format!("{e} (run `caf demo`, or pass --dir / set CAF_DIR)"))
        }
        e @ OpenError::NoDatabase { .. } => Failure::msg(format!(
            "{e} (run `caf sync` or `caf reindex` to build it, or pass --db URL)"
        )),
        e @ OpenError::NoDatabaseFile { .. } => Failure::msg(format!(
            "{e} (`caf sync` or `caf reindex` builds one from the files)"
        )),
        e @ (OpenError::MissingDatabase { .. } | OpenError::DamagedDatabase { .. }) => {
            Failure::msg(format!(
                "{e}: run `caf reindex` or `caf verify --repair`; nothing was changed"
            ))
        }
        OpenError::Files(e) => e.into(),
        e => Failure::msg(e),
    }
}

impl Target {
    /// The target of a command line.
    pub fn new(dir: std::path::PathBuf, db: Option<String>, no_files: bool) -> Self {
        Self {
            location: Location::new(dir, db, no_files),
            read: std::cell::OnceCell::new(),
        }
    }

    /// Opens the database (`create`: it may be created; otherwise a SQLite file must exist).
    pub fn database(&self, create: bool) -> Result<SqlStore, Failure> {
        self.location.database(create).map_err(open_failure)
    }

    fn open(&self, access: Access) -> Result<Store, Failure> {
        self.open_except(access, None, false)
    }

    /// Opens the store and warns about each unreadable file but `except` (which the command
    /// reports itself). `journaled`: for a command that saves many times (see
    /// [`Location::open_journaled`]).
    fn open_except(
        &self,
        access: Access,
        except: Option<&Path>,
        journaled: bool,
    ) -> Result<Store, Failure> {
        let store = match journaled {
            true => self.location.open_journaled(access),
            false => self.location.open(access),
        }
        .map_err(open_failure)?;
        for p in store.files().map(|f| f.problems()).unwrap_or_default() {
            if Some(p.path.as_path()) != except {
                crate::output::warn_line(&format!("skipped unreadable file: {}", p.error));
            }
        }
        Ok(store)
    }

    /// [`Target::open_existing`], without the warning about the file `except`, when it is
    /// unreadable: the command reports that one itself, once.
    pub fn open_existing_except(&self, except: &Path) -> Result<&Store, Failure> {
        if let Some(store) = self.read.get() {
            return Ok(store);
        }
        let store = self.open_except(Access::Read, Some(except), false)?;
        Ok(self.read.get_or_init(|| store))
    }

    /// The store, for commands that only read (see [`Access::Read`]). Opened once per command.
    pub fn open_existing(&self) -> Result<&Store, Failure> {
        if let Some(store) = self.read.get() {
            return Ok(store);
        }
        let store = self.open(Access::Read)?;
        Ok(self.read.get_or_init(|| store))
    }

    /// The store, for commands that change existing checkpoints ([`Access::Update`]).
    pub fn open_for_update(&self) -> Result<Store, Failure> {
        self.open(Access::Update)
    }

    /// The store, for commands that add checkpoints ([`Access::Create`]).
    pub fn open_or_create(&self) -> Result<Store, Failure> {
        self.open(Access::Create)
    }

    /// The store with a database, creating the directory's default one if none is configured,
    /// for an agent that saves many times (`caf demo`): its saves journaled.
    pub fn open_with_database(&self) -> Result<Store, Failure> {
        self.open_except(Access::CreateWithDatabase, None, true)
    }

    /// [`Target::open_or_create`] for a command that saves many times (`caf mcp`, `caf
    /// watch`): its saves journaled (see [`Location::open_journaled`]).
    pub fn open_or_create_journaled(&self) -> Result<Store, Failure> {
        self.open_except(Access::Create, None, true)
    }

    /// The directory as a path.
    pub fn dir(&self) -> &Path {
        &self.location.dir
    }
}

impl std::ops::Deref for Target {
    type Target = Location;
    fn deref(&self) -> &Location {
        &self.location
    }
}
