//! `caf save`, `fork`, `resume`, `label`, `prune`, `delete --older-than` and the resumable
//! marks of `caf list`, end to end on a fresh directory.

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{json_files, s, Sandbox};
use serde_json::{json, Value};

/// Writes `parts` to a file in the sandbox and saves it with `args`.
fn save(sb: &Sandbox, parts: &Value, args: &[&str]) -> caf_tests::cli::Out {
    let file = sb.path().join("parts.json");
    std::fs::write(&file, serde_json::to_vec(parts).unwrap()).unwrap();
    let mut all = vec!["--json", "save", "-f", s(&file)];
    all.extend_from_slice(args);
    sb.caf(&all)
}

fn parts(step: u64) -> Value {
    json!({
        "agent_id": "py-agent",
        "thought_chain": {"thoughts": [{"id": format!("t{step}"), "type": "reasoning",
            "content": "thinking", "created_at": "2026-11-23T10:00:00Z"}]},
        "context": {"variables": {"step": step}, "state": {}, "history": []},
        "tool_state": {"calls": [], "results": {}},
        "progress": {"step_number": step, "completed_steps": [], "pending_steps": ["next"],
            "task": "answer the question",
            "plan": [{"id": "a", "status": "completed"}, {"id": "next", "status": "pending", "dependencies": ["a"]}],
            "last_error": {"step": "a", "message": "timeout, retried", "at": "2026-11-23T10:00:01Z"}},
        "metadata": {"tokens_used": 10 * step}
    })
}

#[test]
fn save_grows_a_chain_and_refuses_bad_parts_without_writing() {
    let sb = Sandbox::new();
    let first = save(
        &sb,
        &parts(1),
        &["-e", "exec_py", "--name", "first", "--label", "x"],
    )
    .ok()
    .json();
    assert_eq!(first["parent_id"], Value::Null);
    assert_eq!(first["name"], "first");
    let second = save(
        &sb,
        &parts(2),
        &["-e", "exec_py", "--reason", "step_completed"],
    )
    .ok()
    .json();
    assert_eq!(second["parent_id"], first["id"], "the latest is the parent");
    assert_eq!(second["step_number"], 2);
    assert_eq!(second["tokens_used"], 20);
    let files = json_files(&sb.store());
    assert_eq!(files.len(), 2);
    sb.caf(&["validate", &sb.store_str()]).ok();

    // Bad input: one line naming the place, exit 1, nothing written.
    let mut bad = parts(3);
    bad["thought_chain"]["thoughts"][0]
        .as_object_mut()
        .unwrap()
        .remove("content");
    let out = save(&sb, &bad, &["-e", "exec_py"]).fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.err().contains("/thought_chain/thoughts/0"),
        "{}",
        out.describe()
    );
    assert!(out.err().contains("nothing saved"), "{}", out.describe());
    let mut dup = parts(3);
    let t = dup["thought_chain"]["thoughts"][0].clone();
    dup["thought_chain"]["thoughts"]
        .as_array_mut()
        .unwrap()
        .push(t);
    let out = save(&sb, &dup, &["-e", "exec_py"]).fails(1);
    assert!(
        out.err().contains("/thought_chain/thoughts/1/id"),
        "{}",
        out.describe()
    );
    let out = save(&sb, &json!({"bogus": 1}), &["-e", "exec_py"]).fails(1);
    assert!(out.err().contains("bogus"), "{}", out.describe());
    std::fs::write(sb.path().join("parts.json"), b"{not json").unwrap();
    sb.caf(&[
        "save",
        "-e",
        "exec_py",
        "-f",
        s(&sb.path().join("parts.json")),
    ])
    .fails(1);
    save(&sb, &parts(3), &["-e", "exec_py", "--reason", "Not A Word"]).fails(2);
    save(&sb, &json!({}), &["-e", "exec_new"]).fails(1); // no agent anywhere
    save(
        &sb,
        &parts(3),
        &["-e", "exec_py", "--parent", "ckpt_nowhere"],
    )
    .fails(1);
    assert_eq!(json_files(&sb.store()), files, "nothing was written");
}

#[test]
fn fork_starts_a_branch_that_grows_without_touching_the_original() {
    let sb = Sandbox::new();
    let a = save(&sb, &parts(1), &["-e", "exec_main"]).ok().json();
    let b = save(&sb, &parts(2), &["-e", "exec_main"]).ok().json();
    let a_id = a["id"].as_str().unwrap();
    let fork = sb
        .caf(&[
            "--json",
            "fork",
            a_id,
            "--name",
            "try-b",
            "--reason",
            "another path",
        ])
        .ok()
        .json();
    assert_eq!(fork["parent_id"], a["id"]);
    assert_eq!(fork["checkpoint_reason"], "branch");
    assert_eq!(fork["execution_id"], "exec_main");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(sb.path_of(fork["id"].as_str().unwrap())).unwrap())
            .unwrap();
    assert_eq!(doc["metadata"]["branch"]["reason"], "another path");
    assert_eq!(
        doc["snapshot"]["context"],
        serde_json::from_slice::<Value>(&std::fs::read(sb.path_of(a_id)).unwrap()).unwrap()
            ["snapshot"]["context"]
    );
    // Continuing the fork grows the branch; the original line keeps its tip.
    let c = save(
        &sb,
        &parts(2),
        &["-e", "exec_main", "--parent", fork["id"].as_str().unwrap()],
    )
    .ok()
    .json();
    assert_eq!(c["parent_id"], fork["id"]);
    let b_doc = std::fs::read(sb.path_of(b["id"].as_str().unwrap())).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&b_doc).unwrap()["parent_id"],
        a["id"]
    );
    // Into a new execution.
    let other = sb
        .caf(&["--json", "fork", a_id, "-e", "exec_other"])
        .ok()
        .json();
    assert_eq!(other["execution_id"], "exec_other");
    sb.caf(&["fork", "ckpt_missing"]).fails(1);
}

#[test]
fn resume_shows_the_restored_state_and_list_marks_resumable_runs() {
    let sb = Sandbox::new();
    save(&sb, &parts(1), &["-e", "exec_py"]).ok();
    let last = save(&sb, &parts(2), &["-e", "exec_py", "--reason", "error"])
        .ok()
        .json();
    save(
        &sb,
        &parts(1),
        &["-e", "exec_done", "--reason", "completed"],
    )
    .ok();
    let r = sb.caf(&["--json", "resume", "exec_py"]).ok().json();
    assert_eq!(r["checkpoint"], last["id"]);
    assert_eq!(r["status"], "failed");
    assert_eq!(r["resumable"], true);
    assert_eq!(r["progress"]["percent"], 50);
    assert_eq!(r["remaining_steps"], json!(["next"]));
    assert_eq!(r["task"], "answer the question");
    assert_eq!(r["last_error"]["message"], "timeout, retried");
    assert_eq!(r["variables"]["step"], 2);
    let text = sb.caf(&["resume", "exec_py"]).ok().out();
    for needle in [
        "Progress    1/2 steps (50%)",
        "Remaining   next",
        "Last error",
        "timeout, retried",
        "step = 2",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    // A damaged newest checkpoint is skipped, and says so.
    std::fs::write(sb.path_of(last["id"].as_str().unwrap()), b"{}").unwrap();
    let out = sb.caf(&["--json", "resume", "exec_py"]).ok();
    let r = out.json();
    assert_ne!(r["checkpoint"], last["id"]);
    let unreadable = r["unreadable_files"].to_string();
    assert!(unreadable.contains(last["id"].as_str().unwrap()), "{r:#}");
    assert!(
        out.err().contains("skipped unreadable file"),
        "{}",
        out.describe()
    );
    let list = sb.caf(&["list"]).ok().out();
    assert!(list.contains("resumable: exec_py"), "{list}");
    assert!(!list.contains("resumable: exec_done"), "{list}");
    sb.caf(&["resume", "exec_nowhere"]).fails(1);
}

#[test]
fn label_names_and_protects_an_existing_checkpoint() {
    let sb = Sandbox::new();
    let a = save(&sb, &parts(1), &["-e", "e"]).ok().json();
    let id = a["id"].as_str().unwrap();
    let l = sb
        .caf(&[
            "--json", "label", id, "--add", "keep", "--add", "golden", "--name", "start",
        ])
        .ok()
        .json();
    assert_eq!(l["labels"], json!(["keep", "golden"]));
    assert_eq!(l["name"], "start");
    sb.caf(&["validate", s(&sb.path_of(id))]).ok();
    let l = sb
        .caf(&["--json", "label", id, "--remove", "golden", "--name", ""])
        .ok()
        .json();
    assert_eq!(l["labels"], json!(["keep"]));
    assert_eq!(l.get("name"), None);
    sb.caf(&["label", id]).fails(2);
    sb.caf(&["label", "ckpt_missing", "--add", "x"]).fails(1);
}

#[test]
fn prune_follows_the_policy_dry_run_changes_nothing_and_twice_is_once() {
    let sb = Sandbox::new();
    let mut ids = Vec::new();
    for step in 1..=6 {
        ids.push(
            save(&sb, &parts(step), &["-e", "e"]).ok().json()["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    sb.caf(&["label", &ids[0], "--add", "keep"]).ok();
    let before = json_files(&sb.store());
    let dry = sb
        .caf(&["--json", "prune", "--keep-last", "2", "--dry-run"])
        .ok()
        .json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["plan"]["delete"].as_array().unwrap().len(), 3);
    assert_eq!(json_files(&sb.store()), before, "a dry run changes nothing");
    sb.caf(&["prune"]).fails(2); // no policy anywhere
                                 // The policy of caf.toml, when no flag is given.
    std::fs::write(sb.store().join("caf.toml"), "[retention]\nkeep_last = 2\n").unwrap();
    let done = sb.caf(&["--json", "prune"]).ok().json();
    let deleted: Vec<&str> = done["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(deleted, [&ids[3], &ids[2], &ids[1]].map(String::as_str));
    let left: Vec<String> = json_files(&sb.store()).into_keys().collect();
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(sb.path_of(&ids[0]).exists(), "labelled keep");
    let again = sb.caf(&["--json", "prune"]).ok().json();
    assert!(
        again["deleted"].as_array().unwrap().is_empty(),
        "twice is once"
    );
    // Lineage stays readable: the kept child's missing parent leads to the kept ancestor.
    let store = caf_core::FileStore::open(sb.store()).unwrap();
    let log = caf_core::prune::PrunedLog::of_dir(&sb.store())
        .load()
        .unwrap();
    let child =
        caf_core::CheckpointStore::summary(&store, &caf_core::CheckpointId::new(&ids[4]).unwrap())
            .unwrap()
            .unwrap();
    let gap = caf_core::prune::ancestry(&store, &log, child.parent_id.as_ref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(gap.nearest_kept.unwrap().as_str(), ids[0]);
    assert_eq!(gap.pruned, 3);
    // And `caf log` shows the gap.
    let log = sb.caf(&["log", "--graph"]).ok().out();
    assert!(
        log.contains(&format!("⋮ 3 pruned since {}", ids[0])),
        "{log}"
    );
    // Flags override the file; a bad flag is bad usage.
    sb.caf(&["prune", "--tiers", "banana"]).fails(2);
    sb.caf(&["prune", "--max-age", "soon"]).fails(2);
}

#[test]
fn delete_older_than_keeps_each_executions_latest() {
    let sb = Sandbox::new();
    for step in 1..=3 {
        save(&sb, &parts(step), &["-e", "e1"]).ok();
    }
    save(&sb, &parts(1), &["-e", "e2"]).ok();
    let none = sb
        .caf(&["--json", "delete", "--older-than", "1h"])
        .ok()
        .json();
    assert!(none["deleted"].as_array().unwrap().is_empty());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = sb
        .caf(&["--json", "delete", "--older-than", "1s"])
        .ok()
        .json();
    assert_eq!(out["deleted"].as_array().unwrap().len(), 2);
    assert_eq!(
        json_files(&sb.store()).len(),
        2,
        "one per execution is left"
    );
    sb.caf(&["delete", "--older-than", "yesterday"]).fails(2);
}

#[test]
fn auto_prune_in_caf_toml_prunes_after_each_save() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store()).unwrap();
    std::fs::write(
        sb.store().join("caf.toml"),
        "[retention]\nkeep_last = 2\nauto_prune = true\n",
    )
    .unwrap();
    for step in 1..=5 {
        save(&sb, &parts(step), &["-e", "e"]).ok();
    }
    assert_eq!(json_files(&sb.store()).len(), 2);
    // Off by default.
    std::fs::write(sb.store().join("caf.toml"), "[retention]\nkeep_last = 2\n").unwrap();
    for step in 6..=8 {
        save(&sb, &parts(step), &["-e", "e"]).ok();
    }
    assert_eq!(json_files(&sb.store()).len(), 5);
    // A bad caf.toml is one clear line naming the file.
    std::fs::write(sb.store().join("caf.toml"), "[retention]\nkeep_lats = 2\n").unwrap();
    let before = json_files(&sb.store());
    let out = save(&sb, &parts(9), &["-e", "e"]).fails(1);
    assert!(out.err().contains("caf.toml"), "{}", out.describe());
    assert_eq!(json_files(&sb.store()), before, "nothing saved");
}

/// The same commands on a database alone: SQLite always, PostgreSQL with
/// `CAF_TEST_POSTGRES_URL` (skipped loudly otherwise).
fn lifecycle_on_a_database(url: &str) {
    let sb = Sandbox::new();
    let db = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = vec!["--db".into(), url.into(), "--no-files".into()];
        all.extend(args.iter().map(|s| s.to_string()));
        all
    };
    let run = |args: &[&str]| {
        let all = db(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        sb.caf_plain(&refs, &[])
    };
    let file = sb.path().join("parts.json");
    let mut ids = Vec::new();
    for step in 1..=5 {
        std::fs::write(&file, serde_json::to_vec(&parts(step)).unwrap()).unwrap();
        let out = run(&["--json", "save", "-e", "exec_db", "-f", s(&file)])
            .ok()
            .json();
        ids.push(out["id"].as_str().unwrap().to_string());
    }
    let fork = run(&["--json", "fork", &ids[1], "-e", "exec_db_b"])
        .ok()
        .json();
    assert_eq!(fork["parent_id"], ids[1].as_str());
    let r = run(&["--json", "resume", "exec_db"]).ok().json();
    assert_eq!(r["checkpoint"], ids[4].as_str());
    run(&["label", &ids[0], "--add", "keep"]).ok();
    let pruned = run(&["--json", "prune", "--keep-last", "1"]).ok().json();
    // ids[0] is labelled keep, ids[1] a branch point, ids[2] starts a branch of it, ids[4] is
    // the latest: ids[3] goes.
    assert_eq!(pruned["deleted"], json!([ids[3]]));
    // The database keeps the tombstone: the gap names the nearest kept ancestor.
    let log = run(&["log", "--graph"]).ok().out();
    assert!(
        log.contains(&format!("⋮ 1 pruned since {}", ids[2])),
        "{log}"
    );
}

#[test]
fn lifecycle_on_sqlite_alone() {
    let sb = Sandbox::new();
    lifecycle_on_a_database(&format!(
        "sqlite://{}",
        sb.path().join("db.sqlite").display()
    ));
}

#[test]
fn lifecycle_on_postgres() {
    let Ok(base) = std::env::var("CAF_TEST_POSTGRES_URL") else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED lifecycle_on_postgres: set CAF_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)"
        );
        return;
    };
    let db = caf_sql::ScratchDatabase::create(&base).unwrap();
    lifecycle_on_a_database(db.url());
}
