//! `caf watch` end to end on a fresh directory (issue 9, part 2): a git repository made here,
//! a command that exits with status 3, captures at short real intervals, SIGTERM with and
//! without a command, `caf watch summary`, sessions continued, captures in a database, and
//! bad usage. No assertion depends on how long anything takes: where a test needs an
//! interval capture, the watched command waits until one is saved.

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{caf_command, json_files, s, Out, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `git` in `dir`.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A project: a git repository with one commit, in the sandbox.
fn project(sb: &Sandbox) -> PathBuf {
    let dir = sb.path().join("proj");
    std::fs::create_dir(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["config", "user.email", "t@example.com"]);
    git(&dir, &["config", "user.name", "T"]);
    std::fs::write(dir.join("README.md"), "# project\n").unwrap();
    git(&dir, &["add", "README.md"]);
    git(&dir, &["commit", "-q", "-m", "initial"]);
    dir
}

/// The checkpoints of a store, oldest first, as JSON documents.
fn captures(store: &Path) -> Vec<Value> {
    let mut docs: Vec<Value> = json_files(store)
        .values()
        .map(|bytes| serde_json::from_slice(bytes).unwrap())
        .collect();
    docs.sort_by_key(|d| d["snapshot"]["context"]["variables"]["capture"].as_u64());
    docs
}

/// A shell command that waits until `store` holds `n` checkpoint files.
fn wait_for_files(store: &Path, n: usize) -> String {
    format!(
        "while [ $(ls {} 2>/dev/null | grep -c '\\.json$') -lt {n} ]; do sleep 0.05; done",
        store.display()
    )
}

/// Starts `caf ARGS…` in `cwd` without waiting for it.
fn spawn_caf(cwd: &Path, args: &[&str]) -> Child {
    caf_command()
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most a minute) until `dir` holds at least `n` checkpoint files.
fn await_files(dir: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while captures_count(dir) < n {
        assert!(
            Instant::now() < deadline,
            "no {n} captures in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn captures_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
        .count()
    })
}

/// Sends `signal` (`TERM`, `INT`) to a process.
fn kill(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits (at most a minute) for a child and returns its exit code and stderr.
fn finish(mut child: Child) -> (i32, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            assert!(!err.contains("panicked"), "{err}");
            return (status.code().expect("caf exits, not killed"), err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("caf watch did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn watch_runs_a_command_captures_the_project_and_ends_with_its_status() {
    let sb = Sandbox::new();
    let proj = project(&sb);
    // The store inside the project, where `caf watch` run in a project puts it by default.
    let store = proj.join("checkpoints");
    // After the first capture, change the project; after an interval capture saw it, exit 3.
    let script = format!(
        "{}; echo change >> README.md; echo new > notes.txt; {}; exit 3",
        wait_for_files(&store, 1),
        wait_for_files(&store, 2)
    );
    let out = run_in(
        &proj,
        &["watch", "--interval", "100ms", "--", "sh", "-c", &script],
    );
    assert_eq!(
        out.code,
        3,
        "caf ends with the command's status: {}",
        out.describe()
    );
    assert!(
        out.err().contains("caf watch: capture 1 (start)"),
        "{}",
        out.describe()
    );

    let docs = captures(&store);
    assert!(
        docs.len() >= 3,
        "start, an interval, the exit: {}",
        docs.len()
    );
    let first = &docs[0];
    let last = docs.last().unwrap();
    let vars = |d: &Value| d["snapshot"]["context"]["variables"].clone();
    assert_eq!(vars(first)["trigger"], "start");
    assert!(docs[1..docs.len() - 1]
        .iter()
        .all(|d| vars(d)["trigger"] == "interval"));
    assert_eq!(vars(last)["trigger"], "exit");
    for (i, d) in docs.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(vars(d)["capture"], n);
        assert_eq!(d["metadata"]["step_number"], n);
        assert_eq!(
            d["metadata"]["labels"],
            serde_json::json!([format!("capture-{n}"), "watch"])
        );
        assert_eq!(d["agent_id"], "caf-watch");
        if i > 0 {
            assert_eq!(d["parent_id"], docs[i - 1]["id"], "one line of captures");
        }
    }

    // The exit status, in the last capture.
    let state = &last["snapshot"]["context"]["state"];
    assert_eq!(state["command"]["exit_code"], 3);
    assert_eq!(state["command"]["argv"][0], "sh");
    assert_eq!(last["metadata"]["checkpoint_reason"], "error");
    assert_eq!(
        last["snapshot"]["progress"]["last_error"]["message"],
        "the command exited with status 3"
    );
    // The probes: git, files modified (never the store's own files), memory.
    assert_eq!(state["git"]["branch"], "main");
    assert_eq!(state["git"]["modified"], serde_json::json!(["README.md"]));
    assert_eq!(state["git"]["untracked"], serde_json::json!(["notes.txt"]));
    assert_eq!(state["git"]["last_commit"]["summary"], "initial");
    assert_eq!(
        state["files_modified"]["files"],
        serde_json::json!(["README.md", "notes.txt"])
    );
    assert!(state["memory"]["caf"]["rss_bytes"].as_u64().unwrap() > 0);
    assert!(state["memory"]["watched"]["pid"].is_u64());
    assert_eq!(
        first["snapshot"]["context"]["state"]["files_modified"]["count"],
        0
    );

    // The summary: printed, saved in the last capture, and the same from `caf watch summary`.
    assert!(
        out.out().contains(&format!("{} captures over", docs.len())),
        "{}",
        out.describe()
    );
    assert!(
        out.out().contains("exited with status 3"),
        "{}",
        out.describe()
    );
    let saved = state["summary"].clone();
    let shown = run_in(&proj, &["--json", "watch", "summary"]).ok().json();
    assert_eq!(shown, saved);
    assert_eq!(shown["total"], docs.len());
    assert_eq!(
        shown["files_modified"],
        serde_json::json!(["README.md", "notes.txt"])
    );
    assert_eq!(shown["captures"][0]["trigger"], "start");
    let session = last["execution_id"].as_str().unwrap();
    let by_id = run_in(&proj, &["--json", "watch", "summary", "--session", session])
        .ok()
        .json();
    assert_eq!(by_id, saved);

    // Captures are ordinary checkpoints: list, inspect, diff, log, validate, prune.
    let listed = run_in(&proj, &["--json", "list", "--label", "watch"])
        .ok()
        .json();
    assert_eq!(listed.as_array().unwrap().len(), docs.len());
    let last_id = last["id"].as_str().unwrap();
    run_in(&proj, &["inspect", last_id]).ok();
    let diff = run_in(&proj, &["--json", "diff", "--execution", session]).ok();
    assert!(diff.out().contains("/state/"), "{}", diff.describe());
    run_in(&proj, &["log", "--graph"]).ok();
    run_in(&proj, &["validate", "checkpoints"]).ok();
    run_in(&proj, &["prune", "--keep-last", "1", "--dry-run"]).ok();
}

fn run_in(cwd: &Path, args: &[&str]) -> Out {
    caf_tests::cli::run_caf(cwd, args, &[])
}

#[test]
fn without_a_command_sigterm_and_sigint_stop_the_watch_with_a_final_capture() {
    for signal in ["TERM", "INT"] {
        let sb = Sandbox::new();
        let proj = project(&sb);
        let store = sb.store();
        let child = spawn_caf(
            sb.path(),
            &[
                "--dir",
                s(&store),
                "watch",
                "--interval",
                "1h",
                "--project",
                s(&proj),
            ],
        );
        await_files(&store, 1);
        kill(child.id(), signal);
        let (code, err) = finish(child);
        assert_eq!(code, 0, "stopped by SIG{signal}: {err}");
        let docs = captures(&store);
        assert_eq!(docs.len(), 2, "the start and the stop");
        let last = &docs[1];
        let vars = &last["snapshot"]["context"]["variables"];
        assert_eq!(vars["trigger"], "stop");
        assert_eq!(vars["stopped_by"], format!("SIG{signal}"));
        assert_eq!(last["metadata"]["checkpoint_reason"], "completed");
        assert_eq!(last["snapshot"]["context"]["state"]["summary"]["total"], 2);
    }
}

#[test]
fn sigterm_is_passed_on_to_the_command() {
    let sb = Sandbox::new();
    let proj = project(&sb);
    let store = sb.store();
    let child = spawn_caf(&proj, &["--dir", s(&store), "watch", "--", "sleep", "60"]);
    await_files(&store, 1);
    kill(child.id(), "TERM");
    let (code, err) = finish(child);
    assert_eq!(code, 128 + 15, "the command was killed by SIGTERM: {err}");
    assert!(err.contains("SIGTERM passed on to the command"), "{err}");
    let docs = captures(&store);
    let last = docs.last().unwrap();
    let command = &last["snapshot"]["context"]["state"]["command"];
    assert_eq!(command["signal"], 15);
    assert_eq!(command["exit_code"], Value::Null);
    assert_eq!(last["snapshot"]["context"]["variables"]["trigger"], "exit");
}

#[test]
fn a_session_is_continued_and_its_captures_reach_the_database() {
    let sb = Sandbox::new();
    let proj = project(&sb);
    std::fs::create_dir(sb.store()).unwrap();
    sb.caf(&["sync"]).ok(); // the store's own database: every save goes there too
    let watch = |script: &str| {
        sb.caf(&[
            "watch",
            "--session",
            "watch_s1",
            "--project",
            s(&proj),
            "--state-dir",
            s(&proj),
            "--",
            "sh",
            "-c",
            script,
        ])
    };
    watch("true").ok();
    let second = watch("echo more > proj/extra.txt").ok();
    assert!(
        second.err().contains("continuing after capture 2"),
        "{}",
        second.describe()
    );
    let summary = sb
        .caf(&["--json", "watch", "summary", "--session", "watch_s1"])
        .ok()
        .json();
    assert_eq!(summary["total"], 4);
    let numbers: Vec<u64> = summary["captures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    assert_eq!(summary["files_modified"], serde_json::json!(["extra.txt"]));
    assert!(summary["captures"][3]["state_dir_files"].as_u64().unwrap() >= 2);
    let rows = sb
        .caf(&[
            "--json",
            "sql",
            "SELECT count(*) FROM checkpoints WHERE execution_id = 'watch_s1'",
        ])
        .ok()
        .json();
    assert_eq!(rows["rows"][0][0], 4, "{rows}");
    sb.caf(&["verify"]).ok();
}

#[test]
fn bad_usage_and_bad_input_get_one_line_and_change_nothing() {
    let sb = Sandbox::new();
    for (args, code, says) in [
        (vec!["watch", "--interval", "0s"], 2, "longer than zero"),
        (vec!["watch", "--interval", "5x"], 2, "500ms"),
        (
            vec!["watch", "--session", "a/b"],
            2,
            "not a valid execution id",
        ),
        (vec!["watch", "--interval", "1s", "summary"], 2, "'summary'"),
        (vec!["watch", "--project", "missing"], 1, "not a directory"),
        (
            vec!["watch", "--", "/nonexistent/agent", "--flag"],
            1,
            "/nonexistent/agent",
        ),
    ] {
        let out = sb.caf(&args);
        assert_eq!(out.code, code, "{}", out.describe());
        assert!(out.err().contains(says), "{}", out.describe());
        assert_eq!(out.errors().len(), 1, "{}", out.describe());
        assert_eq!(captures_count(&sb.store()), 0, "nothing saved");
    }
    // No session yet.
    std::fs::create_dir_all(sb.store()).unwrap();
    let out = sb.caf(&["watch", "summary"]).fails(1);
    assert!(out.err().contains("no watch session"), "{}", out.describe());
    let out = sb
        .caf(&["watch", "summary", "--session", "watch_nope"])
        .fails(1);
    assert!(out.err().contains("watch_nope"), "{}", out.describe());
}
