//! End-to-end tests of the `caf` command line: the real binary, run in a temporary directory
//! (its own `--dir` and working directory, never the repository's `checkpoints/`), checked for
//! its output, its exit code (0 success, 1 a failed operation, 2 bad usage), no ANSI escape codes
//! (stdout and stderr are pipes here, never a terminal) and never a panic.
//!
//! The harness (building and running the binary, the checks on every run, [`Sandbox`]) is
//! [`caf_tests::cli`].

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{files, fixtures, ids, json_files, s, workspace, Sandbox};
use serde_json::Value;
use std::path::Path;

// ---------------------------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------------------------

/// `--help` of every command works (clap checks each command's definition when it is built, so
/// this also catches conflicting flags), and `--version` prints the version.
#[test]
fn every_command_has_help() {
    let sb = Sandbox::new();
    let help = sb.caf_plain(&["--help"], &[]).ok().out();
    let commands: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A command's line, not the continuation of a wrapped description.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .filter(|c| c != "help")
        .collect();
    for c in [
        "demo", "list", "inspect", "validate", "import", "export", "delete", "schema", "bench",
    ] {
        assert!(commands.iter().any(|x| x == c), "{c} missing from {help}");
    }
    for c in &commands {
        let out = sb.caf_plain(&[c, "--help"], &[]).ok();
        assert!(out.out().contains("Usage: caf"), "{}", out.describe());
    }
    let v = sb.caf_plain(&["--version"], &[]).ok().out();
    assert!(v.starts_with("caf "), "{v}");
    assert!(!sb.store().exists());
}

#[test]
fn bad_usage_exits_2() {
    let sb = Sandbox::new();
    let out = sb.caf(&["frobnicate"]).fails(2);
    assert!(out.err().contains("frobnicate"), "{}", out.describe());
    let out = sb.caf(&["list", "--frobnicate"]).fails(2);
    assert!(out.err().contains("--frobnicate"), "{}", out.describe());
    sb.caf(&["--frobnicate", "list"]).fails(2);
    sb.caf(&["list", "--limit", "many"]).fails(2);
    sb.caf(&["demo", "--executions", "0"]).fails(2);
    sb.caf(&["demo", "--seed", "-1"]).fails(2);
    sb.caf(&["inspect"]).fails(2);
    sb.caf(&["validate"]).fails(2);
    sb.caf(&["import"]).fails(2);
    sb.caf(&["export"]).fails(2);
    sb.caf(&["delete"]).fails(2);
    sb.caf(&["delete", "ckpt_a", "--execution", "exec_a"])
        .fails(2);
    sb.caf(&["bench", "--mode", "carrier-pigeon"]).fails(2);
    // No command at all: usage on stderr, exit 2.
    let out = sb.caf(&[]);
    assert_eq!(out.code, 2, "{}", out.describe());
    assert!(out.err().contains("Usage"), "{}", out.describe());
    // Nothing was created by any of this.
    assert!(!sb.store().exists());
}

// ---------------------------------------------------------------------------------------------
// demo
// ---------------------------------------------------------------------------------------------

#[test]
fn demo_checkpoints_crashes_resumes_and_finishes() {
    let sb = Sandbox::new();
    let out = sb.caf(&["demo"]).ok();
    let text = out.out();
    for needle in [
        "caf demo",
        "a crash during step 5",
        "seed 42",
        "crash!",
        "resume",
        "restored",
        "done",
        "final checkpoint",
        "fork",
        "branch",
        "prune",
        "checkpoints written to",
    ] {
        assert!(
            text.contains(needle),
            "{needle:?} missing: {}",
            out.describe()
        );
    }
    let files = json_files(&sb.store());
    // 8 steps, one crash (no checkpoint for the crashed attempt), and a final checkpoint; then
    // a fork and two steps on the branch; then 4 pruned.
    assert_eq!(files.len(), 8, "{:?}", files.keys());
    assert!(
        text.contains("12 checkpoints written") && text.contains("(4 since pruned)"),
        "{text}"
    );
    for name in files.keys() {
        assert!(name.starts_with("ckpt_"), "{name}");
    }
    // The suggested next commands name real checkpoints.
    let last = sb.list(&["--reason", "completed"])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains(&format!("inspect {last}")), "{text}");
    let out = sb.caf_plain(&["validate", &sb.store_str()], &[]).ok();
    assert!(
        out.out().contains("8 valid, 0 invalid"),
        "{}",
        out.describe()
    );
}

#[test]
fn demo_is_deterministic() {
    let a = Sandbox::new();
    let b = Sandbox::new();
    a.caf(&[
        "demo",
        "--executions",
        "2",
        "--steps",
        "4",
        "--crash-at",
        "3",
        "--deterministic",
    ])
    .ok();
    b.caf(&[
        "demo",
        "--executions",
        "2",
        "--steps",
        "4",
        "--crash-at",
        "3",
        "--deterministic",
    ])
    .ok();
    let first = json_files(&a.store());
    assert_eq!(first.len(), 2 * 5);
    assert_eq!(first, json_files(&b.store()), "two runs differ");
    // Again in the same directory: the earlier run is replaced by identical files.
    let out = a
        .caf(&[
            "demo",
            "--executions",
            "2",
            "--steps",
            "4",
            "--crash-at",
            "3",
            "--deterministic",
        ])
        .ok();
    assert!(out.out().contains("replaying"), "{}", out.describe());
    assert_eq!(first, json_files(&a.store()), "a rerun changed the files");
    // Another seed: other ids.
    let c = Sandbox::new();
    c.caf(&[
        "demo",
        "--executions",
        "2",
        "--steps",
        "4",
        "--crash-at",
        "3",
        "--deterministic",
        "--seed",
        "7",
    ])
    .ok();
    let other = json_files(&c.store());
    assert_eq!(other.len(), first.len());
    assert!(other.keys().all(|k| !first.contains_key(k)));
}

/// The example archive in the repository is what `caf demo` writes (the README says so).
#[test]
fn demo_reproduces_the_committed_example_archive() {
    let committed = json_files(&workspace().join("checkpoints"));
    assert!(!committed.is_empty());
    let sb = Sandbox::new();
    sb.caf(&["demo", "--deterministic"]).ok();
    let made = json_files(&sb.store());
    assert_eq!(
        made.keys().collect::<Vec<_>>(),
        committed.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &made {
        assert!(
            committed[name] == *bytes,
            "checkpoints/{name} differs from what `caf demo` writes (regenerate the archive)"
        );
    }
}

#[test]
fn demo_options_and_json_report_match_the_store() {
    let sb = Sandbox::new();
    let report = sb.demo(&[
        "--executions",
        "2",
        "--steps",
        "3",
        "--crash-at",
        "2",
        "--seed",
        "7",
    ]);
    let execs = report["executions"].as_array().unwrap();
    assert_eq!(execs.len(), 2, "{report}");
    let mut total = 0;
    for e in execs {
        let exec = e["execution_id"].as_str().unwrap();
        let n = e["checkpoints"].as_u64().unwrap();
        // Steps 1, 2 (after the crash and resume), 3 and the final checkpoint.
        assert_eq!(n, 4, "{e}");
        assert_eq!(e["crashed_at_step"], 2, "{e}");
        let listed = sb.list(&["--execution", exec]);
        assert_eq!(listed.len() as u64, n);
        // Resumed from the checkpoint of step 1; the final checkpoint is the newest.
        let step1 = listed.iter().find(|c| c["step_number"] == 1).unwrap();
        assert_eq!(e["resumed_from"], step1["id"], "{e}");
        assert_eq!(e["final_checkpoint"], listed[0]["id"], "{e}");
        assert_eq!(listed[0]["checkpoint_reason"], "completed");
        assert_eq!(e["tokens_used"], listed[0]["tokens_used"]);
        total += n;
    }
    assert_eq!(report["checkpoints"].as_u64(), Some(total));
    assert_eq!(sb.list(&[]).len() as u64, total);
    assert_eq!(json_files(&sb.store()).len() as u64, total);
}

#[test]
fn demo_without_a_crash() {
    let sb = Sandbox::new();
    let out = sb.caf(&["demo", "--steps", "3", "--crash-at", "0"]).ok();
    assert!(out.out().contains("no crash"), "{}", out.describe());
    assert!(!out.out().contains("crash!"), "{}", out.describe());
    assert!(!out.out().contains("restored"), "{}", out.describe());
    let sb = Sandbox::new();
    let report = sb.demo(&["--steps", "3", "--crash-at", "0"]);
    let e = &report["executions"][0];
    assert_eq!(e["checkpoints"], 4, "{report}");
    assert!(e["crashed_at_step"].is_null(), "{report}");
    assert!(e["resumed_from"].is_null(), "{report}");
    // A crash after the last step would never happen: asking for one is bad usage, and
    // nothing is written.
    let sb = Sandbox::new();
    let out = sb
        .caf(&["demo", "--steps", "3", "--crash-at", "9"])
        .fails(2);
    assert!(
        out.err().contains("--crash-at 9 is past the last step (3)"),
        "{}",
        out.describe()
    );
    assert!(!sb.store().exists());
    // The default (step 5) only applies when there is a step 5.
    let report = sb.demo(&["--steps", "3"]);
    assert!(report["executions"][0]["crashed_at_step"].is_null());
    let report = Sandbox::new().demo(&["--steps", "3", "--crash-at", "3"]);
    assert_eq!(report["executions"][0]["crashed_at_step"], 3);
}

#[test]
fn demo_crash_before_the_first_checkpoint_starts_over() {
    let sb = Sandbox::new();
    let out = sb.caf(&["demo", "--steps", "3", "--crash-at", "1"]).ok();
    let text = out.out();
    assert!(text.contains("crash!"), "{}", out.describe());
    assert!(text.contains("starting over"), "{}", out.describe());
    let sb = Sandbox::new();
    let report = sb.demo(&["--steps", "3", "--crash-at", "1"]);
    let e = &report["executions"][0];
    assert_eq!(e["crashed_at_step"], 1, "{report}");
    assert!(e["resumed_from"].is_null(), "{report}");
    assert_eq!(e["checkpoints"], 4, "{report}");
    let listed = sb.list(&[]);
    let steps: Vec<u64> = listed
        .iter()
        .map(|c| c["step_number"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [3, 3, 2, 1]);
    // The first checkpoint has no parent: the run started over.
    assert!(listed[3]["parent_id"].is_null());
}

// ---------------------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------------------

const LIST_FIELDS: [&str; 8] = [
    "id",
    "parent_id",
    "execution_id",
    "agent_id",
    "step_number",
    "checkpoint_reason",
    "timestamp",
    "bytes",
];

#[test]
fn list_shows_a_table_newest_first() {
    let sb = Sandbox::new();
    sb.demo(&["--executions", "2", "--steps", "2", "--crash-at", "0"]);
    let items = sb.list(&[]);
    assert_eq!(items.len(), 6);
    let out = sb.caf(&["list"]).ok();
    let text = out.out();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["ID", "EXECUTION", "STEP", "REASON", "TIME", "SIZE", "NAME"]
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), items.len(), "{text}");
    for (row, item) in rows.iter().zip(&items) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[0], item["id"].as_str().unwrap(), "{text}");
        assert_eq!(cells[1], item["execution_id"].as_str().unwrap(), "{text}");
        assert_eq!(cells[2], item["step_number"].to_string(), "{text}");
        assert_eq!(cells[3], item["checkpoint_reason"].as_str().unwrap());
    }
    assert!(rows[0].ends_with("final"), "{text}");
    // Newest first.
    let times: Vec<&str> = items
        .iter()
        .map(|i| i["timestamp"].as_str().unwrap())
        .collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted);
}

#[test]
fn list_json_has_the_summary_fields() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "3"]);
    let items = sb.list(&[]);
    assert_eq!(items.len(), 4);
    for item in &items {
        for f in LIST_FIELDS {
            assert!(item.get(f).is_some(), "{f} missing from {item}");
        }
        let id = item["id"].as_str().unwrap();
        let size = std::fs::metadata(sb.path_of(id)).unwrap().len();
        assert_eq!(item["bytes"].as_u64(), Some(size), "{item}");
        assert_eq!(item["agent_id"], "research-agent");
        assert!(item["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    // Each checkpoint's parent is the one before it.
    for w in items.windows(2) {
        assert_eq!(w[0]["parent_id"], w[1]["id"]);
    }
    assert!(items[3]["parent_id"].is_null());
}

#[test]
fn list_filters_and_pages() {
    let sb = Sandbox::new();
    let report = sb.demo(&["--executions", "3", "--steps", "3", "--crash-at", "0"]);
    let all = sb.list(&[]);
    assert_eq!(all.len(), 12);
    let exec = report["executions"][1]["execution_id"].as_str().unwrap();

    let one = sb.list(&["--execution", exec]);
    assert_eq!(one.len(), 4);
    assert!(one.iter().all(|c| c["execution_id"] == exec));
    assert_eq!(ids(&sb.list(&["-e", exec])), ids(&one));

    let first = sb.list(&["--limit", "5"]);
    assert_eq!(ids(&first), ids(&all[..5]));
    assert_eq!(ids(&sb.list(&["-n", "5"])), ids(&first));
    assert!(sb.list(&["--limit", "0"]).is_empty());

    // Paging with --before reproduces the whole list.
    let mut paged = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = vec!["--limit", "5"];
        if let Some(b) = &before {
            args.extend(["--before", b.as_str()]);
        }
        let page = sb.list(&args);
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 5);
        before = Some(page.last().unwrap()["id"].as_str().unwrap().to_string());
        paged.extend(page);
    }
    assert_eq!(ids(&paged), ids(&all));
    let last = all.last().unwrap()["id"].as_str().unwrap();
    assert!(sb.list(&["--before", last]).is_empty());

    let completed = sb.list(&["--reason", "completed"]);
    assert_eq!(completed.len(), 3);
    assert!(completed.iter().all(|c| c["name"] == "final"));
    assert_eq!(sb.list(&["--reason", "step_completed"]).len(), 9);
    assert_eq!(ids(&sb.list(&["--label", "demo"])), ids(&completed));
    assert!(sb.list(&["--label", "nope"]).is_empty());
    assert_eq!(sb.list(&["--agent", "research-agent"]).len(), 12);
    assert!(sb.list(&["--agent", "someone-else"]).is_empty());
    let combined = sb.list(&["--execution", exec, "--reason", "completed"]);
    assert_eq!(combined.len(), 1);
    assert_eq!(combined[0]["execution_id"], exec);

    // An empty result is not an error, and it says that the filter matched nothing (not that
    // the store is empty).
    let out = sb.caf(&["list", "--agent", "someone-else"]).ok();
    assert_eq!(
        out.out().trim_end(),
        format!(
            "no checkpoint matches --agent someone-else ({} holds 12 checkpoints)",
            sb.store_str()
        ),
        "{}",
        out.describe()
    );
    let out = sb.caf(&["list", "--reason", "error", "-n", "3"]).ok();
    assert!(
        out.out()
            .contains("no checkpoint matches --reason error --limit 3"),
        "{}",
        out.describe()
    );
}

/// On a terminal (or with `COLUMNS`), the table fits the width: the time loses its age, then
/// execution ids become their shortest unique prefix, the size and the date go, then the
/// execution column; checkpoint ids stay whole (other commands take them). Into a pipe, the
/// whole table.
#[test]
fn list_fits_the_terminal_width() {
    let sb = Sandbox::new();
    sb.demo(&["--executions", "2", "--steps", "2", "--crash-at", "0"]);
    let items = sb.list(&[]);
    let list = |columns: &str| {
        sb.caf_plain(&["--dir", &sb.store_str(), "list"], &[("COLUMNS", columns)])
            .ok()
            .out()
    };
    let full = sb.caf(&["list"]).ok().out();
    let widest = full.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest > 150, "{full}");
    assert_eq!(list("400"), full);
    for columns in [120, 100, 80] {
        let text = list(&columns.to_string());
        for line in text.lines() {
            assert!(
                line.chars().count() <= columns,
                "{columns}: {line:?}\n{text}"
            );
        }
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(rows.len(), items.len(), "{text}");
        for (row, item) in rows.iter().zip(&items) {
            assert_eq!(row.split_whitespace().next(), item["id"].as_str(), "{text}");
        }
    }
    let text = list("120");
    let exec = items[0]["execution_id"].as_str().unwrap();
    assert!(!text.contains(exec), "{text}");
    assert!(text.contains(&format!("{}…", &exec[..13])), "{text}");
    assert!(text.contains("SIZE"), "{text}");
    let text = list("80");
    assert!(!text.contains("EXECUTION"), "{text}");
    assert!(text.contains("ago"), "{text}");
}

#[test]
fn list_of_a_missing_directory_fails_with_one_line() {
    let sb = Sandbox::new();
    for args in [&["list"][..], &["--json", "list"]] {
        let out = sb.caf(args).fails(1);
        assert_eq!(out.err().lines().count(), 1, "{}", out.describe());
        assert!(out.err().contains(&sb.store_str()), "{}", out.describe());
        assert!(
            out.err().contains("no checkpoint directory"),
            "{}",
            out.describe()
        );
        assert!(out.stdout.is_empty(), "{}", out.describe());
    }
    assert!(!sb.store().exists(), "list created the directory");
}

/// A malformed id (or reason) is bad usage, exit 2: the command line alone is wrong. An id
/// that is well formed but names nothing fails the operation, exit 1.
#[test]
fn list_refuses_bad_ids() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let out = sb.caf(&["list", "--execution", "../x"]).fails(2);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(out.err().contains("../x"), "{}", out.describe());
    assert!(out.err().contains("execution id"), "{}", out.describe());
    sb.caf(&["list", "--before", "../x"]).fails(2);
    sb.caf(&["list", "--execution", ""]).fails(2);
    let out = sb.caf(&["list", "--reason", "Not Snake"]).fails(2);
    assert!(out.err().contains("--reason"), "{}", out.describe());
    // A cursor that names no checkpoint is an error, not an empty page.
    let out = sb.caf(&["list", "--before", "ckpt_nope"]).fails(1);
    assert!(out.err().contains("ckpt_nope"), "{}", out.describe());
    assert!(out.err().contains("not found"), "{}", out.describe());
}

// ---------------------------------------------------------------------------------------------
// inspect
// ---------------------------------------------------------------------------------------------

#[test]
fn inspect_shows_a_checkpoint_by_id_or_path() {
    let sb = Sandbox::new();
    // Two executions: the first is not pruned by the demo's epilogue (only the last is).
    let report = sb.demo(&["--steps", "6", "--crash-at", "3", "--executions", "2"]);
    let id = report["executions"][0]["final_checkpoint"]
        .as_str()
        .unwrap()
        .to_string();
    let exec = report["executions"][0]["execution_id"].as_str().unwrap();
    let out = sb.caf(&["inspect", &id]).ok();
    let text = out.out();
    assert!(text.starts_with(&format!("Checkpoint {id}\n")), "{text}");
    for needle in [
        "Created",
        " UTC (",
        "Execution",
        exec,
        "Agent",
        "research-agent",
        "Reason",
        "completed",
        "Name",
        "final",
        "Labels",
        "demo",
        "Parent",
        "Progress",
        "step 6/6 (100%), nothing remains",
        "Cost",
        "tokens",
        "Counts",
        "thoughts, 6 tool calls (0 failed), 4 variables",
        "Format",
        caf_core::CURRENT_VERSION,
        "integrity ok",
        "Last thoughts (5 of",
        "Last tool calls (5 of 6)",
        "Variables",
        "task = \"Compare three open-source vector databases",
        "step = 6",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    assert!(!text.contains("migrated"), "{text}");
    // --last
    let out = sb.caf(&["inspect", &id, "--last", "2"]).ok();
    assert!(
        out.out().contains("Last tool calls (2 of 6)"),
        "{}",
        out.describe()
    );
    // The same checkpoint by the path of its file (relative or absolute).
    let by_path = sb.caf(&["inspect", s(&sb.path_of(&id))]).ok();
    assert_eq!(by_path.out(), text);
    let rel = format!("store/{id}.json");
    let by_rel = sb.caf(&["inspect", &rel]).ok();
    assert_eq!(by_rel.out(), text);
    // A checkpoint in the middle of the run.
    let items = sb.list(&[]);
    let first = items.last().unwrap()["id"].as_str().unwrap();
    let out = sb.caf(&["inspect", first]).ok();
    assert!(
        out.out().contains("step 1/6 (16%), 5 remaining"),
        "{}",
        out.describe()
    );
    assert!(
        out.out().contains("none (first checkpoint)"),
        "{}",
        out.describe()
    );
}

#[test]
fn inspect_json_is_the_file_and_validates() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "3"]);
    for item in sb.list(&[]) {
        let id = item["id"].as_str().unwrap();
        let out = sb.caf(&["--json", "inspect", id]).ok();
        assert!(out.stdout == std::fs::read(sb.path_of(id)).unwrap(), "{id}");
        let copy = sb.path().join("copy.json");
        std::fs::write(&copy, &out.stdout).unwrap();
        sb.caf(&["validate", s(&copy)]).ok();
        assert_eq!(out.json()["id"], id);
    }
}

#[test]
fn inspect_migrates_a_legacy_file_in_memory() {
    let sb = Sandbox::new();
    let legacy = fixtures().join("v0.0.1/ts-caf.json");
    let before = std::fs::read(&legacy).unwrap();
    let out = sb.caf(&["inspect", s(&legacy)]).ok();
    let text = out.out();
    for needle in [
        "Checkpoint m6sewr9c_4fz8q1lma",
        "repo-auditor",
        "read as 0.0.1, migrated in memory",
        "Last tool calls",
        "failed",
        "Variables",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    // --json prints the migrated document, of the current version, which validates.
    let out = sb.caf(&["--json", "inspect", s(&legacy)]).ok();
    let doc = out.json();
    assert_eq!(doc["version"], caf_core::CURRENT_VERSION);
    let migrated = sb.path().join("migrated.json");
    std::fs::write(&migrated, &out.stdout).unwrap();
    let v = sb.caf(&["validate", s(&migrated)]).ok();
    assert!(
        v.out().contains(caf_core::CURRENT_VERSION),
        "{}",
        v.describe()
    );
    // The expected migration is the committed golden file (as it loads today).
    let limits = caf_core::Limits::default();
    let golden = std::fs::read(fixtures().join("v1.0.0/from-ts-caf.json")).unwrap();
    assert_eq!(
        caf_core::format::decode(&out.stdout, &limits)
            .unwrap()
            .checkpoint,
        caf_core::format::decode(&golden, &limits)
            .unwrap()
            .checkpoint,
        "inspect --json of ts-caf.json differs from from-ts-caf.json"
    );
    // Nothing was written anywhere.
    assert_eq!(std::fs::read(&legacy).unwrap(), before);
    assert!(!sb.store().exists());
}

#[test]
fn inspect_unknown_or_bad_targets_fail() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let out = sb.caf(&["inspect", "ckpt_does_not_exist"]).fails(1);
    assert!(out.err().contains("not found"), "{}", out.describe());
    assert!(
        out.err().contains("ckpt_does_not_exist"),
        "{}",
        out.describe()
    );
    assert!(out.stdout.is_empty());
    let out = sb
        .caf(&["--json", "inspect", "ckpt_does_not_exist"])
        .fails(1);
    assert!(out.stdout.is_empty());
    // A path that does not exist.
    let out = sb.caf(&["inspect", "nowhere/ckpt_x.json"]).fails(1);
    assert!(
        out.err().contains("nowhere/ckpt_x.json"),
        "{}",
        out.describe()
    );
    // An id with characters ids may not have.
    let out = sb.caf(&["inspect", "ckpt_a\\b"]).fails(2);
    assert!(
        out.err().contains("not a valid checkpoint id"),
        "{}",
        out.describe()
    );
    // A directory is not a checkpoint file.
    let out = sb
        .caf(&["inspect", &format!("{}/", sb.store_str())])
        .fails(1);
    assert!(
        out.err().contains("not a regular file"),
        "{}",
        out.describe()
    );
    // No store at all.
    let empty = Sandbox::new();
    let out = empty.caf(&["inspect", "ckpt_x"]).fails(1);
    assert!(
        out.err().contains("no checkpoint directory"),
        "{}",
        out.describe()
    );
}

// ---------------------------------------------------------------------------------------------
// validate
// ---------------------------------------------------------------------------------------------

#[test]
fn validate_accepts_valid_files_and_directories() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let out = sb.caf(&["validate", &sb.store_str()]).ok();
    let text = out.out();
    assert!(text.contains("3 valid, 0 invalid"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("ok  ")).count(), 3);
    assert!(out.stderr.is_empty(), "{}", out.describe());
    // The golden files of both versions, directories and single files together.
    let v1 = fixtures().join("v1.0.0");
    let v0 = fixtures().join("v0.0.1");
    let single = sb.path_of(sb.list(&[])[0]["id"].as_str().unwrap());
    let out = sb.caf(&["validate", s(&v1), s(&v0), s(&single)]).ok();
    let n = json_files(&v1).len() + json_files(&v0).len() + 1;
    assert!(
        out.out().contains(&format!("{n} valid, 0 invalid")),
        "{}",
        out.describe()
    );
    assert!(out.out().contains("0.0.1"), "{}", out.describe());
    // Hidden entries (the store's .caf/ index) are skipped; subdirectories are searched.
    let nested = sb.path().join("nested/deeper");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(v1.join("minimal.json"), nested.join("m.json")).unwrap();
    std::fs::write(nested.join("notes.txt"), "not a checkpoint").unwrap();
    let out = sb.caf(&["validate", s(&sb.path().join("nested"))]).ok();
    assert!(
        out.out().contains("1 valid, 0 invalid"),
        "{}",
        out.describe()
    );
}

#[test]
fn validate_reports_each_problem_with_file_and_pointer() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let hostile = fixtures().join("hostile");
    let wrong = hostile.join("wrong-types.json");
    let empty = hostile.join("empty.json");
    let corrupted = hostile.join("checksum-mismatch-one-char-changed.json");
    let out = sb
        .caf(&[
            "validate",
            &sb.store_str(),
            s(&wrong),
            s(&empty),
            s(&corrupted),
        ])
        .fails(1);
    assert!(
        out.out().contains("3 valid, 3 invalid"),
        "{}",
        out.describe()
    );
    let errors = out.errors();
    // Every error line names a file; each bad file has at least one line.
    for l in &errors {
        assert!(
            [&wrong, &empty, &corrupted]
                .iter()
                .any(|f| l.contains(s(f))),
            "{l}"
        );
    }
    let of = |f: &Path| -> Vec<&String> { errors.iter().filter(|l| l.contains(s(f))).collect() };
    let wrong_lines = of(&wrong);
    assert!(wrong_lines.len() >= 2, "{errors:#?}");
    assert!(
        wrong_lines
            .iter()
            .any(|l| l.contains("at /metadata/step_number")),
        "{errors:#?}"
    );
    assert!(
        wrong_lines
            .iter()
            .any(|l| l.contains("at /snapshot/thought_chain")),
        "{errors:#?}"
    );
    assert!(of(&empty).iter().any(|l| l.contains("line 1 column 0")));
    assert!(of(&corrupted).iter().any(|l| l.contains("at /integrity")));
    // A path that does not exist.
    let out = sb.caf(&["validate", "no-such-file.json"]).fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.err().contains("no-such-file.json"),
        "{}",
        out.describe()
    );
}

/// As on a terminal (stdout and stderr interleaved): every file on one line of its own, in
/// order, valid or not; an invalid file's errors right after its line; the summary last.
#[test]
fn validate_lists_every_file_once_and_the_summary_last() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "1"]);
    let hostile = fixtures().join("hostile");
    let wrong = hostile.join("wrong-types.json");
    let empty = hostile.join("empty.json");
    let minimal = fixtures().join("v1.0.0/minimal.json");
    let (code, text) = sb.caf_interleaved(&["validate", s(&wrong), s(&minimal), s(&empty)]);
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"1 valid, 2 invalid"), "{text}");
    let listed: Vec<&str> = lines
        .iter()
        .filter(|l| !l.starts_with("error: "))
        .copied()
        .collect();
    assert_eq!(
        listed,
        [
            format!("invalid  {}", s(&wrong)),
            format!("ok       {}  1.0.0", s(&minimal)),
            format!("invalid  {}", s(&empty)),
            "1 valid, 2 invalid".to_string(),
        ],
        "{text}"
    );
    // Each invalid file's errors follow its line.
    let at = |needle: &str| lines.iter().position(|l| *l == needle).unwrap();
    let wrong_at = at(&format!("invalid  {}", s(&wrong)));
    assert!(
        lines[wrong_at + 1].starts_with(&format!("error: {}: at /", s(&wrong))),
        "{text}"
    );
    let empty_at = at(&format!("invalid  {}", s(&empty)));
    assert!(
        lines[empty_at + 1].starts_with(&format!("error: {}: ", s(&empty))),
        "{text}"
    );
    assert_eq!(empty_at + 2, lines.len() - 1, "{text}");
}

/// Parser and schema messages in words a user understands, keeping the line and column or the
/// JSON Pointer; one line per problem, even when the schema finds two things wrong in one place.
#[test]
fn error_messages_say_what_is_wrong_in_words() {
    let sb = Sandbox::new();
    let hostile = fixtures().join("hostile");
    let cases = [
        (
            "empty.json",
            "line 1 column 0 (near /): the file is empty",
            "EOF while",
        ),
        (
            "utf8-bom-prefixed.json",
            "byte order mark (BOM), which JSON does not allow",
            "expected value",
        ),
        (
            "id-path-traversal.json",
            r#"at /id: "../../etc/passwd" is not a valid id (1 to 128 of A-Z a-z 0-9 _ - . : @, not starting with a dot), and must not contain "..""#,
            "is not allowed",
        ),
        (
            "counter-as-float-1.0.json",
            "at /metadata/tokens_used: 1.0 is not a whole number from 0 to 18446744073709551615",
            "expected u64",
        ),
        (
            "unknown-top-level-field.json",
            r#"at /: unknown field "x_custom""#,
            "Additional properties",
        ),
    ];
    for (file, says, not) in cases {
        let path = hostile.join(file);
        let out = sb.caf_plain(&["validate", s(&path)], &[]).fails(1);
        let errors = out.errors();
        assert_eq!(errors.len(), 1, "{}", out.describe());
        assert!(errors[0].contains(s(&path)), "{}", out.describe());
        assert!(errors[0].contains(says), "{file}: {}", out.describe());
        assert!(!errors[0].contains(not), "{file}: {}", out.describe());
    }
    // Analytics on a directory that does not exist: no suggestion of `caf sync`, which would
    // fail there too.
    let out = sb
        .caf_plain(&["--dir", "/nonexistent", "stats"], &[])
        .fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.err().contains("no checkpoint directory"),
        "{}",
        out.describe()
    );
    assert!(!out.err().contains("caf sync"), "{}", out.describe());
}

#[test]
fn validate_json_report() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let minimal = fixtures().join("v1.0.0/minimal.json");
    let legacy = fixtures().join("v0.0.1/seed-example.json");
    let out = sb
        .caf(&[
            "--json",
            "validate",
            s(&minimal),
            s(&legacy),
            &sb.store_str(),
        ])
        .ok();
    let report = out.json();
    let entries = report.as_array().unwrap();
    assert_eq!(entries.len(), 5, "{report}");
    assert!(entries.iter().all(|e| e["valid"] == true));
    assert_eq!(entries[0]["path"], s(&minimal));
    assert_eq!(entries[0]["id"], "ckpt_golden_minimal");
    assert_eq!(entries[0]["version"], "1.0.0");
    assert_eq!(entries[1]["version"], "0.0.1");

    let bad = fixtures().join("hostile/negative-counters.json");
    let out = sb
        .caf(&["--json", "validate", s(&minimal), s(&bad)])
        .fails(1);
    let report = out.json();
    let entries = report.as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["valid"], true);
    assert_eq!(entries[1]["valid"], false);
    assert_eq!(entries[1]["path"], s(&bad));
    let errors = entries[1]["errors"].as_array().unwrap();
    assert!(!errors.is_empty());
    assert!(errors
        .iter()
        .any(|e| e.as_str().unwrap().contains("at /metadata/duration_ms")));
    // The same lines are on stderr.
    for e in errors {
        assert!(
            out.err().contains(e.as_str().unwrap()),
            "{}",
            out.describe()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// import
// ---------------------------------------------------------------------------------------------

#[test]
fn import_current_and_legacy_files() {
    let sb = Sandbox::new();
    let legacy = fixtures().join("v0.0.1/ts-caf.json");
    let minimal = fixtures().join("v1.0.0/minimal.json");
    let out = sb.caf(&["import", s(&legacy), s(&minimal)]).ok();
    let text = out.out();
    assert!(text.contains("imported m6sewr9c_4fz8q1lma"), "{text}");
    assert!(text.contains("migrated from 0.0.1"), "{text}");
    assert!(text.contains("imported ckpt_golden_minimal"), "{text}");
    assert!(text.contains("2 checkpoints imported"), "{text}");
    let out = sb.caf(&["validate", &sb.store_str()]).ok();
    assert!(
        out.out().contains("2 valid, 0 invalid"),
        "{}",
        out.describe()
    );
    // Stored in the current format: the migrated file holds the golden migration.
    let limits = caf_core::Limits::default();
    let stored = caf_core::format::decode(
        &std::fs::read(sb.path_of("m6sewr9c_4fz8q1lma")).unwrap(),
        &limits,
    )
    .unwrap();
    let golden = caf_core::format::decode(
        &std::fs::read(fixtures().join("v1.0.0/from-ts-caf.json")).unwrap(),
        &limits,
    )
    .unwrap();
    assert_eq!(stored.source_version, caf_core::CURRENT_VERSION);
    assert_eq!(
        stored.checkpoint, golden.checkpoint,
        "the imported 0.0.1 file is not its golden migration"
    );
    // A 1.0.0 file is stored in the current format, holding the same checkpoint.
    let minimal_bytes = std::fs::read(&minimal).unwrap();
    let stored_minimal = std::fs::read(sb.path_of("ckpt_golden_minimal")).unwrap();
    assert_eq!(
        caf_core::format::decode(&stored_minimal, &limits)
            .unwrap()
            .checkpoint,
        caf_core::format::decode(&minimal_bytes, &limits)
            .unwrap()
            .checkpoint
    );
    assert_eq!(sb.list(&[]).len(), 2);
    // A directory imports every file in it; --json prints the summaries.
    let sb = Sandbox::new();
    let out = sb
        .caf(&["--json", "import", s(&fixtures().join("v0.0.1"))])
        .ok();
    let summaries = out.json();
    let n = json_files(&fixtures().join("v0.0.1")).len();
    assert_eq!(summaries.as_array().unwrap().len(), n, "{summaries}");
    for f in LIST_FIELDS {
        assert!(summaries[0].get(f).is_some(), "{f} missing: {summaries}");
    }
    assert_eq!(sb.list(&[]).len(), n);
    sb.caf(&["validate", &sb.store_str()]).ok();
}

#[test]
fn import_is_all_or_nothing() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let before = files(&sb.store());
    let good = fixtures().join("v1.0.0/minimal.json");
    let legacy = fixtures().join("v0.0.1/ts-caf.json");
    let bad = fixtures().join("hostile/checksum-missing.json");
    let out = sb.caf(&["import", s(&good), s(&bad), s(&legacy)]).fails(1);
    assert!(out.err().contains(s(&bad)), "{}", out.describe());
    assert!(out.err().contains("nothing imported"), "{}", out.describe());
    assert!(!out.err().contains(s(&good)), "{}", out.describe());
    assert_eq!(
        files(&sb.store()),
        before,
        "a failed import changed the store"
    );
    assert_eq!(sb.list(&[]).len(), 3);
    // Into a directory that does not exist yet: it is not created.
    let fresh = Sandbox::new();
    fresh.caf(&["import", s(&good), s(&bad)]).fails(1);
    assert!(!fresh.store().exists());
    // A file that does not exist.
    let out = sb.caf(&["import", s(&good), "missing.json"]).fails(1);
    assert!(out.err().contains("missing.json"), "{}", out.describe());
    assert_eq!(files(&sb.store()), before);
}

#[test]
fn importing_the_same_file_twice_is_fine() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let full = fixtures().join("v1.0.0/full.json");
    sb.caf(&["import", s(&full)]).ok();
    let once = files(&sb.store());
    sb.caf(&["import", s(&full)]).ok();
    sb.caf(&["import", s(&full), s(&full)]).ok();
    assert_eq!(files(&sb.store()), once);
    assert_eq!(sb.list(&[]).len(), 4);
    // Re-importing the store's own files changes nothing either.
    let copy = Sandbox::new();
    copy.caf(&["import", &sb.store_str()]).ok();
    sb.caf(&["import", &copy.store_str()]).ok();
    assert_eq!(files(&sb.store()), once);
    assert_eq!(json_files(&copy.store()), json_files(&sb.store()));
}

#[test]
fn importing_another_checkpoint_with_an_existing_id_is_refused() {
    let sb = Sandbox::new();
    let minimal = fixtures().join("v1.0.0/minimal.json");
    sb.caf(&["import", s(&minimal)]).ok();
    let before = files(&sb.store());
    // Same id, other content, a valid checksum.
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&minimal).unwrap()).unwrap();
    doc["agent_id"] = "impostor-agent".into();
    doc["integrity"] = caf_core::format::integrity_of(&doc).into();
    let impostor = sb.path().join("impostor.json");
    std::fs::write(&impostor, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    sb.caf(&["validate", s(&impostor)]).ok();
    let full = fixtures().join("v1.0.0/full.json");
    let out = sb.caf(&["import", s(&full), s(&impostor)]).fails(1);
    assert!(out.err().contains(s(&impostor)), "{}", out.describe());
    assert!(
        out.err().contains("ckpt_golden_minimal"),
        "{}",
        out.describe()
    );
    assert!(out.err().contains("already"), "{}", out.describe());
    assert!(out.err().contains("nothing imported"), "{}", out.describe());
    // Neither file was imported.
    assert_eq!(files(&sb.store()), before);
    // After deleting the original, it imports.
    sb.caf(&["delete", "ckpt_golden_minimal"]).ok();
    sb.caf(&["import", s(&impostor)]).ok();
    let out = sb.caf(&["inspect", "ckpt_golden_minimal"]).ok();
    assert!(out.out().contains("impostor-agent"), "{}", out.describe());
}

// ---------------------------------------------------------------------------------------------
// export
// ---------------------------------------------------------------------------------------------

#[test]
fn export_writes_the_stored_bytes() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "3"]);
    sb.caf(&["import", s(&fixtures().join("v0.0.1/seed-example.json"))])
        .ok();
    for item in sb.list(&[]) {
        let id = item["id"].as_str().unwrap();
        let stored = std::fs::read(sb.path_of(id)).unwrap();
        let target = sb.path().join("out").join(format!("{id}.json"));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let out = sb.caf(&["export", id, "-o", s(&target)]).ok();
        assert!(out.stdout.is_empty(), "{}", out.describe());
        assert!(out.err().contains("exported"), "{}", out.describe());
        assert!(std::fs::read(&target).unwrap() == stored, "{id}");
        // Relative to the working directory, with --output.
        sb.caf(&["export", id, "--output", "relative.json"]).ok();
        assert!(std::fs::read(sb.path().join("relative.json")).unwrap() == stored);
        // To stdout.
        let out = sb.caf(&["export", id]).ok();
        assert!(out.stdout == stored, "{id}");
    }
    // Overwriting an existing file is fine (atomically).
    let id = sb.list(&["--limit", "1"])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let target = sb.path().join("relative.json");
    sb.caf(&["export", &id, "-o", s(&target)]).ok();
    assert!(std::fs::read(&target).unwrap() == std::fs::read(sb.path_of(&id)).unwrap());
    // The exported files import and validate.
    sb.caf(&["validate", s(&sb.path().join("out"))]).ok();
    // With --json, what was written is reported on stdout (and nothing else).
    let out = sb.caf(&["--json", "export", &id, "-o", s(&target)]).ok();
    let report = out.json();
    assert_eq!(report["id"], id.as_str(), "{report}");
    assert_eq!(report["path"], s(&target), "{report}");
    assert_eq!(
        report["bytes"].as_u64(),
        Some(std::fs::metadata(&target).unwrap().len()),
        "{report}"
    );
    assert!(out.err().is_empty(), "{}", out.describe());
}

/// One failure is one error line (the outcome follows it after a semicolon); several get a
/// line each and the outcome on a line of its own. Counts agree with their nouns.
#[test]
fn one_problem_is_one_line_and_counts_agree_with_their_nouns() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "1"]);
    let empty = fixtures().join("hostile/empty.json");
    let bad = fixtures().join("hostile/version-banana.json");
    let out = sb.caf(&["import", s(&empty)]).fails(1);
    let errors = out.errors();
    assert_eq!(errors.len(), 1, "{}", out.describe());
    assert!(
        errors[0].contains(s(&empty))
            && errors[0].ends_with("nothing imported: 1 of 1 file is invalid"),
        "{}",
        out.describe()
    );
    let out = sb.caf(&["import", s(&empty), s(&bad)]).fails(1);
    assert_eq!(out.errors().len(), 3, "{}", out.describe());
    let dir = sb.path().join("m");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&empty, dir.join("e.json")).unwrap();
    let out = sb
        .caf_plain(&["migrate", s(&dir.join("e.json"))], &[])
        .fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.err().contains("the file was left untouched"),
        "{}",
        out.describe()
    );
    // Plurals.
    let minimal = fixtures().join("v1.0.0/minimal.json");
    let out = sb.caf(&["import", s(&minimal)]).ok();
    assert!(
        out.out().contains("1 checkpoint imported into"),
        "{}",
        out.describe()
    );
    let out = sb.caf(&["sql", "SELECT 1"]).ok();
    assert!(out.out().ends_with("1 row\n"), "{}", out.describe());
    let out = sb
        .caf(&["stats", "--execution", "exec_golden_minimal"])
        .ok();
    assert!(
        out.out().contains("\n1 execution, 1 checkpoint, "),
        "{}",
        out.describe()
    );
    let out = sb.caf(&["query", "tool-calls", "--tool", "search"]).ok();
    assert!(out.out().ends_with("1 tool call\n"), "{}", out.describe());
    let out = sb
        .caf(&["delete", "--execution", "exec_golden_minimal"])
        .ok();
    assert!(
        out.out().contains("deleted 1 checkpoint of execution"),
        "{}",
        out.describe()
    );
}

#[test]
fn export_of_an_unknown_checkpoint_fails() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let target = sb.path().join("x.json");
    let out = sb.caf(&["export", "ckpt_nope", "-o", s(&target)]).fails(1);
    assert!(out.err().contains("ckpt_nope"), "{}", out.describe());
    assert!(out.err().contains("not found"), "{}", out.describe());
    assert!(!target.exists());
    let out = sb.caf(&["export", "ckpt_nope"]).fails(1);
    assert!(out.stdout.is_empty());
    sb.caf(&["export", "../../etc/passwd"]).fails(2);
    // Into a directory that does not exist.
    let id = sb.list(&[])[0]["id"].as_str().unwrap().to_string();
    sb.caf(&[
        "export",
        &id,
        "-o",
        s(&sb.path().join("no/such/dir/x.json")),
    ])
    .fails(1);
    // From a store that does not exist.
    Sandbox::new().caf(&["export", &id]).fails(1);
}

// ---------------------------------------------------------------------------------------------
// delete
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_checkpoints() {
    let sb = Sandbox::new();
    let report = sb.demo(&["--executions", "2", "--steps", "3", "--crash-at", "0"]);
    let all = ids(&sb.list(&[]));
    assert_eq!(all.len(), 8);

    let out = sb.caf(&["delete", &all[0]]).ok();
    assert!(
        out.out().contains(&format!("deleted {}", all[0])),
        "{}",
        out.describe()
    );
    assert!(!sb.path_of(&all[0]).exists());
    assert_eq!(ids(&sb.list(&[])), all[1..]);

    // One unknown id: nothing is deleted.
    let before = files(&sb.store());
    let out = sb.caf(&["delete", &all[1], "ckpt_nope"]).fails(1);
    assert!(out.err().contains("ckpt_nope"), "{}", out.describe());
    assert!(out.err().contains("not found"), "{}", out.describe());
    assert!(out.err().contains("nothing deleted"), "{}", out.describe());
    assert!(!out
        .err()
        .contains(&format!("checkpoint {} not found", all[1])));
    // One problem, one line.
    assert_eq!(out.err().lines().count(), 1, "{}", out.describe());
    assert_eq!(files(&sb.store()), before);
    // An invalid id: nothing is deleted.
    sb.caf(&["delete", &all[1], "../x"]).fails(2);
    assert_eq!(files(&sb.store()), before);
    // Two known ids.
    let out = sb.caf(&["--json", "delete", &all[1], &all[2]]).ok();
    assert_eq!(out.json()["deleted"], serde_json::json!([all[1], all[2]]));
    assert_eq!(ids(&sb.list(&[])), all[3..]);

    // A whole execution.
    let exec = report["executions"][0]["execution_id"].as_str().unwrap();
    let other = report["executions"][1]["execution_id"].as_str().unwrap();
    let n = sb.list(&["--execution", exec]).len();
    let m = sb.list(&["--execution", other]).len();
    assert!(n > 0 && m > 0);
    let out = sb.caf(&["delete", "--execution", exec]).ok();
    assert!(
        out.out()
            .contains(&format!("deleted {n} checkpoints of execution {exec}")),
        "{}",
        out.describe()
    );
    assert!(sb.list(&["--execution", exec]).is_empty());
    assert_eq!(sb.list(&[]).len(), m);
    assert_eq!(json_files(&sb.store()).len(), m);
    // Again: nothing to delete.
    let out = sb.caf(&["delete", "--execution", exec]).fails(1);
    assert!(out.err().contains(exec), "{}", out.describe());
    let out = sb.caf(&["--json", "delete", "-e", other]).ok();
    assert_eq!(out.json()["deleted"], m);
    assert!(sb.list(&[]).is_empty());
    sb.caf(&["delete", "--execution", "../x"]).fails(2);
    // No arguments: bad usage.
    sb.caf(&["delete"]).fails(2);
    // No store.
    Sandbox::new().caf(&["delete", "ckpt_x"]).fails(1);
}

// ---------------------------------------------------------------------------------------------
// schema
// ---------------------------------------------------------------------------------------------

#[test]
fn schema_prints_the_json_schema_of_a_version() {
    let sb = Sandbox::new();
    let out = sb.caf(&["schema"]).ok();
    let doc = out.json();
    assert!(
        doc["$id"]
            .as_str()
            .unwrap()
            .contains(&format!("checkpoint-{}", caf_core::CURRENT_VERSION)),
        "{}",
        doc["$id"]
    );
    let committed = std::fs::read(workspace().join(format!(
        "schemas/checkpoint-{}.schema.json",
        caf_core::CURRENT_VERSION
    )))
    .unwrap();
    let committed: Value = serde_json::from_slice(&committed).unwrap();
    assert_eq!(doc, committed);
    // It is a usable schema: a checkpoint validates against it, a broken one does not.
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&doc)
        .unwrap();
    let full: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("v1.1.0/full.json")).unwrap())
            .unwrap();
    assert!(validator.is_valid(&full));
    let mut broken = full.clone();
    broken["metadata"]["step_number"] = "seven".into();
    assert!(!validator.is_valid(&broken));
    let out = sb.caf(&["schema", caf_core::CURRENT_VERSION]).ok();
    assert_eq!(out.json(), doc);
    let out = sb.caf(&["schema", "1.0.0"]).ok();
    assert!(out.json()["$id"]
        .as_str()
        .unwrap()
        .contains("checkpoint-1.0.0"));

    let out = sb.caf(&["schema", "0.0.1"]).ok();
    let old = out.json();
    assert!(
        old["$id"].as_str().unwrap().contains("checkpoint-0.0.1"),
        "{}",
        old["$id"]
    );

    // An unknown version is bad usage (exit 2), as `migrate --to` is.
    let out = sb.caf(&["schema", "9.9.9"]).fails(2);
    assert!(out.err().contains("9.9.9"), "{}", out.describe());
    assert!(
        out.err().contains(caf_core::CURRENT_VERSION),
        "{}",
        out.describe()
    );
    assert!(out.stdout.is_empty());
    sb.caf(&["schema", "banana"]).fails(2);
    // `--version` no longer names a format version (it collided with the version flag).
    let out = sb.caf(&["schema", "--version", "1.0.0"]).fails(2);
    assert!(out.stdout.is_empty(), "{}", out.describe());
}

// ---------------------------------------------------------------------------------------------
// bench
// ---------------------------------------------------------------------------------------------

#[test]
fn bench_prints_figures_and_cleans_up() {
    let sb = Sandbox::new();
    let out = sb.bench_json(&["--executions", "2", "--steps", "5"]);
    // One object per mode (one mode here), as an array.
    let report = out.json();
    let figures = match &report {
        Value::Array(modes) => {
            assert_eq!(modes.len(), 1, "{report}");
            &modes[0]
        }
        other => other,
    };
    assert_eq!(figures["mode"], "files", "{report}");
    assert_eq!(figures["executions"], 2, "{report}");
    assert_eq!(figures["steps"], 5, "{report}");
    for key in [
        "save_us",
        "restore_us",
        "list_us",
        "disk_bytes",
        "floor_us",
        "append_floor_us",
        "page_floor_us",
    ] {
        let v = figures[key].as_f64();
        assert!(v.is_some_and(|v| v > 0.0), "{key}: {report}");
    }
    // The rows floor is the SQL modes' (it sets their SQL part beside its least cost).
    assert!(figures.get("rows_floor_us").is_none(), "{report}");
    // Figures are rounded to the nanosecond: no `3547.6079999999997`.
    for (key, v) in figures.as_object().unwrap() {
        if let Some(f) = v.as_f64() {
            assert_eq!((f * 1000.0).round() / 1000.0, f, "{key}: {report}");
        }
    }
    // A debug build says that its figures are not representative (the binary under test is
    // built in the profile of this test, unless CAF_TEST_BIN names another).
    if std::env::var_os("CAF_TEST_BIN").is_none() {
        assert_eq!(
            out.err().contains("warning: this caf is a debug build"),
            cfg!(debug_assertions),
            "{}",
            out.describe()
        );
    }
    assert_eq!(
        std::fs::read_dir(sb.scratch()).unwrap().count(),
        0,
        "bench left files in its scratch directory"
    );
    assert!(!sb.store().exists(), "bench wrote into --dir");
    // The table, with the default scratch directory (next to --dir, i.e. the sandbox).
    let out = sb.caf(&["bench", "--executions", "1", "--steps", "2"]).ok();
    assert!(out.out().contains("SAVE"), "{}", out.describe());
    // Progress in the command line's words.
    assert!(
        out.err().contains("measuring files: 1 execution x 2 steps"),
        "{}",
        out.describe()
    );
    assert!(out.out().contains("files"), "{}", out.describe());
    assert_eq!(
        std::fs::read_dir(sb.path()).unwrap().count(),
        1,
        "bench left files next to --dir"
    );
    // A scratch directory that does not exist.
    let args = "--json bench --executions 1 --steps 1 --scratch nope";
    let out = sb.caf(&args.split(' ').collect::<Vec<_>>()).fails(1);
    assert!(out.err().contains("nope"), "{}", out.describe());
}

// ---------------------------------------------------------------------------------------------
// The checkpoint directory
// ---------------------------------------------------------------------------------------------

#[test]
fn caf_dir_and_the_default_directory() {
    let sb = Sandbox::new();
    let env_dir = sb.path().join("from-env");
    let env = [("CAF_DIR", s(&env_dir))];
    sb.caf_plain(&["demo", "--steps", "2"], &env).ok();
    assert_eq!(json_files(&env_dir).len(), 3);
    let out = sb.caf_plain(&["--json", "list"], &env).ok();
    assert_eq!(out.json().as_array().unwrap().len(), 3);
    // --dir wins over CAF_DIR.
    let out = sb
        .caf_plain(&["--dir", &sb.store_str(), "list"], &env)
        .fails(1);
    assert!(out.err().contains(&sb.store_str()), "{}", out.describe());
    // Without either: ./checkpoints in the working directory.
    sb.caf_plain(&["demo", "--steps", "1"], &[]).ok();
    assert_eq!(json_files(&sb.path().join("checkpoints")).len(), 2);
    let out = sb.caf_plain(&["--json", "list"], &[]).ok();
    assert_eq!(out.json().as_array().unwrap().len(), 2);
    assert_eq!(json_files(&env_dir).len(), 3);
}

/// An empty `CAF_DIR` (or `CAF_DATABASE_URL`) counts as unset: it is not an empty `--dir`.
#[test]
fn empty_environment_variables_count_as_unset() {
    let sb = Sandbox::new();
    sb.caf_plain(&["demo", "--steps", "1"], &[("CAF_DIR", "")])
        .ok();
    assert_eq!(json_files(&sb.path().join("checkpoints")).len(), 2);
    let out = sb.caf_plain(&["--json", "list"], &[("CAF_DIR", "")]).ok();
    assert_eq!(out.json().as_array().unwrap().len(), 2);
    // The directory's own database is used, as without the variable.
    let out = sb
        .caf_plain(&["--json", "stats"], &[("CAF_DATABASE_URL", "")])
        .ok();
    assert_eq!(out.json()["totals"]["checkpoints"], 2);
    // An explicitly empty --dir is still bad usage.
    sb.caf_plain(&["--dir", "", "list"], &[]).fails(2);
}

/// The global options show, and are accepted after the command name, only where they do
/// something: `validate`, `migrate` and `schema` take no store; `--no-files` means nothing to
/// the database commands and bench.
#[test]
fn commands_list_only_the_global_options_they_use() {
    let sb = Sandbox::new();
    let help = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--help");
        sb.caf_plain(&all, &[]).ok().out()
    };
    for c in ["validate", "migrate", "schema"] {
        let h = help(&[c]);
        for flag in ["--dir", "--db", "--no-files"] {
            assert!(!h.contains(flag), "`caf {c} --help` lists {flag}: {h}");
        }
        assert!(h.contains("--json"), "{h}");
    }
    for c in [
        &["sync"][..],
        &["reindex"],
        &["stats"],
        &["sql"],
        &["bench"],
        &["query"],
        &["query", "tool-calls"],
        &["query", "thoughts"],
    ] {
        let h = help(c);
        assert!(!h.contains("--no-files"), "`caf {c:?} --help`: {h}");
        assert!(
            h.contains("--dir") && h.contains("--db"),
            "`caf {c:?}`: {h}"
        );
    }
    for c in [
        "demo", "list", "inspect", "import", "export", "delete", "diff",
    ] {
        let h = help(&[c]);
        for flag in ["--dir", "--db", "--no-files"] {
            assert!(h.contains(flag), "`caf {c} --help` lacks {flag}: {h}");
        }
    }
    // After the command name, an option it ignores is bad usage that says so.
    let file = fixtures().join("v1.0.0/minimal.json");
    let out = sb
        .caf_plain(&["validate", "--dir", "x", s(&file)], &[])
        .fails(2);
    assert!(
        out.err().contains("--dir has no effect on `caf validate`"),
        "{}",
        out.describe()
    );
    let out = sb.caf_plain(&["stats", "--no-files"], &[]).fails(2);
    assert!(
        out.err().contains("--no-files has no effect"),
        "{}",
        out.describe()
    );
    sb.caf_plain(&["schema", "--db", "sqlite://x.db"], &[])
        .fails(2);
    // Before it, they are the global options (which the command may ignore).
    sb.caf_plain(&["--dir", "x", "validate", s(&file)], &[])
        .ok();
    sb.caf_plain(&["--dir", "x", "schema"], &[]).ok();
    // And where they are used, both places work.
    sb.caf_plain(&["demo", "--dir", &sb.store_str(), "--steps", "1"], &[])
        .ok();
    assert_eq!(sb.list_ids().len(), 2);
    assert!(!sb.path().join("x").exists());
}

#[test]
fn inspect_shows_lineage_both_ways() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "3", "--crash-at", "0"]);
    let items = sb.list(&[]); // newest first
    let newest = items[0]["id"].as_str().unwrap();
    let oldest = items.last().unwrap()["id"].as_str().unwrap();
    let second = items[items.len() - 2]["id"].as_str().unwrap();
    let out = sb.caf(&["inspect", oldest]).ok().out();
    assert!(out.contains("none (first checkpoint)"), "{out}");
    assert!(out.contains(&format!("Children    {second}")), "{out}");
    let out = sb.caf(&["inspect", newest]).ok().out();
    assert!(out.contains("Children    none (latest)"), "{out}");
    // A file outside the store: its children are unknown, so the line is left out.
    let copy = sb.path().join("copy.json");
    std::fs::copy(sb.path_of(oldest), &copy).unwrap();
    let out = sb.caf(&["inspect", s(&copy)]).ok().out();
    assert!(!out.contains("Children"), "{out}");
}

#[test]
fn reading_a_plain_directory_leaves_nothing_in_it() {
    let sb = Sandbox::new();
    let dir = sb.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a store").unwrap();
    let out = sb.caf_plain(&["--dir", s(&dir), "list"], &[]).ok();
    assert!(out.out().contains("no checkpoints"), "{}", out.describe());
    sb.caf_plain(&["--dir", s(&dir), "inspect", "ckpt_nope"], &[])
        .fails(1);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("notes.txt")]);
}

#[test]
fn demo_runs_on_the_real_clock_and_refuses_a_huge_run() {
    let sb = Sandbox::new();
    let report = sb.demo(&["--steps", "2"]);
    let last = report["executions"][0]["final_checkpoint"]
        .as_str()
        .unwrap();
    let c = caf_core::format::decode(
        &std::fs::read(sb.path_of(last)).unwrap(),
        &Default::default(),
    )
    .unwrap()
    .checkpoint;
    let now = caf_core::Clock::now(&caf_core::SystemClock);
    let age_s = (now.as_micros() - c.timestamp.as_micros()) / 1_000_000;
    assert!(
        (0..3600).contains(&age_s),
        "the demo's newest checkpoint is {age_s}s old"
    );
    // A max-age prune right after a demo deletes nothing but what is old on purpose.
    let out = sb
        .caf(&["--json", "prune", "--max-age", "1d", "--dry-run"])
        .ok()
        .json();
    assert!(
        out["plan"]["delete"].as_array().unwrap().is_empty(),
        "{out}"
    );
    // 10000 steps would write tens of GB: refused, with the estimate, nothing written.
    let sb = Sandbox::new();
    let out = sb.caf(&["demo", "--steps", "10000"]).fails(2);
    assert!(out.err().contains("GiB"), "{}", out.describe());
    assert!(out.err().contains("--force"), "{}", out.describe());
    assert!(!sb.store().exists());
}
