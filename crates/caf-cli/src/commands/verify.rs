//! `caf verify [--repair [--force]]`: checks the files, the index and the database of a store
//! ([`caf_sql::verify`]), and repairs what it can.

use crate::cli::VerifyArgs;
use crate::output::{self, GREEN};
use crate::target::{redact, Target};
use crate::{CmdResult, Failure};
use caf_sql::verify::{
    repair_store, verify_store, DatabaseProblem, DatabaseProblemKind, Finding, Remedy, Repair,
    RepairOptions, VerifyError, VerifyReport,
};
use std::io::Write;

fn failure(e: VerifyError) -> Failure {
    match e {
        VerifyError::Store(e) => e.into(),
        VerifyError::Open(e) => crate::target::open_failure(*e),
        e => Failure::msg(e),
    }
}

/// How many problems a report holds, the database's own included.
fn problem_count(r: &VerifyReport) -> u64 {
    r.problems.len() as u64 + u64::from(r.database_problem.is_some())
}

/// One line for a missing or damaged database, and what `--repair` does about it.
fn database_line(p: &DatabaseProblem) -> String {
    let remedy = match p.kind {
        DatabaseProblemKind::Damaged => {
            "--repair or `caf reindex` moves it to the quarantine and rebuilds it from the files"
        }
        _ => "--repair or `caf reindex` rebuilds it from the files",
    };
    format!("{}: {} ({remedy})", p.path.display(), p.message)
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
    if a.repair {
        let options = RepairOptions {
            remove_extra_rows: a.force,
        };
        let r = repair_store(&t.location, options).map_err(failure)?;
        if let Some(p) = &r.found.database_problem {
            if r.after.database_problem.is_none() {
                output::warn_line(&format!("repaired {}", database_line(p)));
            }
        }
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
            let found = problem_count(&r.found);
            let still = r.found.problems.iter().filter(|f| left(f)).count() as u64
                + u64::from(r.after.database_problem.is_some());
            crate::say!(
                "verified {}: {} found, {} repaired, {} left",
                scope(&r.after),
                count(found, "problem", "problems"),
                found.saturating_sub(still),
                problem_count(&r.after)
            );
        }
        return outcome(&r.after, "left after repairing");
    }
    let r = verify_store(&t.location).map_err(failure)?;
    if json {
        output::print_json(&r);
    } else if r.is_clean() {
        let mut o = anstream::stdout();
        let _ = writeln!(o, "{GREEN}ok{GREEN:#}  verified {}: no problems", scope(&r));
    } else {
        crate::say!(
            "verified {}: {}",
            scope(&r),
            count(problem_count(&r), "problem", "problems")
        );
    }
    outcome(&r, "found")
}

/// Exit 1, with one error line per problem, unless there is none.
fn outcome(r: &VerifyReport, what: &str) -> CmdResult {
    if r.is_clean() {
        return Ok(());
    }
    let mut lines: Vec<String> = r.database_problem.iter().map(database_line).collect();
    lines.extend(r.problems.iter().map(line));
    lines.push(format!(
        "{} {what}",
        count(problem_count(r), "problem", "problems")
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
            Repair::RebuiltDatabase {
                path, set_aside, ..
            } => match set_aside {
                Some(to) => crate::say!(
                    "moved the damaged database {} -> {} and made a new one",
                    path.display(),
                    to.display()
                ),
                None => crate::say!("made a new database {}", path.display()),
            },
            Repair::SyncedDatabase { added, replaced } => {
                crate::say!("updated the database: {added} added, {replaced} replaced")
            }
            _ => {}
        }
    }
}
