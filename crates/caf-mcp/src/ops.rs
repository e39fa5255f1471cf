//! What each tool does, on the store, in plain blocking code: the library's own operations
//! (the ones `caf save`, `caf resume`, `caf fork`, `caf prune` … call), arguments checked first,
//! results as structured JSON with a one-line summary.

use crate::args::{
    DeleteArgs, DiffArgs, ForkArgs, InspectArgs, ListArgs, LoadArgs, PruneArgs, ResumeArgs,
    SaveArgs,
};
use crate::reply::{success, ToolError};
use crate::server::Shared;
use caf_core::config::Config;
use caf_core::diff::{parent_of, ParentError};
use caf_core::inspect::{children, load_stored, Inspection};
use caf_core::resume::{restore_target, ResumeError, ResumeView};
use caf_core::save::{save_parts_and_prune, Parent, SaveError, SaveRequest};
use caf_core::store::list_page;
use caf_core::{
    CheckpointId, CheckpointManager, CheckpointReason, CheckpointStore, CheckpointSummary, Clock,
    ExecutionId, ForkOptions, ListFilter, LoadSource, Restored, SystemClock,
};
use rmcp::model::CallToolResult;
use serde_json::json;

type Outcome = Result<CallToolResult, ToolError>;

/// The most checkpoints one `checkpoint_list` returns.
pub const MAX_LIST: usize = 1000;
/// How many `checkpoint_list` returns without a limit.
pub const DEFAULT_LIST: usize = 50;

fn checkpoint_id(what: &str, s: &str) -> Result<CheckpointId, ToolError> {
    CheckpointId::new(s)
        .map_err(|e| ToolError::Invalid(format!("{what} {s:?}: not a valid checkpoint id: {e}")))
}

fn execution_id(what: &str, s: &str) -> Result<ExecutionId, ToolError> {
    ExecutionId::new(s)
        .map_err(|e| ToolError::Invalid(format!("{what} {s:?}: not a valid execution id: {e}")))
}

fn reason(s: &str) -> Result<CheckpointReason, ToolError> {
    s.parse()
        .map_err(|e| ToolError::Invalid(format!("reason: {e}")))
}

/// `1 thing` / `2 things`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `checkpoint_save`.
pub fn save(sh: &Shared, a: SaveArgs) -> Outcome {
    let store = sh.describe();
    let execution_id = execution_id("execution_id", &a.execution_id)?;
    let reason = reason(a.reason.as_deref().unwrap_or("manual"))?;
    let parent = match a.parent.as_deref() {
        None => Parent::Latest,
        Some("none") => Parent::None,
        Some(p) => Parent::Id(checkpoint_id("parent", p)?),
    };
    let parts = serde_json::to_vec(&a.state)
        .map_err(|e| ToolError::Invalid(format!("state: {e}; nothing saved")))?;
    let limit = sh.options.max_state_bytes;
    if parts.len() > limit {
        return Err(ToolError::Invalid(format!(
            "state is {} bytes of JSON; the limit is {limit} bytes; nothing saved",
            parts.len()
        )));
    }
    // DIR/caf.toml may ask for a prune after each save; a bad file stops the save first.
    let config =
        Config::load(&sh.dir).map_err(|e| ToolError::Failed(format!("{e}; nothing saved")))?;
    let request = SaveRequest {
        execution_id,
        agent_id: a.agent_id,
        reason,
        name: a.name,
        description: a.description,
        labels: a.labels,
        parent,
    };
    let saved = save_parts_and_prune(
        &*sh.store,
        &parts,
        request,
        CheckpointId::generate(),
        SystemClock.now(),
        config.retention.auto_prune_policy().as_ref(),
    )
    .map_err(|e| match e {
        e @ SaveError::Invalid { .. } => {
            ToolError::Invalid(format!("bad state: {e}; nothing saved"))
        }
        SaveError::NoAgent => ToolError::Invalid(
            "no agent id: give agent_id (or state.agent_id); nothing saved".into(),
        ),
        SaveError::NoParent(p) => ToolError::NotFound(format!(
            "parent checkpoint {p} not found in {store}; nothing saved"
        )),
        SaveError::Store(e) => ToolError::store(e, &store),
    })?;
    let c = &saved.checkpoint;
    let summary = CheckpointSummary::of(c, sh.store.stored_size(c));
    let parent = c
        .parent_id
        .as_ref()
        .map_or("none".to_string(), ToString::to_string);
    let mut text = format!(
        "saved {} (execution {}, step {}, parent {parent})",
        c.id, c.execution_id, c.metadata.step_number
    );
    if !saved.pruned.is_empty() {
        text.push_str(&format!("; auto-pruned {}", saved.pruned.len()));
    }
    success(
        text,
        &json!({"checkpoint": summary, "pruned": saved.pruned}),
    )
}

/// The JSON of a restored checkpoint, with how it was found.
fn restored_json(r: &Restored) -> serde_json::Value {
    json!({
        "checkpoint": r.checkpoint,
        "remaining_steps": r.remaining_steps,
        "skipped": r.skipped.iter().map(|(id, why)| json!({"id": id, "error": why})).collect::<Vec<_>>(),
        "chosen": caf_core::resume::chosen_note(&r.chosen),
        "from_database": !r.source.is_primary(),
    })
}

/// `checkpoint_load`.
pub fn load(sh: &Shared, a: LoadArgs) -> Outcome {
    let store = sh.describe();
    let manager = CheckpointManager::new(&*sh.store);
    let r = match (a.checkpoint_id.as_deref(), a.execution_id.as_deref()) {
        (Some(id), None) => manager.restore(&checkpoint_id("checkpoint_id", id)?),
        (None, Some(e)) => manager.restore_latest(&execution_id("execution_id", e)?),
        _ => {
            return Err(ToolError::Invalid(
                "give checkpoint_id or execution_id (one of them)".into(),
            ))
        }
    }
    .map_err(|e| ToolError::store(e, &store))?;
    let c = &r.checkpoint;
    let mut text = format!(
        "loaded {} (execution {}, step {}, reason {})",
        c.id, c.execution_id, c.metadata.step_number, c.metadata.checkpoint_reason
    );
    if let Some(note) = caf_core::resume::chosen_note(&r.chosen) {
        text.push_str(&format!("; {note}"));
    }
    success(text, &restored_json(&r))
}

/// `checkpoint_list`.
pub fn list(sh: &Shared, a: ListArgs) -> Outcome {
    let store = sh.describe();
    let limit = a.limit.unwrap_or(DEFAULT_LIST);
    if limit > MAX_LIST {
        return Err(ToolError::Invalid(format!(
            "limit {limit} is over {MAX_LIST}; page with `before`"
        )));
    }
    let filter = ListFilter {
        execution_id: a
            .execution_id
            .as_deref()
            .map(|e| execution_id("execution_id", e))
            .transpose()?,
        agent_id: a.agent_id,
        reason: a.reason.as_deref().map(reason).transpose()?,
        label: a.label,
        before: a
            .before
            .as_deref()
            .map(|b| checkpoint_id("before", b))
            .transpose()?,
        // One more than asked, to tell whether there is a next page.
        limit: Some(limit + 1),
        ..ListFilter::default()
    };
    let mut items = match list_page(&*sh.store, &filter) {
        Err(caf_core::Error::NotFound { id, .. }) => {
            return Err(ToolError::NotFound(format!(
                "checkpoint {id} not found in {store} (before)"
            )))
        }
        r => r.map_err(|e| ToolError::store(e, &store))?,
    };
    let more = items.len() > limit;
    items.truncate(limit);
    let next_before = more.then(|| items.last().map(|s| s.id.clone())).flatten();
    let mut text = format!("{}, newest first", count(items.len(), "checkpoint"));
    if let Some(next) = &next_before {
        text.push_str(&format!("; more with before={next}"));
    }
    success(
        text,
        &json!({"checkpoints": items, "next_before": next_before}),
    )
}

/// `checkpoint_inspect`.
pub fn inspect(sh: &Shared, a: InspectArgs) -> Outcome {
    let store = sh.describe();
    let id = checkpoint_id("checkpoint_id", &a.checkpoint_id)?;
    let fail = |e| ToolError::store(e, &store);
    // A damaged file is read from the database's copy when the store has one.
    let (c, stored) = load_stored(&*sh.store, sh.store.files(), &id, |_, _| {
        match sh.store.load_with_source(&id) {
            Ok((c, LoadSource::Database { .. })) => {
                let bytes = sh.store.stored_size(&c);
                Some((c, bytes))
            }
            _ => None,
        }
    })
    .map_err(fail)?;
    let kids = children(&*sh.store, &c).map_err(fail)?;
    let v = Inspection::of(&c, stored, a.last.unwrap_or(5), Some(kids));
    let total = v
        .progress
        .total_steps
        .map_or(String::new(), |t| format!("/{t}"));
    let text = format!(
        "checkpoint {}: execution {}, agent {}, reason {}, step {}{total}, {}, {}",
        v.id,
        v.execution_id,
        v.agent_id,
        v.reason,
        v.progress.step_number,
        count(v.counts.thoughts, "thought"),
        count(v.counts.tool_calls, "tool call")
    );
    success(text, &v)
}

/// `checkpoint_diff`.
pub fn diff(sh: &Shared, a: DiffArgs) -> Outcome {
    let store = sh.describe();
    let fail = |e| ToolError::store(e, &store);
    let to = sh
        .store
        .load(&checkpoint_id("checkpoint_id", &a.checkpoint_id)?)
        .map_err(fail)?;
    let from = match a.from_id.as_deref() {
        Some(f) => sh.store.load(&checkpoint_id("from_id", f)?).map_err(fail)?,
        None => parent_of(&*sh.store, &to).map_err(|e| match e {
            e @ ParentError::Root(_) => ToolError::Invalid(format!("{e}; give from_id")),
            ParentError::Store(e) => fail(e),
            e => ToolError::NotFound(e.to_string()),
        })?,
    };
    let d = caf_core::diff(&from, &to);
    let text = if d.is_empty() {
        format!("{} → {}: no differences", d.from, d.to)
    } else {
        format!(
            "{} → {}: {} added, {} added, {} completed, {}",
            d.from,
            d.to,
            count(d.thoughts_added.len(), "thought"),
            count(d.tool_calls_added.len(), "tool call"),
            count(d.tool_calls_completed.len(), "tool call"),
            count(d.context_changes.len(), "context change")
        )
    };
    success(text, &d)
}

/// `checkpoint_resume`.
pub fn resume(sh: &Shared, a: ResumeArgs) -> Outcome {
    let store = sh.describe();
    let r = restore_target(&*sh.store, &a.id).map_err(|e| match e {
        e @ ResumeError::BadId { .. } => ToolError::Invalid(e.to_string()),
        e @ ResumeError::NotFound(_) => ToolError::NotFound(format!("{e} in {store}")),
        ResumeError::Store(e) => ToolError::store(e, &store),
        e => ToolError::Failed(e.to_string()),
    })?;
    let v = ResumeView::of(&r);
    let mut text = format!(
        "execution {} resumes from {}: {}, {}/{} steps done ({}%)",
        v.execution_id,
        v.checkpoint,
        v.status,
        v.progress.done,
        v.progress.total,
        v.progress.percent
    );
    if !v.in_flight_tool_calls.is_empty() {
        text.push_str(&format!(
            ", {} in flight",
            count(v.in_flight_tool_calls.len(), "tool call")
        ));
    }
    if let Some(note) = &v.chosen {
        text.push_str(&format!("; {note}"));
    }
    success(text, &v)
}

/// `checkpoint_fork`.
pub fn fork(sh: &Shared, a: ForkArgs) -> Outcome {
    let store = sh.describe();
    let id = checkpoint_id("checkpoint_id", &a.checkpoint_id)?;
    let execution = a
        .execution_id
        .as_deref()
        .map(|e| execution_id("execution_id", e))
        .transpose()?;
    let manager = CheckpointManager::new(&*sh.store);
    let c = manager
        .fork(
            &id,
            ForkOptions {
                name: a.name,
                reason: a.reason,
                labels: Vec::new(),
                execution,
            },
        )
        .map_err(|e| ToolError::store(e, &store))?;
    let summary = CheckpointSummary::of(&c, sh.store.stored_size(&c));
    success(
        format!(
            "forked {} from {id} (execution {}); save with parent {} to continue the branch",
            c.id, c.execution_id, c.id
        ),
        &summary,
    )
}

/// `checkpoint_delete`.
pub fn delete(sh: &Shared, a: DeleteArgs) -> Outcome {
    if !sh.options.allow_delete {
        return Err(ToolError::Refused(
            "checkpoint_delete is disabled: the server was started without --allow-delete; nothing deleted"
                .into(),
        ));
    }
    let store = sh.describe();
    match (a.checkpoint_ids.is_empty(), a.execution_id.as_deref()) {
        (true, Some(e)) => {
            let e = execution_id("execution_id", e)?;
            let n = sh
                .store
                .delete_execution(&e)
                .map_err(|err| ToolError::store(err, &store))?;
            if n == 0 {
                return Err(ToolError::NotFound(format!(
                    "execution {e} has no checkpoints in {store}"
                )));
            }
            success(
                format!("deleted {} of execution {e}", count(n, "checkpoint")),
                &json!({"execution_id": e, "deleted": n}),
            )
        }
        (false, None) => {
            let ids = a
                .checkpoint_ids
                .iter()
                .map(|s| checkpoint_id("checkpoint_ids", s))
                .collect::<Result<Vec<_>, _>>()?;
            sh.store.delete_all(&ids).map_err(|e| match e {
                e @ caf_sql::DeleteError::Missing(_) => {
                    ToolError::NotFound(format!("{e} in {store}; nothing deleted"))
                }
                caf_sql::DeleteError::Store(e) => ToolError::store(e, &store),
                e => ToolError::Failed(e.to_string()),
            })?;
            success(
                format!("deleted {}", count(ids.len(), "checkpoint")),
                &json!({"deleted": ids}),
            )
        }
        _ => Err(ToolError::Invalid(
            "give checkpoint_ids or execution_id (one of them)".into(),
        )),
    }
}

/// `checkpoint_prune`.
pub fn prune(sh: &Shared, a: PruneArgs) -> Outcome {
    let store = sh.describe();
    let config = Config::load(&sh.dir).map_err(|e| ToolError::Failed(e.to_string()))?;
    let max_age = a
        .max_age
        .as_deref()
        .map(|s| {
            s.parse::<caf_core::duration::Duration>()
                .map_err(|e| ToolError::Invalid(format!("max_age: {e}")))
        })
        .transpose()?;
    let tiers = a
        .tiers
        .as_deref()
        .map(|s| {
            caf_core::retention::parse_tiers(s)
                .map_err(|e| ToolError::Invalid(format!("tiers: {e}")))
        })
        .transpose()?;
    let policy = config
        .retention
        .policy()
        .with_overrides(a.keep_last, max_age, tiers);
    if !policy.has_rules() {
        return Err(ToolError::Invalid(format!(
            "no retention policy: give keep_last, max_age or tiers, or set [retention] in {}",
            Config::path(&sh.dir).display()
        )));
    }
    let execution = a
        .execution_id
        .as_deref()
        .map(|e| execution_id("execution_id", e))
        .transpose()?;
    let forced = !sh.options.allow_delete;
    let dry_run = forced || a.dry_run.unwrap_or(false);
    let outcome = caf_core::prune::prune(
        &*sh.store,
        &policy,
        execution.as_ref(),
        SystemClock.now(),
        dry_run,
    )
    .map_err(|e| ToolError::store(e, &store))?;
    let (deleted, kept) = (outcome.plan.delete.len(), outcome.plan.keep.len());
    let text = match (dry_run, forced) {
        (true, true) => format!(
            "would delete {deleted}, keep {kept} (a dry run: the server was started without --allow-delete)"
        ),
        (true, false) => format!("would delete {deleted}, keep {kept} (dry run)"),
        (false, _) => format!("deleted {}, kept {kept}", outcome.deleted.len()),
    };
    success(text, &outcome)
}
