//! Secrets never reach a store: before a checkpoint is encoded, its secrets are replaced by
//! `[REDACTED:kind]` markers.
//!
//! [`RedactionRules`] say what a secret is (token shapes such as `sk-…`, `ghp_…`, AWS access
//! keys, Slack tokens, JWTs and private-key blocks; values under keys such as `password`,
//! `api_key`, `token`, `secret`; patterns of the user's own), and what is exempt (keys and
//! pattern kinds opted out). [`Redactor`] applies them to whole checkpoints.
//!
//! **Where.** Every store caf ships redacts on its way in, before it encodes a file or writes a
//! row: `FileStore` (every write goes through `FileStore::stage_encoded`), `MemoryStore::save`,
//! and in caf-sql `SqlStore::save_checkpoint` and `HybridStore::save_encoded`. So whatever saves
//! (the manager, `save_parts`, import, fork, label, the executor, periodic capture, or a
//! library user handing a checkpoint straight to a store), the stored checkpoint is redacted,
//! unless the store's rules were turned off ([`RedactionRules::disabled`]). Two paths keep
//! content as it is, because they copy what is already on disk rather than save anew: bringing
//! files into a database (`caf sync`, `caf reindex`) and rewriting files in a newer format
//! (`caf migrate`). `caf export` redacts what it writes.
//!
//! **What it changes.** Thoughts (content, reasoning, alternatives, metadata), tool calls
//! (arguments, result, error), tool results, context (variables, state, history, messages,
//! memory), progress (step results, plan parameters and results, the task, errors), the
//! metadata's description and every `extensions` object. A checkpoint with secrets is saved as
//! a copy whose `metadata.extensions.redactions` counts the values replaced (added to the count
//! it already had; [`Metadata::redactions`](crate::format::Metadata::redactions)); one without
//! any is saved as it is, byte for byte. Stores count the values they replace in the
//! `checkpoint_redaction_count` metric too ([`Redactor::redact_for`]).
//!
//! **Cost.** A redactor remembers, per execution, the thoughts, tool calls, list entries and
//! variables it has looked at (`redact/memory.rs`), so each save scans only what is new or changed,
//! and compares the rest; docs/benchmarks.md has the figures.
//!
//! ```
//! use caf_core::redact::{RedactionRules, Redactor};
//! use caf_core::{Checkpoint, CheckpointId, CheckpointReason, ExecutionId, Timestamp};
//!
//! let mut c = Checkpoint::new(
//!     CheckpointId::new("ckpt_1").unwrap(),
//!     ExecutionId::new("exec_1").unwrap(),
//!     "agent",
//!     Timestamp::from_micros(0),
//!     CheckpointReason::Manual,
//! );
//! c.snapshot.context.variables.insert("api_key".into(), "abc123".into());
//! let redactor = Redactor::new(RedactionRules::new());
//! let out = redactor.redact(&c);
//! assert_eq!(out.replaced, 1);
//! assert_eq!(out.checkpoint.snapshot.context.variables["api_key"], "[REDACTED:api_key]");
//! assert_eq!(out.checkpoint.metadata.redactions(), 1);
//! assert_eq!(out.checkpoint.metadata.extensions["redactions"], 1);
//! ```

mod items;
mod memory;
mod rules;

pub use rules::{
    key_words, marker, RedactionError, RedactionRules, BUILT_IN_KEYS, BUILT_IN_PATTERNS,
    MARKER_PREFIX,
};

use crate::format::Checkpoint;
use crate::store::CheckpointStore;
use memory::Memory;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

/// How many executions a redactor remembers by default (as many as an encoder).
const EXECUTIONS: usize = 32;

/// A checkpoint after redaction.
#[derive(Debug)]
pub struct Redacted<'a> {
    /// The checkpoint to store: the one given when it holds no secret, else a redacted copy
    /// whose `metadata.extensions.redactions` counts the values replaced.
    pub checkpoint: Cow<'a, Checkpoint>,
    /// How many values this redaction replaced (0: the checkpoint is the one given).
    pub replaced: u64,
}

/// Applies [`RedactionRules`] to checkpoints, remembering per execution what it has looked at
/// (see the module docs). Shared by reference between threads.
#[derive(Debug)]
pub struct Redactor {
    rules: RedactionRules,
    memory: Mutex<Memory>,
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new(RedactionRules::default())
    }
}

impl Redactor {
    /// A redactor applying `rules`.
    pub fn new(rules: RedactionRules) -> Self {
        Self {
            rules,
            memory: Mutex::new(Memory::with_capacity(EXECUTIONS)),
        }
    }

    /// A redactor that changes nothing.
    pub fn disabled() -> Self {
        Self::new(RedactionRules::disabled())
    }

    /// Its rules.
    pub fn rules(&self) -> &RedactionRules {
        &self.rules
    }

    /// [`redact`](Self::redact) for a save into `store`: also adds the values replaced to the
    /// `checkpoint_redaction_count` metric of `store` ([`crate::metrics::redacted`]). What
    /// every store caf ships calls on its way in.
    pub fn redact_for<'a>(&self, c: &'a Checkpoint, store: &dyn CheckpointStore) -> Redacted<'a> {
        let out = self.redact(c);
        crate::metrics::redacted(store, out.replaced);
        out
    }

    /// `c` with its secrets replaced (see the module docs for what is looked at).
    pub fn redact<'a>(&self, c: &'a Checkpoint) -> Redacted<'a> {
        let unchanged = Redacted {
            checkpoint: Cow::Borrowed(c),
            replaced: 0,
        };
        if !self.rules.is_enabled() {
            return unchanged;
        }
        let rules = &self.rules;
        let exec = &c.execution_id;
        let mut seen = self
            .memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(exec);
        let s = &c.snapshot;
        let thoughts = memory::list(&mut seen.thoughts, &s.thought_chain.thoughts, |t| {
            rules.redact_thought(t).map(|(t, n)| (Arc::new(t), n))
        });
        let calls = memory::list(&mut seen.calls, &s.tool_state.calls, |c| {
            rules.redact_tool_call(c).map(|(c, n)| (Arc::new(c), n))
        });
        let value = |v: &serde_json::Value| rules.redact_value(v);
        let history = memory::list(&mut seen.history, &s.context.history, value);
        let messages = memory::list(&mut seen.messages, &s.context.messages, value);
        let memory_entries = memory::list(&mut seen.memory, &s.context.memory, value);
        let entry = |k: &str, v: &serde_json::Value| rules.redact_entry(k, v);
        let variables = memory::members(&mut seen.variables, &s.context.variables, entry);
        let state = memory::members(&mut seen.state, &s.context.state, entry);
        let results = memory::members(&mut seen.results, &s.tool_state.results, |_, v| {
            rules.redact_value(v)
        });
        let steps = memory::list(&mut seen.steps, &s.progress.completed_steps, |st| {
            rules.completed_step(st)
        });
        let plan = memory::list(&mut seen.plan, &s.progress.plan, |st| rules.plan_step(st));
        self.memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put(exec, seen);
        let progress = rules.redact_progress_with(&s.progress, steps, plan);
        let description = c
            .metadata
            .description
            .as_deref()
            .and_then(|d| rules.redact_text(d));
        let metadata_extensions = rules.redact_object(&c.metadata.extensions);
        let extensions = rules.redact_object(&c.extensions);

        let replaced: u64 = [
            thoughts.as_ref().map(|x| x.1),
            calls.as_ref().map(|x| x.1),
            history.as_ref().map(|x| x.1),
            messages.as_ref().map(|x| x.1),
            memory_entries.as_ref().map(|x| x.1),
            variables.as_ref().map(|x| x.1),
            state.as_ref().map(|x| x.1),
            results.as_ref().map(|x| x.1),
            progress.as_ref().map(|x| x.1),
            description.as_ref().map(|x| x.1),
            metadata_extensions.as_ref().map(|x| x.1),
            extensions.as_ref().map(|x| x.1),
        ]
        .into_iter()
        .flatten()
        .sum();
        if replaced == 0 {
            return unchanged;
        }
        let mut out = c.clone();
        let snap = &mut out.snapshot;
        if let Some((v, _)) = thoughts {
            snap.thought_chain.thoughts = v;
        }
        if let Some((v, _)) = calls {
            snap.tool_state.calls = v;
        }
        if let Some((v, _)) = history {
            snap.context.history = v;
        }
        if let Some((v, _)) = messages {
            snap.context.messages = v;
        }
        if let Some((v, _)) = memory_entries {
            snap.context.memory = v;
        }
        if let Some((v, _)) = variables {
            snap.context.variables = v;
        }
        if let Some((v, _)) = state {
            snap.context.state = v;
        }
        if let Some((v, _)) = results {
            snap.tool_state.results = v;
        }
        if let Some((v, _)) = progress {
            snap.progress = v;
        }
        if let Some((v, _)) = description {
            out.metadata.description = Some(v);
        }
        if let Some((v, _)) = metadata_extensions {
            out.metadata.extensions = v;
        }
        if let Some((v, _)) = extensions {
            out.extensions = v;
        }
        let total = out.metadata.redactions().saturating_add(replaced);
        out.metadata.set_redactions(total);
        Redacted {
            checkpoint: Cow::Owned(out),
            replaced,
        }
    }
}

#[cfg(test)]
mod tests;
