//! Shared test helpers for caf: checkpoint builders and proptest strategies ([`gen`]), the
//! store conformance suite ([`conformance`]), the harness that runs the real `caf` binary in the
//! command-line tests ([`cli`]), damaged files and forked executions for the recovery tests
//! ([`recovery`]), disk images after a simulated power loss ([`images`]), and small file-system
//! helpers.

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
use std::collections::BTreeSet;
use std::path::Path;

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
