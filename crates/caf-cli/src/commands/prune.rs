//! `caf prune` and `caf delete --older-than`: retention from the command line.

use super::execution_id;
use crate::cli::PruneArgs;
use crate::output::{self, DIM};
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::config::Config;
use caf_core::prune::prune;
use caf_core::retention::{parse_tiers, RetentionPolicy};
use caf_core::{Clock, SystemClock};
use std::io::Write;

/// The policy of `DIR/caf.toml`, with the flags given on top.
pub fn policy(t: &Target, a: &PruneArgs) -> Result<RetentionPolicy, Failure> {
    let config = Config::load(t.dir()).map_err(Failure::msg)?;
    let tiers = a
        .tiers
        .as_deref()
        .map(|s| parse_tiers(s).map_err(|e| Failure::Usage(format!("--tiers: {e}"))))
        .transpose()?;
    Ok(config
        .retention
        .policy()
        .with_overrides(a.keep_last, a.max_age, tiers))
}

/// Prunes by the policy (or says what it would prune, with --dry-run).
pub fn run(t: &Target, json: bool, a: &PruneArgs) -> CmdResult {
    let policy = policy(t, a)?;
    if !policy.has_rules() {
        return Err(Failure::Usage(format!(
            "no retention policy: give --keep-last, --max-age or --tiers, or set [retention] in {}",
            Config::path(t.dir()).display()
        )));
    }
    let execution = a.execution.as_deref().map(execution_id).transpose()?;
    let store = t.open_for_update()?;
    let outcome = prune(
        &*store,
        &policy,
        execution.as_ref(),
        SystemClock.now(),
        a.dry_run,
    )?;
    if json {
        output::print_json(&outcome);
        return Ok(());
    }
    let verb = if a.dry_run { "would delete" } else { "deleted" };
    let mut o = anstream::stdout();
    for (id, why) in &outcome.plan.delete {
        let _ = writeln!(
            o,
            "{verb} {id} {DIM}({}){DIM:#}",
            serde_json::to_string(why)
                .unwrap_or_default()
                .trim_matches('"')
        );
    }
    crate::say!(
        "{verb} {}, kept {}",
        outcome.plan.delete.len(),
        outcome.plan.keep.len()
    );
    Ok(())
}
