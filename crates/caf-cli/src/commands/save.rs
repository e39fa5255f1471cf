//! `caf save`, `caf fork`, `caf label`: writing checkpoints from the command line.

use super::{checkpoint_id, execution_id};
use crate::cli::{ForkArgs, LabelArgs, SaveArgs};
use crate::output;
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::save::{save_parts_and_prune, Parent, SaveError, SaveRequest, Saved};
use caf_core::{
    CheckpointId, CheckpointManager, CheckpointReason, CheckpointStore, Clock, ForkOptions,
    SystemClock,
};
use std::io::Read;

/// The bytes of `path`, or of stdin for `-`.
fn read_input(path: &std::path::Path) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::msg(format!("stdin: {e}")))?;
    } else {
        bytes =
            std::fs::read(path).map_err(|e| Failure::msg(format!("{}: {e}", path.display())))?;
    }
    Ok(bytes)
}

/// Builds a checkpoint from the parts and saves it.
pub fn save(t: &Target, json: bool, a: &SaveArgs) -> CmdResult {
    let reason: CheckpointReason = a
        .reason
        .parse()
        .map_err(|e| Failure::Usage(format!("--reason: {e}")))?;
    let parent = match a.parent.as_deref() {
        None => Parent::Latest,
        Some("none") => Parent::None,
        Some(p) => Parent::Id(checkpoint_id(p)?),
    };
    let request = SaveRequest {
        execution_id: execution_id(&a.execution)?,
        agent_id: a.agent.clone(),
        reason,
        name: a.name.clone(),
        description: None,
        labels: a.labels.clone(),
        parent,
    };
    let parts = read_input(&a.file)?;
    let source = if a.file.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        a.file.display().to_string()
    };
    // DIR/caf.toml may ask for a prune after each save (of this execution); read first, so that
    // a bad file stops the save before anything is written.
    let config = caf_core::config::Config::load(t.dir()).map_err(Failure::msg)?;
    let store = t.open_or_create()?;
    let Saved {
        checkpoint: c,
        pruned,
    } = save_parts_and_prune(
        &*store,
        &parts,
        request,
        CheckpointId::generate(),
        SystemClock.now(),
        config.retention.auto_prune_policy().as_ref(),
    )
    .map_err(|e| match e {
        SaveError::Store(e) => Failure::from(e),
        e @ SaveError::Invalid { .. } => Failure::msg(format!("{source}: {e}; nothing saved")),
        e => Failure::msg(format!("{e}; nothing saved")),
    })?;
    let pruned = pruned.len();
    if json {
        output::print_json(&caf_core::CheckpointSummary::of(&c, store.stored_size(&c)));
    } else {
        if pruned > 0 {
            crate::say!("pruned {pruned} (auto_prune in caf.toml)");
        }
        crate::say!(
            "saved {} (execution {}, step {}, parent {})",
            c.id,
            c.execution_id,
            c.metadata.step_number,
            c.parent_id
                .as_ref()
                .map_or("none".to_string(), |p| p.to_string())
        );
    }
    Ok(())
}

/// Starts a branch from a checkpoint.
pub fn fork(t: &Target, json: bool, a: &ForkArgs) -> CmdResult {
    let id = checkpoint_id(&a.id)?;
    let execution = a.execution.as_deref().map(execution_id).transpose()?;
    let manager = CheckpointManager::new(t.open_for_update()?);
    let store = manager.store();
    let c = manager.fork(
        &id,
        ForkOptions {
            name: a.name.clone(),
            reason: a.reason.clone(),
            labels: Vec::new(),
            execution,
        },
    )?;
    if json {
        output::print_json(&caf_core::CheckpointSummary::of(&c, store.stored_size(&c)));
    } else {
        crate::say!(
            "forked {} from {id} (execution {}); continue it with `caf save --parent {}` or by restoring it",
            c.id,
            c.execution_id,
            c.id
        );
    }
    Ok(())
}

/// Names and labels an existing checkpoint: its file is rewritten with the new metadata (and a
/// new checksum); its snapshot is untouched; a database in use is updated.
pub fn label(t: &Target, json: bool, a: &LabelArgs) -> CmdResult {
    let id = checkpoint_id(&a.id)?;
    if a.add.is_empty() && a.remove.is_empty() && a.name.is_none() {
        return Err(Failure::Usage(
            "nothing to change: give --add, --remove or --name".into(),
        ));
    }
    if let Some(l) = a.add.iter().find(|l| a.remove.contains(l)) {
        return Err(Failure::Usage(format!(
            "label {l:?} is both added and removed"
        )));
    }
    let store = t.open_for_update()?;
    let mut c = store.load(&id)?;
    let md = &mut c.metadata;
    md.labels.retain(|l| !a.remove.contains(l));
    for l in &a.add {
        if !md.labels.contains(l) {
            md.labels.push(l.clone());
        }
    }
    if let Some(n) = &a.name {
        md.name = (!n.is_empty()).then(|| n.clone());
    }
    caf_core::format::encode(&c)
        .map_err(|e| Failure::msg(format!("{id}: {e}; nothing changed")))?;
    let summary = store.save(&c)?;
    if json {
        output::print_json(&summary);
    } else {
        crate::say!(
            "{id}: name {}, labels [{}]",
            summary.name.as_deref().unwrap_or("-"),
            summary.labels.join(", ")
        );
    }
    Ok(())
}
