//! `caf verify [--repair [--force]]`: checks the files, the index and the database of a store
//! ([`caf_sql::verify`]), and repairs what it can.

use crate::cli::VerifyArgs;
use crate::output::{self, GREEN};
use crate::target::{redact, Target};
use crate::{CmdResult, Failure};
use caf_sql::verify::{
    repair, verify, Finding, Remedy, Repair, RepairOptions, VerifyError, VerifyReport,
};
use caf_sql::SqlStore;
use std::io::Write;

fn failure(e: VerifyError) -> Failure {
    match e {
        VerifyError::Store(e) => e.into(),
        e => Failure::msg(e),
    }
}

/// One line for a problem: its file or id, what is wrong, and what `--repair` does about it.
fn line(f: &Finding) -> String {
    let subject = f
        .path
        .as_ref()
        .map_or_else(|| f.id.to_string(), |p| p.display().to_string());
    let remedy = match f.remedy {
        Remedy::Quarantine => "--repair moves it to the quarantine",
        Remedy::RestoreFromDatabase => "--repair writes it back from the database's intact copy",
        Remedy::RebuildIndex => "--repair rebuilds the index",
        Remedy::SyncDatabase => "--repair updates the database from the file",
        Remedy::RemoveRow => {
            "--repair --force removes it from the database, keeping a copy in the quarantine"
        }
        _ => "left as it is",
    };
    format!("{subject}: {} ({remedy})", f.message)
}

/// `1 problem`, `2 problems`.
fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// What was checked, in words.
fn scope(r: &VerifyReport) -> String {
    let index = match r.index_entries {
        Some(n) => format!("the index ({})", count(n, "entry", "entries")),
        None => "no index yet".to_string(),
    };
    let db = match (&r.database, r.rows) {
        (Some(d), Some(n)) => format!(
            ", the database {} ({})",
            redact(d),
            count(n, "checkpoint", "checkpoints")
        ),
        _ => String::new(),
    };
    format!(
        "{}: {}, {index}{db}",
        r.dir.display(),
        count(r.files, "checkpoint file", "checkpoint files")
    )
}

/// `caf verify`.
pub fn run(t: &Target, json: bool, a: &VerifyArgs) -> CmdResult {
    if t.no_files {
        return Err(Failure::Usage(
            "verify checks a directory of checkpoint files: drop --no-files".into(),
        ));
    }
    if !t.dir.is_dir() {
        return Err(Failure::msg(format!(
            "{}: no checkpoint directory here",
            t.dir.display()
        )));
    }
    let db: Option<SqlStore> = match t.db_url(false) {
        Some(_) => Some(t.database(false)?),
        None => None,
    };
    if a.repair {
        let options = RepairOptions {
            remove_extra_rows: a.force,
        };
        let r = repair(t.dir(), db.as_ref(), options).map_err(failure)?;
        // What was fixed is a warning; what is left, an error (below): each problem once.
        let left = |f: &Finding| {
            r.after
                .problems
                .iter()
                .any(|g| (g.kind, &g.id) == (f.kind, &f.id))
        };
        for f in r.found.problems.iter().filter(|f| !left(f)) {
            output::warn_line(&format!("repaired {}", line(f)));
        }
        if json {
            output::print_json(&r);
        } else {
            print_repairs(&r.repairs);
            let found = r.found.problems.len() as u64;
            let fixed = found - r.found.problems.iter().filter(|f| left(f)).count() as u64;
            crate::say!(
                "verified {}: {} found, {fixed} repaired, {} left",
                scope(&r.after),
                count(found, "problem", "problems"),
                r.after.problems.len()
            );
        }
        return outcome(&r.after, "left after repairing");
    }
    let r = verify(t.dir(), db.as_ref()).map_err(failure)?;
    if json {
        output::print_json(&r);
    } else if r.is_clean() {
        let mut o = anstream::stdout();
        let _ = writeln!(o, "{GREEN}ok{GREEN:#}  verified {}: no problems", scope(&r));
    } else {
        crate::say!(
            "verified {}: {}",
            scope(&r),
            count(r.problems.len() as u64, "problem", "problems")
        );
    }
    outcome(&r, "found")
}

/// Exit 1, with one error line per problem, unless there is none.
fn outcome(r: &VerifyReport, what: &str) -> CmdResult {
    if r.is_clean() {
        return Ok(());
    }
    let mut lines: Vec<String> = r.problems.iter().map(line).collect();
    lines.push(format!(
        "{} {what}",
        count(r.problems.len() as u64, "problem", "problems")
    ));
    Err(Failure::Failed(lines))
}

fn print_repairs(repairs: &[Repair]) {
    for r in repairs {
        match r {
            Repair::Quarantined { from, to, .. } => crate::say!(
                "quarantined {} -> {} (why: {}.why.txt)",
                from.display(),
                to.display(),
                to.display()
            ),
            Repair::Restored { path, original, .. } => crate::say!(
                "restored {} from the database, byte for byte (damaged original: {})",
                path.display(),
                original.display()
            ),
            Repair::SavedRow { id, to, .. } => {
                crate::say!("saved the database's copy of {id} to {}", to.display())
            }
            Repair::RemovedRow { id } => crate::say!("removed {id} from the database"),
            Repair::RebuiltIndex { entries } => crate::say!(
                "rebuilt the index: {}",
                count(*entries, "checkpoint", "checkpoints")
            ),
            Repair::SyncedDatabase { added, replaced } => {
                crate::say!("updated the database: {added} added, {replaced} replaced")
            }
            _ => {}
        }
    }
}
