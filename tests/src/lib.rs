//! Shared test helpers for caf: checkpoint builders and proptest strategies ([`gen`]), the
//! store conformance suite ([`conformance`]), the harness that runs the real `caf` binary in the
//! command-line tests ([`cli`]), damaged files and forked executions for the recovery tests
//! ([`recovery`]), disk images after a simulated power loss ([`images`]), the PostgreSQL server
//! of the tests ([`pg_base`]), the four kinds of store a library user opens ([`FourStores`]),
//! and small file-system helpers.

pub mod cli;

/// Implements [`CheckpointStore`] for a test wrapper by forwarding every operation to one of
/// its fields (`delegate_checkpoint_store!(TempFileStore, store)`), through caf-core's
/// [`caf_core::delegate_checkpoint_store!`].
#[macro_export]
macro_rules! delegate_checkpoint_store {
    ($ty:ty, $field:ident) => {
        caf_core::delegate_checkpoint_store!(impl[] $ty, |this| &this.$field);
    };
}
pub mod conformance;
pub mod gen;
pub mod images;
pub mod recovery;

use caf_core::store::FileStore;
use caf_core::{CheckpointStore, MemoryStore};
use caf_sql::{HybridStore, ScratchDatabase, SqlStore};
use std::collections::BTreeSet;
use std::path::Path;

/// The environment variable naming the PostgreSQL server for tests.
pub const PG_ENV: &str = "CAF_TEST_POSTGRES_URL";

/// The base PostgreSQL URL, or `None` after printing a loud SKIPPED line for `test`.
pub fn pg_base(test: &str) -> Option<String> {
    match std::env::var(PG_ENV) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            // Written to the stderr handle itself, which the test harness does not capture,
            // so that the skip shows in a plain `cargo test`.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: PostgreSQL tests need {PG_ENV} \
                 (e.g. postgres://postgres@127.0.0.1:5432/test)"
            );
            None
        }
    }
}

/// A fresh PostgreSQL database on the server of `base`, dropped with its value.
pub fn pg_database(base: &str) -> ScratchDatabase {
    ScratchDatabase::create(base).unwrap_or_else(|e| panic!("creating a database ({PG_ENV}): {e}"))
}

/// One store of each kind a library user opens, all under one directory: files (`files/`),
/// memory, SQLite (`db`) and hybrid (files in `hybrid/`, SQLite in `h.db`).
pub struct FourStores {
    files: FileStore,
    memory: MemoryStore,
    sqlite: SqlStore,
    hybrid: HybridStore,
}

impl FourStores {
    /// Opens the four stores under `dir`.
    pub fn open(dir: &Path) -> Self {
        let sqlite_url = |name: &str| format!("sqlite://{}", dir.join(name).display());
        let open_sql = |name: &str| {
            SqlStore::open(&sqlite_url(name)).unwrap_or_else(|e| panic!("opening {name}: {e}"))
        };
        let open_files = |name: &str| {
            FileStore::open(dir.join(name)).unwrap_or_else(|e| panic!("opening {name}/: {e}"))
        };
        Self {
            files: open_files("files"),
            memory: MemoryStore::new(),
            sqlite: open_sql("db"),
            hybrid: HybridStore::new(open_files("hybrid"), open_sql("h.db"))
                .unwrap_or_else(|e| panic!("opening the hybrid store: {e}")),
        }
    }

    /// Each store with its name: `files`, `memory`, `sqlite`, `hybrid`.
    pub fn each(&self) -> [(&'static str, &dyn CheckpointStore); 4] {
        [
            ("files", &self.files),
            ("memory", &self.memory),
            ("sqlite", &self.sqlite),
            ("hybrid", &self.hybrid),
        ]
    }
}

/// A [`FileStore`] in a fresh temporary directory that is removed when the store is dropped.
#[derive(Debug)]
pub struct TempFileStore {
    // Field order matters: the store goes before its directory.
    store: FileStore,
    dir: tempfile::TempDir,
}

impl TempFileStore {
    /// Opens a store in a new temporary directory.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("creating a temp dir: {e}"));
        let store = FileStore::open(dir.path())
            .unwrap_or_else(|e| panic!("opening a file store in {}: {e}", dir.path().display()));
        Self { store, dir }
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The store.
    pub fn store(&self) -> &FileStore {
        &self.store
    }
}

impl Default for TempFileStore {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for TempFileStore {
    type Target = FileStore;
    fn deref(&self) -> &FileStore {
        &self.store
    }
}

delegate_checkpoint_store!(TempFileStore, store);

/// The ids of the checkpoint files (`*.json`, not hidden) directly in `dir`, sorted.
pub fn json_file_ids(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| {
            let e = e.unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
            let name = e.file_name().to_str()?.to_string();
            let stem = name.strip_suffix(".json")?;
            (!name.starts_with('.')).then(|| stem.to_string())
        })
        .collect()
}

/// Every entry (file, directory, link…) directly in `dir`, sorted by name.
pub fn dir_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}
