//! Metrics (seed 001): what caf counts, through the [`metrics`] facade.
//!
//! The library emits its metrics through the `metrics` crate's facade, so that a program that
//! embeds caf plugs in any exporter (Prometheus, StatsD, OpenTelemetry, …) by installing a
//! recorder; without one, emitting costs next to nothing. Every metric carries the label
//! `store`: [`CheckpointStore::describe`] of the store concerned (its directory, or its database
//! without password).
//!
//! | metric | kind | emitted when |
//! |---|---|---|
//! | `checkpoint_save_count` | counter | a checkpoint is saved ([`crate::CheckpointManager::checkpoint`], [`crate::CheckpointManager::fork`], [`crate::save::save_parts`], the executor) |
//! | `checkpoint_save_size_bytes` | histogram | the same save: its stored size |
//! | `checkpoint_save_latency_ms` | histogram | the same save: milliseconds from building the checkpoint to its durable write |
//! | `checkpoint_resume_count` | counter | a run resumes: a checkpoint with reason `resumed` is saved (the [`Executor`](crate::Executor) saves one each time it resumes) |
//! | `steps_recovered` | counter | the same: the steps that run had done and does not redo |
//! | `checkpoint_prune_count` | counter | checkpoints are pruned ([`crate::prune`]) |
//! | `checkpoint_redaction_count` | counter | values are redacted before a save ([`redacted`]) |
//!
//! [`StoreMetrics`] computes the same quantities from what a store holds, for a store that no
//! live process has been watching (`caf stats --metrics`): see its fields for what a store can
//! and cannot know. With the `prometheus` feature, [`prometheus`] renders either in the
//! Prometheus text format.

use crate::error::Result;
use crate::format::{Checkpoint, CheckpointReason};
use crate::store::{CheckpointStore, CheckpointSummary, ListFilter};
use std::collections::HashSet;
use std::time::Duration;

/// Counter: checkpoints saved.
pub const SAVE_COUNT: &str = "checkpoint_save_count";
/// Histogram: the stored size of each checkpoint saved, in bytes.
pub const SAVE_SIZE_BYTES: &str = "checkpoint_save_size_bytes";
/// Histogram: how long each save took, in milliseconds.
pub const SAVE_LATENCY_MS: &str = "checkpoint_save_latency_ms";
/// Counter: runs resumed from a checkpoint.
pub const RESUME_COUNT: &str = "checkpoint_resume_count";
/// Counter: steps not run again because a resumed run found them done.
pub const STEPS_RECOVERED: &str = "steps_recovered";
/// Counter: checkpoints deleted by pruning.
pub const PRUNE_COUNT: &str = "checkpoint_prune_count";
/// Counter: values replaced by a redaction marker before a save.
pub const REDACTION_COUNT: &str = "checkpoint_redaction_count";
/// Gauge (store view only): checkpoints the store holds now.
pub const STORED_CHECKPOINTS: &str = "checkpoints_stored";
/// Gauge (store view only): executions the store holds checkpoints of.
pub const STORED_EXECUTIONS: &str = "executions_stored";
/// The label naming the store.
pub const STORE_LABEL: &str = "store";

/// The reason of the checkpoint that records a resumed run.
pub const RESUMED_REASON: &str = "resumed";

/// Registers the description and unit of each metric with the recorder in use (a recorder
/// shows them, e.g. as Prometheus `# HELP` lines). Call it once after installing a recorder.
pub fn describe() {
    use ::metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(SAVE_COUNT, Unit::Count, "Checkpoints saved");
    describe_histogram!(
        SAVE_SIZE_BYTES,
        Unit::Bytes,
        "Stored size of each checkpoint saved"
    );
    describe_histogram!(
        SAVE_LATENCY_MS,
        Unit::Milliseconds,
        "Time to save a checkpoint, from building it to its durable write"
    );
    describe_counter!(
        RESUME_COUNT,
        Unit::Count,
        "Runs resumed from a checkpoint (checkpoints with reason resumed)"
    );
    describe_counter!(
        STEPS_RECOVERED,
        Unit::Count,
        "Steps not run again because a resumed run found them done"
    );
    describe_counter!(PRUNE_COUNT, Unit::Count, "Checkpoints deleted by pruning");
    describe_counter!(
        REDACTION_COUNT,
        Unit::Count,
        "Values redacted before a checkpoint was saved"
    );
    describe_gauge!(
        STORED_CHECKPOINTS,
        Unit::Count,
        "Checkpoints the store holds"
    );
    describe_gauge!(
        STORED_EXECUTIONS,
        Unit::Count,
        "Executions the store holds checkpoints of"
    );
}

/// Whether a checkpoint of this reason records a resumed run.
pub fn is_resume(reason: &CheckpointReason) -> bool {
    reason.as_str() == RESUMED_REASON
}

/// The steps a resumed run did not redo: the steps done in the checkpoint it saved on resuming.
pub fn steps_recovered(c: &Checkpoint) -> u64 {
    c.snapshot.progress.steps_done_of_total().0 as u64
}

/// Emits the metrics of one save into `store`: `c` was saved as `summary`, `elapsed` after the
/// caller started building it.
pub(crate) fn saved(
    store: &dyn CheckpointStore,
    c: &Checkpoint,
    summary: &CheckpointSummary,
    elapsed: Duration,
) {
    // Shared, so that each metric below takes it without copying the string again.
    let label = ::metrics::SharedString::from(std::sync::Arc::<str>::from(store.describe()));
    ::metrics::counter!(SAVE_COUNT, STORE_LABEL => label.clone()).increment(1);
    ::metrics::histogram!(SAVE_SIZE_BYTES, STORE_LABEL => label.clone())
        .record(summary.bytes as f64);
    ::metrics::histogram!(SAVE_LATENCY_MS, STORE_LABEL => label.clone())
        .record(elapsed.as_secs_f64() * 1000.0);
    if is_resume(&c.metadata.checkpoint_reason) {
        ::metrics::counter!(RESUME_COUNT, STORE_LABEL => label.clone()).increment(1);
        ::metrics::counter!(STEPS_RECOVERED, STORE_LABEL => label).increment(steps_recovered(c));
    }
}

/// Emits the metrics of a prune of `store` that deleted `n` checkpoints.
pub(crate) fn pruned(store: &dyn CheckpointStore, n: usize) {
    if n > 0 {
        ::metrics::counter!(PRUNE_COUNT, STORE_LABEL => store.describe()).increment(n as u64);
    }
}

/// Emits `checkpoint_redaction_count` for `n` values redacted before a save into `store` (for
/// the code that redacts).
pub fn redacted(store: &dyn CheckpointStore, n: u64) {
    if n > 0 {
        ::metrics::counter!(REDACTION_COUNT, STORE_LABEL => store.describe()).increment(n);
    }
}

/// The metrics of a store, computed from what it holds (its checkpoints and its tombstones)
/// rather than counted by a live process: what `caf stats --metrics` prints.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoreMetrics {
    /// [`CheckpointStore::describe`] of the store: the `store` label.
    pub store: String,
    /// Checkpoints saved that the store still knows of: those it holds, plus those pruned from
    /// it (each leaves a tombstone). Checkpoints deleted outright (`caf delete ID`) leave no
    /// trace and are not counted.
    pub saves: u64,
    /// The stored size of each checkpoint the store holds, in bytes.
    pub sizes: Vec<u64>,
    /// Checkpoints with reason `resumed`: each records one resumed run.
    pub resumes: u64,
    /// The steps those resumed runs did not redo (the steps done in each `resumed` checkpoint;
    /// its step number when it cannot be loaded).
    pub steps_recovered: u64,
    /// Checkpoints pruned (tombstones).
    pub pruned: u64,
    /// Values redacted: the sum of the redaction counts of the checkpoints the store holds
    /// ([`Metadata::redactions`](crate::format::Metadata::redactions), recorded in each
    /// checkpoint when it was saved). Pruned and deleted checkpoints no longer count, and a
    /// checkpoint that cannot be loaded counts 0.
    pub redactions: u64,
    /// Checkpoints held now.
    pub checkpoints: u64,
    /// Executions with checkpoints.
    pub executions: u64,
}

impl StoreMetrics {
    /// Computes the metrics of `store` from its summaries and tombstones, and from its
    /// checkpoints, each loaded once (one at a time) for its redaction count and, for one with
    /// reason `resumed`, its steps done.
    pub fn of(store: &dyn CheckpointStore) -> Result<Self> {
        let all = store.list(&ListFilter::default())?;
        let pruned = store.pruned()?.len() as u64;
        let mut resumes = 0;
        let mut steps = 0;
        let mut redactions: u64 = 0;
        for s in &all {
            let loaded = store.load(&s.id).ok();
            if let Some(c) = &loaded {
                redactions = redactions.saturating_add(c.metadata.redactions());
            }
            if is_resume(&s.checkpoint_reason) {
                resumes += 1;
                steps += loaded.as_ref().map_or(s.step_number, steps_recovered);
            }
        }
        let executions: HashSet<_> = all.iter().map(|s| &s.execution_id).collect();
        Ok(Self {
            store: store.describe(),
            saves: all.len() as u64 + pruned,
            sizes: all.iter().map(|s| s.bytes).collect(),
            resumes,
            steps_recovered: steps,
            pruned,
            redactions,
            checkpoints: all.len() as u64,
            executions: executions.len() as u64,
        })
    }

    /// Emits these values into the recorder in use, as counters set to their totals, the
    /// sizes as histogram samples, and the two gauges. (Save latency is not known from a store,
    /// so that histogram stays empty.)
    pub fn emit(&self) {
        use ::metrics::{counter, gauge, histogram};
        let store = &self.store;
        counter!(SAVE_COUNT, STORE_LABEL => store.clone()).absolute(self.saves);
        let sizes = histogram!(SAVE_SIZE_BYTES, STORE_LABEL => store.clone());
        for b in &self.sizes {
            sizes.record(*b as f64);
        }
        counter!(RESUME_COUNT, STORE_LABEL => store.clone()).absolute(self.resumes);
        counter!(STEPS_RECOVERED, STORE_LABEL => store.clone()).absolute(self.steps_recovered);
        counter!(PRUNE_COUNT, STORE_LABEL => store.clone()).absolute(self.pruned);
        counter!(REDACTION_COUNT, STORE_LABEL => store.clone()).absolute(self.redactions);
        gauge!(STORED_CHECKPOINTS, STORE_LABEL => store.clone()).set(self.checkpoints as f64);
        gauge!(STORED_EXECUTIONS, STORE_LABEL => store.clone()).set(self.executions as f64);
    }
}

#[cfg(feature = "prometheus")]
pub mod prometheus;
