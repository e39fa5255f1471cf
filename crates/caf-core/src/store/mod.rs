//! Where checkpoints live: the [`CheckpointStore`] trait and its implementations.
//!
//! Every store keeps the same contract, checked by one conformance suite
//! (`tests/src/conformance.rs`): a saved checkpoint loads back equal; listing is newest first
//! (by timestamp, then id) and honours every filter; executions are isolated; deleting an
//! execution returns how many checkpoints went.

mod atomic;
mod background;
mod buffers;
pub(crate) mod file;
mod fs;
mod index;
mod index_entries;
mod memory;
#[cfg(any(test, feature = "test-support"))]
mod test_fs;

pub use atomic::{
    make_spare, stage, stage_into_spare, sync_dir, sync_file_system, write_atomic, write_atomic_in,
    write_new_in, AtomicWriteOptions, Staged, SPARE_PREFIX, TEMP_PREFIX,
};
pub use background::{AsyncStore, SaveMode};
pub use file::{
    read_checkpoint_file, read_known_checkpoint_file, read_regular_file, refuse_linked_internals,
    stated_integrity, FileStore, FileStoreOptions, Problem, StagedFile, Unpublished, INTERNALS,
};
pub use fs::{working_for, write_all, write_zeros, Fs, RealFs};
pub use index::{read_index, Entry as IndexEntry, IndexSnapshot};
pub use memory::MemoryStore;
#[cfg(any(test, feature = "test-support"))]
pub use test_fs::{Fault, Fired, Hook, Op, OpKind, Pause, Record, TestFs};

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::format::{Checkpoint, CheckpointReason};
use crate::id::{CheckpointId, ExecutionId};
use serde::{Deserialize, Serialize};

/// What a listing shows of a checkpoint, without its snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointSummary {
    /// The checkpoint.
    pub id: CheckpointId,
    /// Its parent.
    pub parent_id: Option<CheckpointId>,
    /// Its execution.
    pub execution_id: ExecutionId,
    /// Its agent.
    pub agent_id: String,
    /// The step reached.
    pub step_number: u64,
    /// Why it was taken.
    pub checkpoint_reason: CheckpointReason,
    /// When.
    pub timestamp: Timestamp,
    /// Tokens used so far.
    pub tokens_used: u64,
    /// Its name, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Its size as stored (the file size for files; the encoded size elsewhere).
    pub bytes: u64,
}

impl CheckpointSummary {
    /// The summary of a checkpoint whose stored size is `bytes`.
    pub fn of(c: &Checkpoint, bytes: u64) -> Self {
        Self {
            id: c.id.clone(),
            parent_id: c.parent_id.clone(),
            execution_id: c.execution_id.clone(),
            agent_id: c.agent_id.clone(),
            step_number: c.metadata.step_number,
            checkpoint_reason: c.metadata.checkpoint_reason.clone(),
            timestamp: c.timestamp,
            tokens_used: c.metadata.tokens_used,
            name: c.metadata.name.clone(),
            labels: c.metadata.labels.clone(),
            bytes,
        }
    }

    /// The listing order: newest first (timestamp, then id, both descending).
    pub fn newest_first(a: &Self, b: &Self) -> std::cmp::Ordering {
        (b.timestamp, &b.id).cmp(&(a.timestamp, &a.id))
    }
}

/// A checkpoint a store holds but cannot load (a damaged file), with what is known of it
/// without loading it. It is not listed; [`CheckpointStore::damaged`] reports it so that a
/// restore can place it in its execution and lineage and fall back past it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DamagedCheckpoint {
    /// Its id (for a file, the one its name gives).
    pub id: CheckpointId,
    /// Its execution, when known.
    pub execution_id: Option<ExecutionId>,
    /// Its parent, when known (`None` also for a first checkpoint).
    pub parent_id: Option<CheckpointId>,
    /// When it was taken, when known.
    pub timestamp: Option<Timestamp>,
    /// Why it cannot be loaded.
    pub error: String,
}

/// Which copy of a checkpoint [`CheckpointStore::load_with_source`] loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadSource {
    /// The store's own copy: a file store's file, a database's rows, memory.
    Primary,
    /// The database copy of a store that keeps files and a database (caf-sql's `HybridStore`),
    /// because the file could not be loaded.
    Database {
        /// The database, for messages (a SQLite path, or a PostgreSQL URL without password).
        database: String,
        /// Why the file could not be loaded.
        file_error: Error,
    },
}

impl LoadSource {
    /// Whether the checkpoint came from the store's own copy.
    pub fn is_primary(&self) -> bool {
        matches!(self, Self::Primary)
    }
}

/// Which checkpoints to list. Every field is optional; the default lists everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    /// Only this execution.
    pub execution_id: Option<ExecutionId>,
    /// Only this agent.
    pub agent_id: Option<String>,
    /// Only this reason.
    pub reason: Option<CheckpointReason>,
    /// Only checkpoints carrying this label.
    pub label: Option<String>,
    /// Only checkpoints taken at or after this time.
    pub since: Option<Timestamp>,
    /// Only checkpoints taken strictly before this time.
    pub until: Option<Timestamp>,
    /// Only checkpoints older than this one (a cursor: pass the last id of the previous page).
    pub before: Option<CheckpointId>,
    /// At most this many.
    pub limit: Option<usize>,
}

impl ListFilter {
    /// Everything in one execution.
    pub fn execution(id: &ExecutionId) -> Self {
        Self {
            execution_id: Some(id.clone()),
            ..Self::default()
        }
    }

    /// Whether `s` passes every filter but `before` and `limit`.
    pub fn matches(&self, s: &CheckpointSummary) -> bool {
        self.execution_id
            .as_ref()
            .is_none_or(|e| e == &s.execution_id)
            && self.agent_id.as_ref().is_none_or(|a| a == &s.agent_id)
            && self
                .reason
                .as_ref()
                .is_none_or(|r| r == &s.checkpoint_reason)
            && self.label.as_ref().is_none_or(|l| s.labels.contains(l))
            && self.since.is_none_or(|t| s.timestamp >= t)
            && self.until.is_none_or(|t| s.timestamp < t)
    }

    /// Filters, sorts newest first, applies the cursor and the limit.
    pub fn apply(
        &self,
        items: impl IntoIterator<Item = CheckpointSummary>,
    ) -> Vec<CheckpointSummary> {
        let mut out: Vec<CheckpointSummary> =
            items.into_iter().filter(|s| self.matches(s)).collect();
        out.sort_by(CheckpointSummary::newest_first);
        if let Some(before) = &self.before {
            match out.iter().position(|s| &s.id == before) {
                Some(i) => {
                    out.drain(..=i);
                }
                None => out.clear(),
            }
        }
        if let Some(limit) = self.limit {
            out.truncate(limit);
        }
        out
    }
}

/// A place that keeps checkpoints. Implementations are safe to share between threads.
///
/// Every store caf ships redacts secrets on its way in, before it encodes or writes anything
/// ([`crate::redact`]); a store written elsewhere should do the same, through a
/// [`crate::redact::Redactor`] it keeps, at the top of its write path.
pub trait CheckpointStore: Send + Sync {
    /// Saves a checkpoint; saving an existing id replaces it.
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary>;

    /// Saves a checkpoint already encoded as `bytes` (exactly
    /// [`crate::format::encode`]`(checkpoint)`), for a caller that encoded it anyway (a
    /// background writer). The default encodes again.
    fn save_encoded(&self, checkpoint: &Checkpoint, bytes: &[u8]) -> Result<CheckpointSummary> {
        let _ = bytes;
        self.save(checkpoint)
    }

    /// Loads a checkpoint by id ([`crate::Error::NotFound`] if absent).
    fn load(&self, id: &CheckpointId) -> Result<Checkpoint>;

    /// Lists summaries matching `filter`, newest first.
    fn list(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>>;

    /// Deletes one checkpoint; `false` if there was none.
    fn delete(&self, id: &CheckpointId) -> Result<bool>;

    /// Deletes every checkpoint of an execution and returns how many there were.
    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize>;

    /// The newest checkpoint of an execution, if any.
    fn latest(&self, execution_id: &ExecutionId) -> Result<Option<Checkpoint>> {
        let mut filter = ListFilter::execution(execution_id);
        filter.limit = Some(1);
        match self.list(&filter)?.into_iter().next() {
            Some(s) => self.load(&s.id).map(Some),
            None => Ok(None),
        }
    }

    /// The summary of one checkpoint, from the index or database, without loading the
    /// checkpoint; `None` if there is none with this id.
    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        Ok(self
            .list(&ListFilter::default())?
            .into_iter()
            .find(|s| &s.id == id))
    }

    /// Loads a checkpoint like [`load`](Self::load), and says which copy it came from: a store
    /// that keeps a second copy (files plus a database) may load that one when the first is
    /// damaged, and says so here. The default is [`LoadSource::Primary`].
    fn load_with_source(&self, id: &CheckpointId) -> Result<(Checkpoint, LoadSource)> {
        Ok((self.load(id)?, LoadSource::Primary))
    }

    /// Checkpoints the store holds but cannot load and does not list (damaged files), with what
    /// is known of each. The default, for stores that cannot hold such a thing, is none.
    fn damaged(&self) -> Result<Vec<DamagedCheckpoint>> {
        Ok(Vec::new())
    }

    /// Records tombstones of checkpoints about to be pruned (see [`crate::prune`]), so that
    /// lineage can bridge the gap. The default keeps none: lineage then shows a missing parent
    /// without the count.
    fn record_pruned(&self, stones: &[crate::prune::Tombstone]) -> Result<()> {
        let _ = stones;
        Ok(())
    }

    /// The tombstones recorded by [`CheckpointStore::record_pruned`], by id.
    fn pruned(&self) -> Result<std::collections::HashMap<CheckpointId, crate::prune::Tombstone>> {
        Ok(std::collections::HashMap::new())
    }

    /// Where the store keeps its checkpoints, in a few words: a directory, a database URL
    /// without its password, `memory`. It names the store in messages and is the `store` label
    /// of its [metrics](crate::metrics). The default is `unnamed`.
    fn describe(&self) -> String {
        "unnamed".to_string()
    }
}

/// Implements [`CheckpointStore`] for a type by forwarding every method to another store, so
/// that no method falls back to its default by oversight when the trait grows.
///
/// `delegate_checkpoint_store!(impl[GENERICS] TYPE, |this| TARGET)`: `TARGET` is an expression
/// of `this` (the `&self` of each method) giving a `&` store, e.g. `&this.inner` or `&**this`.
#[macro_export]
macro_rules! delegate_checkpoint_store {
    (impl[$($gen:tt)*] $ty:ty, |$this:ident| $target:expr) => {
        impl<$($gen)*> $crate::CheckpointStore for $ty {
            fn save(
                &self,
                c: &$crate::Checkpoint,
            ) -> $crate::Result<$crate::CheckpointSummary> {
                let $this = self;
                $crate::CheckpointStore::save($target, c)
            }
            fn save_encoded(
                &self,
                c: &$crate::Checkpoint,
                bytes: &[u8],
            ) -> $crate::Result<$crate::CheckpointSummary> {
                let $this = self;
                $crate::CheckpointStore::save_encoded($target, c, bytes)
            }
            fn load(&self, id: &$crate::CheckpointId) -> $crate::Result<$crate::Checkpoint> {
                let $this = self;
                $crate::CheckpointStore::load($target, id)
            }
            fn list(
                &self,
                f: &$crate::ListFilter,
            ) -> $crate::Result<::std::vec::Vec<$crate::CheckpointSummary>> {
                let $this = self;
                $crate::CheckpointStore::list($target, f)
            }
            fn delete(&self, id: &$crate::CheckpointId) -> $crate::Result<bool> {
                let $this = self;
                $crate::CheckpointStore::delete($target, id)
            }
            fn delete_execution(&self, e: &$crate::ExecutionId) -> $crate::Result<usize> {
                let $this = self;
                $crate::CheckpointStore::delete_execution($target, e)
            }
            fn latest(
                &self,
                e: &$crate::ExecutionId,
            ) -> $crate::Result<::std::option::Option<$crate::Checkpoint>> {
                let $this = self;
                $crate::CheckpointStore::latest($target, e)
            }
            fn summary(
                &self,
                id: &$crate::CheckpointId,
            ) -> $crate::Result<::std::option::Option<$crate::CheckpointSummary>> {
                let $this = self;
                $crate::CheckpointStore::summary($target, id)
            }
            fn load_with_source(
                &self,
                id: &$crate::CheckpointId,
            ) -> $crate::Result<($crate::Checkpoint, $crate::store::LoadSource)> {
                let $this = self;
                $crate::CheckpointStore::load_with_source($target, id)
            }
            fn damaged(
                &self,
            ) -> $crate::Result<::std::vec::Vec<$crate::store::DamagedCheckpoint>> {
                let $this = self;
                $crate::CheckpointStore::damaged($target)
            }
            fn record_pruned(&self, stones: &[$crate::prune::Tombstone]) -> $crate::Result<()> {
                let $this = self;
                $crate::CheckpointStore::record_pruned($target, stones)
            }
            fn pruned(
                &self,
            ) -> $crate::Result<
                ::std::collections::HashMap<$crate::CheckpointId, $crate::prune::Tombstone>,
            > {
                let $this = self;
                $crate::CheckpointStore::pruned($target)
            }
            fn describe(&self) -> ::std::string::String {
                let $this = self;
                $crate::CheckpointStore::describe($target)
            }
        }
    };
}

delegate_checkpoint_store!(impl[S: CheckpointStore + ?Sized] Box<S>, |this| &**this);
delegate_checkpoint_store!(impl[S: CheckpointStore + ?Sized] std::sync::Arc<S>, |this| &**this);
delegate_checkpoint_store!(impl['a, S: CheckpointStore + ?Sized] &'a S, |this| &**this);

/// Lists like [`CheckpointStore::list`], except that a `before` cursor the store does not hold
/// is an error ([`crate::Error::NotFound`]) rather than an empty page that would look like the
/// end of the list (`caf list`, the MCP tool `checkpoint_list`).
pub fn list_page(
    store: &dyn CheckpointStore,
    filter: &ListFilter,
) -> Result<Vec<CheckpointSummary>> {
    if let Some(before) = &filter.before {
        if store.summary(before)?.is_none() {
            return Err(crate::Error::not_found(before));
        }
    }
    store.list(filter)
}

/// The chain of ancestors of a checkpoint, starting with the checkpoint itself and following
/// `parent_id` until a root or a parent that is not in the store. It walks summaries (the index
/// or the database), never whole checkpoints. [`crate::Error::NotFound`] if `id` is absent.
pub fn lineage(store: &dyn CheckpointStore, id: &CheckpointId) -> Result<Vec<CheckpointSummary>> {
    let mut out: Vec<CheckpointSummary> = Vec::new();
    let mut next = Some(id.clone());
    while let Some(id) = next {
        if out.iter().any(|c| c.id == id) {
            break; // a cycle in hand-edited files; stop rather than loop
        }
        let Some(s) = store.summary(&id)? else {
            if out.is_empty() {
                return Err(crate::Error::not_found(&id));
            }
            break;
        };
        next = s.parent_id.clone();
        out.push(s);
    }
    Ok(out)
}
