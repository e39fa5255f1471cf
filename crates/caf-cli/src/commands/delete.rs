//! `caf delete`.

use super::{checkpoint_id, execution_id};
use crate::cli::DeleteArgs;
use crate::output;
use crate::target::Target;
use crate::{CmdResult, Failure};
use serde_json::json;

/// Deletes the named checkpoints (all must exist, else nothing is deleted) or an execution.
pub fn run(t: &Target, json: bool, a: &DeleteArgs) -> CmdResult {
    let store = t.open_for_update()?;
    if let Some(e) = &a.execution {
        let id = execution_id(e)?;
        let n = store.delete_execution(&id)?;
        if n == 0 {
            return Err(Failure::msg(format!(
                "execution {id} has no checkpoints in {}",
                t.describe()
            )));
        }
        if json {
            output::print_json(&json!({"execution_id": id, "deleted": n}));
        } else {
            crate::say!(
                "deleted {} of execution {id}",
                output::count_of(n, "checkpoint")
            );
        }
        return Ok(());
    }
    let ids = a
        .ids
        .iter()
        .map(|s| checkpoint_id(s))
        .collect::<Result<Vec<_>, _>>()?;
    let missing: Vec<String> = ids
        .iter()
        .filter(|id| !store.contains(id))
        .map(|id| format!("checkpoint {id} not found in {}", t.describe()))
        .collect();
    if !missing.is_empty() {
        return Err(Failure::with_outcome(missing, "nothing deleted"));
    }
    for id in &ids {
        store.delete(id)?;
    }
    if json {
        output::print_json(&json!({"deleted": ids}));
    } else {
        for id in &ids {
            crate::say!("deleted {id}");
        }
    }
    Ok(())
}
