//! `caf delete`.

use super::{checkpoint_id, execution_id};
use crate::cli::DeleteArgs;
use crate::output;
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_sql::DeleteError;
use serde_json::json;

/// Deletes the named checkpoints (all must exist, else nothing is deleted) or an execution.
pub fn run(t: &Target, json: bool, a: &DeleteArgs) -> CmdResult {
    if let Some(age) = a.older_than {
        return older_than(t, json, a, age);
    }
    if a.ids.is_empty() && a.execution.is_none() {
        return Err(Failure::Usage(
            "nothing to delete: give checkpoint ids, --execution or --older-than".into(),
        ));
    }
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
    store.delete_all(&ids).map_err(|e| match e {
        DeleteError::Missing(missing) => Failure::with_outcome(
            missing
                .iter()
                .map(|id| format!("checkpoint {id} not found in {}", t.describe()))
                .collect(),
            "nothing deleted",
        ),
        DeleteError::Store(e) => Failure::from(e),
        e => Failure::msg(e),
    })?;
    if json {
        output::print_json(&json!({"deleted": ids}));
    } else {
        for id in &ids {
            crate::say!("deleted {id}");
        }
    }
    Ok(())
}

/// Deletes every checkpoint older than `age` (in `--execution`, if given) but each execution's
/// latest, recording tombstones so that lineage stays readable (see `caf prune`).
fn older_than(
    t: &Target,
    json: bool,
    a: &DeleteArgs,
    age: caf_core::duration::Duration,
) -> CmdResult {
    use caf_core::{Clock, ListFilter, SystemClock, Timestamp};
    let store = t.open_for_update()?;
    let now = SystemClock.now();
    let cutoff = Timestamp::from_micros(
        now.as_micros()
            .saturating_sub(i64::try_from(age.as_micros()).unwrap_or(i64::MAX)),
    );
    let filter = ListFilter {
        execution_id: a.execution.as_deref().map(execution_id).transpose()?,
        ..ListFilter::default()
    };
    let all = store.list(&filter)?;
    let mut latest = std::collections::HashSet::new();
    let doomed: Vec<_> = all
        .iter() // newest first: the first of each execution is its latest
        .filter(|s| !latest.insert(s.execution_id.clone()) && s.timestamp < cutoff)
        .collect();
    let ids = caf_core::prune::delete_recorded(&*store, &doomed, now)?;
    if json {
        output::print_json(&json!({"deleted": ids, "older_than": age.to_string()}));
    } else {
        for id in &ids {
            crate::say!("deleted {id}");
        }
        crate::say!(
            "deleted {} checkpoints older than {age} (each execution's latest is kept)",
            ids.len()
        );
    }
    Ok(())
}
