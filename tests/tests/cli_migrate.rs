//! `caf migrate PATH... [--to VERSION] [--dry-run] [--backup]` end to end (docs/format.md,
//! "Migration"): the real binary, through the shared harness [`caf_tests::cli`], on a temporary
//! directory holding copies of the 0.0.1 golden files (`tests/fixtures/v0.0.1/`) next to current
//! files written by `caf demo --steps 2`.
//!
//! A migrated file must hold its committed expected migration (`tests/fixtures/v1.0.0/from-*`,
//! as it loads in the current format); a current file is never rewritten (same bytes, same modification time); a file
//! that cannot be read fails alone and is left untouched; lineage is inferred only across files
//! of one execution migrated together. Stdout and stderr are pipes here, so no progress bar (and
//! no ANSI code, which the harness checks on every run) may appear even for many files.

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{files, fixtures, json_files, s, Out, Sandbox};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The 0.0.1 golden files, by name without `.json`; the expected migration of `NAME` is
/// `v1.0.0/from-NAME.json`.
const LEGACY: [&str; 3] = ["seed-example", "ts-caf", "ts-caf-minimal"];

/// The timestamp of the seed golden file (milliseconds since the epoch, as 0.0.1 has them).
const SEED_MS: i64 = 1_738_790_400_000;

/// The summary line of a run without inferred parents.
fn summary(verb: &str, migrated: usize, current: usize, failed: usize) -> String {
    format!("{verb} {migrated}, already current {current}, failed {failed}\n")
}

fn legacy_file(name: &str) -> PathBuf {
    fixtures().join(format!("v0.0.1/{name}.json"))
}

/// Whether the file at `path` holds, in the current format, the committed migration of the
/// 0.0.1 golden file `name` (`v1.0.0/from-NAME.json`, as it loads today).
fn is_golden(path: &Path, name: &str) -> bool {
    let limits = caf_core::Limits::default();
    let load = |p: &Path| caf_core::format::decode(&std::fs::read(p).unwrap(), &limits).unwrap();
    let file = load(path);
    let expected = load(&fixtures().join(format!("v1.0.0/from-{name}.json")));
    file.source_version == CURRENT && file.checkpoint == expected.checkpoint
}

/// The current format version.
const CURRENT: &str = caf_core::CURRENT_VERSION;

/// A sandbox with `mixed/` in it: copies of the three 0.0.1 golden files (`NAME.json`) and the
/// three current checkpoints of `caf demo --steps 2`. Returns the sandbox, the directory and the
/// names of the current files.
fn mixed() -> (Sandbox, PathBuf, Vec<String>) {
    let sb = Sandbox::new();
    sb.caf(&["demo", "--steps", "2"]).ok();
    let dir = sb.path().join("mixed");
    std::fs::create_dir(&dir).unwrap();
    let current: Vec<String> = json_files(&sb.store()).into_keys().collect();
    assert_eq!(current.len(), 3, "{current:?}");
    for name in &current {
        std::fs::copy(sb.store().join(name), dir.join(name)).unwrap();
    }
    for name in LEGACY {
        std::fs::copy(legacy_file(name), dir.join(format!("{name}.json"))).unwrap();
    }
    (sb, dir, current)
}

/// `caf migrate ARGS…` (no `--dir`: migrate takes paths), in the sandbox.
fn migrate(sb: &Sandbox, args: &[&str]) -> Out {
    let mut all = vec!["migrate"];
    all.extend_from_slice(args);
    sb.caf_plain(&all, &[])
}

/// `caf --json migrate ARGS…`, which must succeed, as its JSON report.
fn migrate_json(sb: &Sandbox, args: &[&str]) -> Value {
    let mut all = vec!["--json", "migrate"];
    all.extend_from_slice(args);
    sb.caf_plain(&all, &[]).ok().json()
}

/// Sets the modification time of `path` far in the past, so that a rewrite cannot go unseen
/// within the file system's timestamp granularity.
fn age(path: &Path) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000))
        .unwrap();
}

/// The modification time of every entry directly in `dir`, by name.
fn mtimes(dir: &Path) -> BTreeMap<String, SystemTime> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().modified().unwrap(),
            )
        })
        .collect()
}

/// The file as JSON.
fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The seed golden file (0.0.1, seed dialect: no parent) as checkpoint `id` of execution `exec`
/// at `ms` milliseconds since the epoch.
fn seed_variant(id: &str, exec: &str, ms: i64) -> Vec<u8> {
    let mut doc = read_json(&legacy_file("seed-example"));
    assert!(doc.get("parent").is_none() && doc.get("parent_id").is_none());
    doc["id"] = id.into();
    doc["execution_id"] = exec.into();
    doc["timestamp"] = ms.into();
    serde_json::to_vec_pretty(&doc).unwrap()
}

/// The paths in a JSON report's array of path strings, or of objects with a `path`, as a set.
fn report_paths(items: &Value) -> BTreeSet<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap_or_else(|| i["path"].as_str().unwrap()))
        .map(str::to_string)
        .collect()
}

fn paths_in(dir: &Path, names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| s(&dir.join(n)).to_string()).collect()
}

fn legacy_names() -> Vec<String> {
    LEGACY.iter().map(|n| format!("{n}.json")).collect()
}

// ---------------------------------------------------------------------------------------------
// Dry run
// ---------------------------------------------------------------------------------------------

#[test]
fn dry_run_changes_nothing_and_says_what_it_would_do() {
    let (sb, dir, current) = mixed();
    let before = files(sb.path());
    let times = mtimes(&dir);

    let out = migrate(&sb, &[s(&dir), "--dry-run"]).ok();
    let text = out.out();
    assert!(text.ends_with(&summary("would migrate", 3, 3, 0)), "{text}");
    for name in LEGACY {
        let line = format!(
            "would migrate {} (0.0.1 → {CURRENT})\n",
            s(&dir.join(format!("{name}.json")))
        );
        assert!(text.contains(&line), "{line:?} missing: {text}");
    }
    for name in &current {
        assert!(!text.contains(name.as_str()), "{name}: {text}");
    }
    assert!(out.stderr.is_empty(), "{}", out.describe());

    // With --backup and --json: still nothing written, no backup.
    let report = migrate_json(&sb, &[s(&dir), "--dry-run", "--backup"]);
    assert_eq!(report["dry_run"], true, "{report:#}");
    assert_eq!(report["to"], CURRENT, "{report:#}");
    let legacy = legacy_names();
    let legacy: Vec<&str> = legacy.iter().map(String::as_str).collect();
    assert_eq!(report_paths(&report["migrated"]), paths_in(&dir, &legacy));
    assert!(report["migrated"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["from"] == "0.0.1"));
    let current_refs: Vec<&str> = current.iter().map(String::as_str).collect();
    assert_eq!(
        report_paths(&report["already_current"]),
        paths_in(&dir, &current_refs)
    );
    assert_eq!(report["parents_inferred"], 0, "{report:#}");
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");

    assert_eq!(files(sb.path()), before, "a dry run changed a file");
    assert_eq!(mtimes(&dir), times, "a dry run touched a file");
}

// ---------------------------------------------------------------------------------------------
// Migrating
// ---------------------------------------------------------------------------------------------

#[test]
fn legacy_files_become_their_committed_migrations_and_current_files_are_not_touched() {
    let (sb, dir, current) = mixed();
    for name in &current {
        age(&dir.join(name));
    }
    let current_before: BTreeMap<String, Vec<u8>> = json_files(&dir)
        .into_iter()
        .filter(|(k, _)| current.contains(k))
        .collect();
    let times = mtimes(&dir);

    let report = migrate_json(&sb, &[s(&dir)]);
    let keys: BTreeSet<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "already_current",
            "dry_run",
            "failed",
            "migrated",
            "parents_inferred",
            "to"
        ]),
        "{report:#}"
    );
    assert_eq!(report["dry_run"], false, "{report:#}");
    assert_eq!(report["to"], CURRENT, "{report:#}");
    let migrated = report["migrated"].as_array().unwrap();
    assert_eq!(migrated.len(), 3, "{report:#}");
    for m in migrated {
        let keys: BTreeSet<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["from", "path"]), "{report:#}");
        assert_eq!(m["from"], "0.0.1", "{report:#}");
    }
    let legacy = legacy_names();
    let legacy: Vec<&str> = legacy.iter().map(String::as_str).collect();
    assert_eq!(report_paths(&report["migrated"]), paths_in(&dir, &legacy));
    let current_refs: Vec<&str> = current.iter().map(String::as_str).collect();
    assert_eq!(
        report_paths(&report["already_current"]),
        paths_in(&dir, &current_refs)
    );
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");
    // The three golden files are of three different executions, so nothing is inferred: each
    // migrated file is exactly its committed migration.
    assert_eq!(report["parents_inferred"], 0, "{report:#}");
    let executions: BTreeSet<String> = LEGACY
        .iter()
        .map(|n| read_json(&legacy_file(n))["execution_id"].to_string())
        .collect();
    assert_eq!(executions.len(), 3);
    for name in LEGACY {
        let path = dir.join(format!("{name}.json"));
        assert!(
            is_golden(&path, name),
            "{name}.json does not hold v1.0.0/from-{name}.json"
        );
    }
    // Lineage as the files had it: the seed dialect has no parent, ts-caf names its own.
    let parent = |name: &str| read_json(&dir.join(format!("{name}.json")))["parent_id"].clone();
    assert_eq!(parent("seed-example"), Value::Null);
    assert_eq!(parent("ts-caf-minimal"), Value::Null);
    assert_eq!(parent("ts-caf"), "m6sewkia_h5j8k1l3z");

    // The current files were not rewritten: same bytes, same modification time.
    for (name, bytes) in &current_before {
        assert!(
            std::fs::read(dir.join(name)).unwrap() == *bytes,
            "{name} changed"
        );
        assert_eq!(mtimes(&dir)[name], times[name], "{name} was rewritten");
    }
    // No backup without --backup, no temporary file left behind.
    let mut names: Vec<String> = mtimes(&dir).into_keys().collect();
    names.sort();
    let mut expected: Vec<String> = current.iter().cloned().chain(legacy_names()).collect();
    expected.sort();
    assert_eq!(names, expected);

    // Again: everything is current, nothing is written.
    let after = files(&dir);
    let times = mtimes(&dir);
    let out = migrate(&sb, &[s(&dir)]).ok();
    assert_eq!(
        out.out(),
        summary("migrated", 0, 6, 0),
        "{}",
        out.describe()
    );
    assert!(out.stderr.is_empty(), "{}", out.describe());
    assert_eq!(files(&dir), after);
    assert_eq!(mtimes(&dir), times);

    // And every file validates, in the current format.
    let out = sb.caf_plain(&["validate", s(&dir)], &[]).ok();
    let text = out.out();
    assert!(text.contains("6 valid, 0 invalid"), "{text}");
    let ok_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("ok  ")).collect();
    assert_eq!(ok_lines.len(), 6, "{text}");
    assert!(
        ok_lines
            .iter()
            .all(|l| l.ends_with(&format!("  {CURRENT}"))),
        "{text}"
    );
}

#[test]
fn backup_keeps_each_original_byte_for_byte() {
    let (sb, dir, current) = mixed();
    let out = migrate(&sb, &[s(&dir), "--backup"]).ok();
    let text = out.out();
    assert!(text.ends_with(&summary("migrated", 3, 3, 0)), "{text}");
    for name in LEGACY {
        let path = dir.join(format!("{name}.json"));
        let line = format!("migrated {} (0.0.1 → {CURRENT})\n", s(&path));
        assert!(text.contains(&line), "{line:?} missing: {text}");
        let backup = dir.join(format!("{name}.json.0.0.1.bak"));
        assert!(
            std::fs::read(&backup).unwrap() == std::fs::read(legacy_file(name)).unwrap(),
            "{} is not the original",
            backup.display()
        );
        assert!(is_golden(&path, name), "{name}");
    }
    // Only the migrated files have a backup; backups are not `*.json` files.
    let baks: Vec<String> = mtimes(&dir)
        .into_keys()
        .filter(|n| n.ends_with(".bak"))
        .collect();
    assert_eq!(baks.len(), 3, "{baks:?}");
    for name in &current {
        assert!(!dir.join(format!("{name}.0.0.1.bak")).exists());
        assert!(!dir.join(format!("{name}.1.0.0.bak")).exists());
    }
    assert_eq!(json_files(&dir).len(), 6);
    let out = sb.caf_plain(&["validate", s(&dir)], &[]).ok();
    assert!(
        out.out().contains("6 valid, 0 invalid"),
        "{}",
        out.describe()
    );
    // Again with --backup: nothing to migrate, the backups stay as they are.
    let before = files(&dir);
    let out = migrate(&sb, &[s(&dir), "--backup"]).ok();
    assert_eq!(
        out.out(),
        summary("migrated", 0, 6, 0),
        "{}",
        out.describe()
    );
    assert_eq!(files(&dir), before);
}

#[test]
fn a_corrupt_file_fails_alone_and_is_left_untouched() {
    let (sb, dir, _) = mixed();
    // A legacy file cut in the middle.
    let whole = std::fs::read(legacy_file("ts-caf")).unwrap();
    let corrupt = dir.join("truncated.json");
    std::fs::write(&corrupt, &whole[..whole.len() / 2]).unwrap();
    let corrupt_bytes = std::fs::read(&corrupt).unwrap();

    let out = migrate(&sb, &[s(&dir)]).fails(1);
    assert!(
        out.out().ends_with(&summary("migrated", 3, 3, 1)),
        "{}",
        out.describe()
    );
    let errors = out.errors();
    assert!(
        errors
            .iter()
            .any(|l| l.contains(s(&corrupt)) && l.contains("not valid JSON")),
        "{}",
        out.describe()
    );
    assert!(!out.out().contains(s(&corrupt)), "{}", out.describe());
    assert!(std::fs::read(&corrupt).unwrap() == corrupt_bytes);
    for name in LEGACY {
        assert!(is_golden(&dir.join(format!("{name}.json")), name));
    }

    // The JSON report names it with its errors (the lines printed on stderr).
    let out = sb.caf_plain(&["--json", "migrate", s(&dir)], &[]).fails(1);
    let report = out.json();
    assert_eq!(report["migrated"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["already_current"].as_array().unwrap().len(), 6);
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{report:#}");
    let keys: BTreeSet<&str> = failed[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, BTreeSet::from(["errors", "path"]), "{report:#}");
    assert_eq!(failed[0]["path"], s(&corrupt), "{report:#}");
    let lines = failed[0]["errors"].as_array().unwrap();
    assert!(!lines.is_empty(), "{report:#}");
    for l in lines {
        let l = l.as_str().unwrap();
        assert!(l.contains(s(&corrupt)), "{report:#}");
        assert!(out.err().contains(l), "{}", out.describe());
    }
    assert!(std::fs::read(&corrupt).unwrap() == corrupt_bytes);
}

#[test]
fn only_the_current_version_is_a_target() {
    let (sb, dir, _) = mixed();
    let before = files(&dir);
    for to in ["0.0.1", "9.9.9", "banana"] {
        let out = migrate(&sb, &[s(&dir), "--to", to]).fails(2);
        assert!(out.err().contains(to), "{}", out.describe());
        assert!(out.err().contains(CURRENT), "{}", out.describe());
        assert!(out.stdout.is_empty(), "{}", out.describe());
        assert_eq!(files(&dir), before);
    }
    // No path at all is bad usage too.
    migrate(&sb, &[]).fails(2);
    migrate(&sb, &["--dry-run"]).fails(2);
    assert_eq!(files(&dir), before);
    // --to the current version is what migrate does anyway.
    let out = migrate(&sb, &[s(&dir), "--to", CURRENT]).ok();
    assert!(
        out.out().ends_with(&summary("migrated", 3, 3, 0)),
        "{}",
        out.describe()
    );
}

// ---------------------------------------------------------------------------------------------
// Lineage
// ---------------------------------------------------------------------------------------------

#[test]
fn parents_are_inferred_in_time_order_across_files_migrated_together() {
    let sb = Sandbox::new();
    let dir = sb.path().join("chain");
    std::fs::create_dir(&dir).unwrap();
    // One execution; neither the ids nor the file names are in time order.
    let chain = [
        ("ckpt_c", SEED_MS),
        ("ckpt_a", SEED_MS + 1_000),
        ("ckpt_b", SEED_MS + 2_000),
    ];
    for (id, ms) in chain {
        std::fs::write(
            dir.join(format!("{id}.json")),
            seed_variant(id, "exec_chain", ms),
        )
        .unwrap();
    }
    // Another execution, in the middle of that time: not part of the chain.
    std::fs::write(
        dir.join("ckpt_other.json"),
        seed_variant("ckpt_other", "exec_other", SEED_MS + 1_500),
    )
    .unwrap();

    let out = migrate(&sb, &[s(&dir)]).ok();
    assert!(
        out.out().ends_with(
            "migrated 4, already current 0, failed 0, 2 parents inferred from execution order\n"
        ),
        "{}",
        out.describe()
    );
    let parent = |id: &str| read_json(&dir.join(format!("{id}.json")))["parent_id"].clone();
    assert_eq!(parent("ckpt_c"), Value::Null);
    assert_eq!(parent("ckpt_a"), "ckpt_c");
    assert_eq!(parent("ckpt_b"), "ckpt_a");
    assert_eq!(parent("ckpt_other"), Value::Null);
    sb.caf_plain(&["validate", s(&dir)], &[]).ok();
    // The lineage is usable: the directory is a store, `caf diff ID` diffs against the parent.
    let d = sb
        .caf_plain(&["--dir", s(&dir), "--json", "diff", "ckpt_b"], &[])
        .ok()
        .json();
    assert_eq!(d["from"], "ckpt_a", "{d:#}");
    assert_eq!(d["to"], "ckpt_b", "{d:#}");
    // Migrated again (all current now): nothing more is inferred or written.
    let before = files(&dir);
    let report = migrate_json(&sb, &[s(&dir)]);
    assert_eq!(report["parents_inferred"], 0, "{report:#}");
    assert_eq!(files(&dir), before);

    // The middle checkpoint migrated alone has no predecessor: no parent.
    let alone = sb.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let file = alone.join("ckpt_a.json");
    std::fs::write(&file, seed_variant("ckpt_a", "exec_chain", SEED_MS + 1_000)).unwrap();
    let report = migrate_json(&sb, &[s(&file)]);
    assert_eq!(report["parents_inferred"], 0, "{report:#}");
    assert_eq!(
        report["migrated"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_eq!(read_json(&file)["parent_id"], Value::Null);
}

/// A file named twice — a directory and a file in it — is migrated once, not counted twice and
/// not inferred to be its own parent (a bug `caf migrate` had).
#[test]
fn a_file_named_twice_is_migrated_once() {
    let (sb, dir, _) = mixed();
    let seed = dir.join("seed-example.json");
    let relative = "mixed/./seed-example.json";
    let out = migrate(&sb, &[s(&dir), relative, s(&seed)]).ok();
    assert!(
        out.out().ends_with(&summary("migrated", 3, 3, 0)),
        "{}",
        out.describe()
    );
    assert_eq!(
        out.out().matches("seed-example.json").count(),
        1,
        "{}",
        out.describe()
    );
    assert!(is_golden(&seed, "seed-example"));
    assert_eq!(read_json(&seed)["parent_id"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// Many files
// ---------------------------------------------------------------------------------------------

/// 31 files (above the progress bar's threshold of 20): 24 seed-dialect files in 4 executions of
/// 6, the 3 golden 0.0.1 files, the 3 current demo files and a corrupt file. The counts add up,
/// and on pipes — even with a `TERM` that looks like a terminal — there is no progress bar:
/// nothing on stderr but the error lines, no carriage return, no escape code (the harness).
#[test]
fn many_files_are_counted_right_and_draw_no_progress_bar_on_a_pipe() {
    let (sb, dir, _) = mixed();
    let mut chains = Vec::new();
    for e in 0..4 {
        let exec = format!("exec_bulk_{e}");
        let mut ids = Vec::new();
        for k in 0..6 {
            // Files named against time order.
            let id = format!("ckpt_bulk_{e}_{}", 5 - k);
            std::fs::write(
                dir.join(format!("{id}.json")),
                seed_variant(&id, &exec, SEED_MS + k * 60_000),
            )
            .unwrap();
            ids.push(id);
        }
        chains.push(ids);
    }
    let corrupt = dir.join("zz-corrupt.json");
    std::fs::write(&corrupt, b"{\"version\": \"0.0.1\", \"id\": ").unwrap();
    assert_eq!(json_files(&dir).len(), 31);
    let terminal_like = [("TERM", "xterm-256color")];

    let before = files(&dir);
    let out = sb
        .caf_plain(&["migrate", s(&dir), "--dry-run"], &terminal_like)
        .fails(1);
    let inferred = ", 20 parents inferred from execution order\n";
    let expected = format!("would migrate 27, already current 3, failed 1{inferred}");
    assert!(out.out().ends_with(&expected), "{}", out.describe());
    assert_eq!(files(&dir), before);

    let out = sb.caf_plain(&["migrate", s(&dir)], &terminal_like).fails(1);
    let text = out.out();
    let expected = format!("migrated 27, already current 3, failed 1{inferred}");
    assert!(text.ends_with(&expected), "{}", out.describe());
    assert_eq!(
        text.lines().filter(|l| l.starts_with("migrated /")).count(),
        27,
        "{text}"
    );
    for bytes in [&out.stdout, &out.stderr] {
        assert!(!bytes.contains(&b'\r'), "{}", out.describe());
    }
    assert!(
        out.err().lines().all(|l| l.starts_with("error: ")),
        "{}",
        out.describe()
    );
    assert!(out.err().contains(s(&corrupt)), "{}", out.describe());
    for ids in &chains {
        for pair in ids.windows(2) {
            let next = read_json(&dir.join(format!("{}.json", pair[1])));
            assert_eq!(next["parent_id"], pair[0].as_str(), "{}", pair[1]);
        }
        assert_eq!(
            read_json(&dir.join(format!("{}.json", ids[0])))["parent_id"],
            Value::Null
        );
    }
    for name in LEGACY {
        assert!(is_golden(&dir.join(format!("{name}.json")), name));
    }

    // Once the corrupt file is gone: all 30 current, all valid.
    std::fs::remove_file(&corrupt).unwrap();
    let report = migrate_json(&sb, &[s(&dir)]);
    assert_eq!(report["migrated"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["already_current"].as_array().unwrap().len(), 30);
    assert_eq!(report["parents_inferred"], 0, "{report:#}");
    let out = sb.caf_plain(&["validate", s(&dir)], &[]).ok();
    assert!(
        out.out().contains("30 valid, 0 invalid"),
        "{}",
        out.describe()
    );
}
