//! # caf-core — checkpoints for AI agents
//!
//! caf captures an agent's runtime state (thought chain, context, tool calls, progress) as
//! versioned, schema-validated JSON checkpoint files, and restores it.
//!
//! The crate has three layers, each a module:
//!
//! - [`runtime`]: [`RuntimeState`], the mutable in-memory state of a running agent, with a small
//!   typed API, granular [`Event`]s and dirty tracking.
//! - [`format`]: the export layer. [`Checkpoint`] is one self-contained document; it is encoded
//!   deterministically with an integrity checksum ([`format::encode`]) and decoded through
//!   parse → detect version → validate → typed value ([`format::decode`]).
//! - [`store`]: the [`CheckpointStore`] trait and its [`MemoryStore`] and [`FileStore`]
//!   implementations; the [`CheckpointManager`] ties state and store together.
//! - [`diff`](mod@diff): [`diff()`] compares two checkpoints ([`CheckpointDiff`]): thoughts and
//!   tool calls added, completed and changed, context changes at JSON Pointer paths, progress
//!   and cost.
//!
//! ```
//! use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, MemoryStore, RuntimeState};
//!
//! let manager = CheckpointManager::new(MemoryStore::new());
//! let mut state = RuntimeState::new("research-agent");
//! state.set_plan(["search", "summarise"]);
//! state.add_thought("reasoning", "Start with a search", Some(0.9));
//! let call = state.start_tool_call("search", serde_json::json!({"q": "caf"}));
//! state.complete_tool_call(&call, serde_json::json!(["result"])).unwrap();
//! state.complete_step(None);
//! let saved = manager.checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::StepCompleted)).unwrap();
//!
//! let restored = manager.restore_latest(state.execution_id()).unwrap();
//! assert_eq!(restored.checkpoint.id, saved.id);
//! assert_eq!(restored.remaining_steps, vec!["summarise".to_string()]);
//! ```
//!
//! Saving and restoring allocate and free many small values and checkpoint-sized buffers. The
//! `caf` binary uses mimalloc as its global allocator, which made its restores and listings
//! faster than with the system allocator (docs/benchmarks.md); a program that links this crate
//! chooses its own, and gets the same by setting `#[global_allocator]` to mimalloc (built with
//! its `no_thp` feature: with transparent huge pages, each first touch of its memory cleared 2
//! MiB). A writer that hands encoded bytes to another thread gives them back when written
//! ([`FileStore::give_back`]), so that the next encoding reuses their memory.

pub mod capture;
pub mod clock;
pub mod config;
pub mod diff;
pub mod duration;
pub mod error;
pub mod executor;
pub mod format;
#[cfg(feature = "test-support")]
pub mod fuzz_targets;
pub mod history;
pub mod id;
pub mod inspect;
pub mod manager;
pub mod metrics;
pub mod prune;
pub mod redact;
pub mod resume;
pub mod retention;
pub mod runtime;
pub mod save;
pub mod status;
pub mod store;
pub mod transfer;
#[cfg(feature = "test-support")]
pub mod workload;

pub use clock::{Clock, SystemClock, Timestamp};
pub use config::{Config, ConfigError, RetentionConfig};
pub use diff::{diff, CheckpointDiff};
pub use error::{Error, Result};
pub use executor::{CancelToken, Executor, RetryPolicy, RunReport, Step};
pub use format::{
    Checkpoint, CheckpointReason, Limits, LoadError, Metadata, Snapshot, CURRENT_VERSION,
};
pub use id::{CheckpointId, ExecutionId, IdError};
pub use manager::{CheckpointManager, CheckpointOptions, Chosen, ForkOptions, Restored};
pub use redact::{RedactionRules, Redactor};
pub use retention::{plan, Condemned, Kept, PrunePlan, RetentionPolicy, Tier};
pub use runtime::{Event, RuntimeState};
pub use status::ExecutionStatus;
pub use store::{
    CheckpointStore, CheckpointSummary, DamagedCheckpoint, FileStore, ListFilter, LoadSource,
    MemoryStore,
};

/// The README's example, compiled as a doctest so that it cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
