//! `caf diff`, running the real binary through the shared harness, [`caf_tests::cli`].

use caf_tests::cli::{ids, run_caf, s, Out};
use serde_json::Value;
use std::path::Path;

/// `caf --dir DIR ARGS…`, in this test's working directory; its output must be UTF-8.
fn caf(dir: &Path, args: &[&str]) -> Out {
    let mut all = vec!["--dir", s(dir)];
    all.extend_from_slice(args);
    let r = run_caf(&std::env::current_dir().unwrap(), &all, &[]);
    assert!(
        std::str::from_utf8(&r.stdout).is_ok() && std::str::from_utf8(&r.stderr).is_ok(),
        "output is not UTF-8: {}",
        r.describe()
    );
    r
}

/// `caf --dir DIR ARGS…`, which must succeed, with its stdout as JSON.
fn ok_json(dir: &Path, args: &[&str]) -> Value {
    caf(dir, args).ok().json()
}

/// A demo store and its execution's checkpoint ids, newest first.
fn demo() -> (tempfile::TempDir, String, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ckpts");
    // Two executions: the first keeps its whole history (the demo prunes only the last).
    let v = ok_json(&dir, &["--json", "demo", "--executions", "2"]);
    let exec = v["executions"][0]["execution_id"]
        .as_str()
        .unwrap()
        .to_string();
    let list = ok_json(&dir, &["--json", "list", "--execution", &exec]);
    (tmp, exec, ids(list.as_array().unwrap()))
}

#[test]
fn cli_diff_of_an_execution_and_of_a_checkpoint_with_its_parent() {
    let (tmp, exec, ids) = demo();
    let dir = tmp.path().join("ckpts");
    assert!(ids.len() >= 3, "{ids:?}");
    let from_to = |d: &Value| {
        (
            d["from"].as_str().unwrap().to_string(),
            d["to"].as_str().unwrap().to_string(),
        )
    };

    // The demo ends with a `final` checkpoint that only adds a thought.
    let d = ok_json(&dir, &["--json", "diff", "--execution", &exec]);
    assert_eq!(from_to(&d), (ids[1].clone(), ids[0].clone()));
    assert!(!d["thoughts_added"].as_array().unwrap().is_empty(), "{d:#}");
    assert_eq!(d.as_object().unwrap().len(), 11);

    // Without it, the last two checkpoints are two steps: the step variable moved.
    let steps = tmp.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    for id in &ids[1..] {
        let name = format!("{id}.json");
        std::fs::copy(dir.join(&name), steps.join(&name)).unwrap();
    }
    let d = ok_json(&steps, &["--json", "diff", "--execution", &exec]);
    assert_eq!(from_to(&d), (ids[2].clone(), ids[1].clone()));
    assert!(!d["thoughts_added"].as_array().unwrap().is_empty(), "{d:#}");
    assert!(
        !d["tool_calls_added"].as_array().unwrap().is_empty(),
        "{d:#}"
    );
    let step = d["context_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "/variables/step")
        .unwrap_or_else(|| panic!("no /variables/step in {d:#}"));
    assert_eq!(step["op"], "changed");
    assert_eq!(d["progress"]["step_number"]["delta"], 1);
    assert!(d["metadata"]["tokens_used"]["delta"].as_i64().unwrap() > 0);

    // `caf diff ID` diffs against the parent.
    let newest = ok_json(&dir, &["--json", "inspect", &ids[0]]);
    let parent = newest["parent_id"].as_str().unwrap().to_string();
    let d = ok_json(&dir, &["--json", "diff", &ids[0]]);
    assert_eq!(from_to(&d), (parent.clone(), ids[0].clone()));

    // Human output: a header, sections, `+` / `~` lines, no colour on a pipe.
    let r = caf(&steps, &["diff", "--execution", &exec]);
    assert_eq!(r.code, 0, "{}", r.err());
    let header = format!("{} → {}\n", ids[2], ids[1]);
    assert!(r.out().starts_with(&header), "{}", r.out());
    for section in [
        "\nThoughts (",
        "\nTool calls (",
        "\nContext (",
        "\nProgress\n",
        "\nMetadata\n",
    ] {
        assert!(r.out().contains(section), "no {section:?} in\n{}", r.out());
    }
    assert!(r.out().contains("\n  + th_"), "{}", r.out());
    assert!(r.out().contains("\n  ~ /variables/step: "), "{}", r.out());
    assert!(r.out().contains("\n  ~ step "), "{}", r.out());
    assert!(r.out().contains("\n  ~ tokens "), "{}", r.out());

    // File paths work as well as ids, and a checkpoint against itself has no differences.
    let file = dir.join(format!("{}.json", ids[0]));
    let file = file.to_str().unwrap();
    let r = caf(&dir, &["diff", file, &ids[0]]);
    assert_eq!(r.code, 0, "{}", r.err());
    assert!(r.out().ends_with("no differences\n"), "{}", r.out());
    let d = ok_json(&dir, &["--json", "diff", file]);
    assert_eq!(from_to(&d), (parent, ids[0].clone()));
}

#[test]
fn cli_diff_failures() {
    let (tmp, exec, ids) = demo();
    let dir = tmp.path().join("ckpts");
    let root = ids.last().unwrap();
    let r = caf(&dir, &["diff", root]);
    assert_eq!(r.code, 1, "{}", r.out());
    assert!(r.err().contains("root checkpoint"), "{}", r.err());
    let r = caf(&dir, &["diff", "ckpt_does_not_exist"]);
    assert_eq!(r.code, 1);
    assert!(r.err().contains("ckpt_does_not_exist"), "{}", r.err());
    let r = caf(&dir, &["diff", "../etc/passwd.json", &ids[0]]);
    assert_eq!(r.code, 1);
    let r = caf(&dir, &["diff", "--execution", "exec_nothing_here"]);
    assert_eq!(r.code, 1);
    assert!(r.err().contains("needs two"), "{}", r.err());
    // Bad usage: nothing to diff, three checkpoints, or both forms at once.
    assert_eq!(caf(&dir, &["diff"]).code, 2);
    assert_eq!(caf(&dir, &["diff", "a", "b", "c"]).code, 2);
    assert_eq!(caf(&dir, &["diff", &ids[0], "--execution", &exec]).code, 2);
}
