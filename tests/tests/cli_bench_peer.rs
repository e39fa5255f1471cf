//! `caf bench --peer langgraph` without the peer's venv: one error line that says how to set it
//! up, exit 1, before anything is measured; with a stand-in for the peer, how its report is set
//! beside caf's figures. (The peer itself is never run here: CI has no LangGraph, and timings
//! are not tested.)
//!
//! The harness is [`caf_tests::cli`].

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{s, Sandbox};

#[test]
fn bench_peer_without_its_venv_fails_with_one_line() {
    let sb = Sandbox::new();
    // A bench/peers directory with no .venv in it.
    let peers = sb.path().join("peers");
    std::fs::create_dir(&peers).unwrap();
    let scratch = sb.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    for json in [false, true] {
        let mut args = vec![
            "--dir",
            "store",
            "bench",
            "--peer",
            "langgraph",
            "--executions",
            "1",
            "--steps",
            "1",
            "--scratch",
            s(&scratch),
        ];
        if json {
            args.insert(0, "--json");
        }
        let out = sb.caf_plain(&args, &[("CAF_PEER_DIR", s(&peers))]).fails(1);
        assert_eq!(out.err().lines().count(), 1, "{}", out.describe());
        let line = &out.errors()[0];
        assert!(line.contains("bench/peers/setup.sh"), "{}", out.describe());
        assert!(line.contains(s(&peers.join(".venv"))), "{}", out.describe());
        assert!(out.stdout.is_empty(), "{}", out.describe());
    }
    // Nothing was measured: the scratch directory is untouched and no store was made.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    assert!(!sb.store().exists());
}

#[test]
fn bench_peer_names_only_known_peers() {
    let sb = Sandbox::new();
    let out = sb.caf(&["bench", "--peer", "carrier-pigeon"]).fails(2);
    assert!(out.err().contains("carrier-pigeon"), "{}", out.describe());
}

/// A stand-in for the peer's venv and script: its "python" prints a fixed report (a save of
/// 1,000 µs), with a page floor of 400 µs when asked for one (`--page-floor`) unless
/// `FAKE_PEER_NO_FLOOR` is set (a script from before the page floor); with `--concurrent`, a
/// report of 100 saves per second.
fn fake_peer(sb: &Sandbox) -> std::path::PathBuf {
    let peers = sb.path().join("peers");
    let bin = peers.join(".venv").join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(peers.join("langgraph_agent_run.py"), "# not run\n").unwrap();
    let python = bin.join("python");
    std::fs::write(
        &python,
        r#"#!/bin/sh
floor=""
for a in "$@"; do
  if [ "$a" = "--page-floor" ] && [ -z "$FAKE_PEER_NO_FLOOR" ]; then floor=', "page_floor_us": 400.0'; fi
  if [ "$a" = "--concurrent" ]; then
    echo '{"saves_per_s": 100.0, "processes": 2, "saves_each": 3, "saved": 6, "lost": 0, "errors": 0, "seconds": 0.06, "cpu_us_per_save": 10.0}'
    exit 0
  fi
done
echo "{\"save_us\": 1000.0, \"restore_us\": 300.0, \"list_us\": 20000.0, \"packages\": {\"langgraph-checkpoint-sqlite\": \"0.0.0-fake\"}, \"sqlite\": {\"version\": \"3\", \"journal_mode\": \"wal\", \"synchronous\": \"FULL\"}$floor}"
"#,
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    peers
}

/// A sandbox with the stand-in peer ([`fake_peer`]) and an empty scratch directory.
fn with_fake_peer() -> (Sandbox, std::path::PathBuf, std::path::PathBuf) {
    let sb = Sandbox::new();
    let peers = fake_peer(&sb);
    let scratch = sb.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    (sb, peers, scratch)
}

/// Each side's save over the page floor of its own loop, and their ratio: the save ratio with
/// the disk's speed while each side ran divided out.
#[cfg(unix)]
#[test]
fn bench_peer_sets_each_save_beside_the_page_floor_of_its_own_loop() {
    let (sb, peers, scratch) = with_fake_peer();
    let args = [
        "--json",
        "--dir",
        "store",
        "bench",
        "--peer",
        "langgraph",
        "--mode",
        "files+sqlite",
        "--executions",
        "1",
        "--steps",
        "12",
        "--scratch",
        s(&scratch),
    ];
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * b.abs().max(1.0);
    let out = sb
        .caf_plain(&args, &[("CAF_PEER_DIR", s(&peers))])
        .ok()
        .json();
    let caf = &out["caf"][0];
    let (save, page) = (
        caf["save_us"].as_f64().unwrap(),
        caf["page_floor_us"].as_f64().unwrap(),
    );
    assert_eq!(out["peer_page_floor_us"].as_f64(), Some(400.0), "{out}");
    // Half of 1,000 µs is 1.25 page floors of 400 µs.
    assert_eq!(
        out["peer_half_save_over_page_floor"].as_f64(),
        Some(1.25),
        "{out}"
    );
    let r = &out["ratios"][0];
    assert!(
        close(r["save_over_page_floor"].as_f64().unwrap(), save / page),
        "{out}"
    );
    assert!(
        close(
            r["save_in_page_floors"].as_f64().unwrap(),
            save / page / 2.5
        ),
        "{out}"
    );
    // A peer that reports no page floor: its save is set beside caf's.
    let out = sb
        .caf_plain(
            &args,
            &[("CAF_PEER_DIR", s(&peers)), ("FAKE_PEER_NO_FLOOR", "1")],
        )
        .ok()
        .json();
    assert!(out.get("peer_page_floor_us").is_none(), "{out}");
    assert!(
        out["ratios"][0].get("save_in_page_floors").is_none(),
        "{out}"
    );
    let pooled = out["page_floor_us"].as_f64().unwrap();
    assert!(
        close(
            out["peer_half_save_over_page_floor"].as_f64().unwrap(),
            500.0 / pooled
        ),
        "{out}"
    );
}

/// `caf [--json] --dir store bench --peer langgraph --rounds 3 EXTRA… --scratch SCRATCH`.
/// Asserts that `spread` (a ratio's median, least and greatest over three rounds) is made of
/// `each`, the rounds' own ratios: their middle, least and greatest.
fn assert_spread_of(spread: &serde_json::Value, mut each: Vec<f64>, what: &str) {
    each.sort_by(f64::total_cmp);
    let got = |k: &str| spread[k].as_f64();
    assert_eq!(
        (got("min"), got("median"), got("max")),
        (Some(each[0]), Some(each[1]), Some(each[2])),
        "{what}"
    );
}

fn rounds_args<'a>(extra: &[&'a str], scratch: &'a std::path::Path, json: bool) -> Vec<&'a str> {
    let mut v = vec![
        "--dir",
        "store",
        "bench",
        "--peer",
        "langgraph",
        "--rounds",
        "3",
    ];
    v.extend_from_slice(extra);
    v.extend(["--scratch", s(scratch)]);
    if json {
        v.insert(0, "--json");
    }
    v
}

/// `--rounds N`: caf and the peer measured N times, alternately, each round's report as one
/// run's, and each ratio's median, least and greatest over the rounds.
#[cfg(unix)]
#[test]
fn bench_peer_rounds_alternate_and_give_each_ratio_its_spread() {
    let (sb, peers, scratch) = with_fake_peer();
    let args = |json: bool| {
        rounds_args(
            &[
                "--mode",
                "files",
                "--mode",
                "sqlite",
                "--executions",
                "1",
                "--steps",
                "4",
            ],
            &scratch,
            json,
        )
    };
    let out = sb
        .caf_plain(&args(true), &[("CAF_PEER_DIR", s(&peers))])
        .ok()
        .json();
    let rounds = out["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 3, "{out}");
    let order: Vec<(u64, bool)> = rounds
        .iter()
        .map(|r| {
            (
                r["round"].as_u64().unwrap(),
                r["peer_first"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(order, [(1, false), (2, true), (3, false)], "{out}");
    let spread = out["spread"].as_array().unwrap();
    let modes: Vec<&str> = spread.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["files", "sqlite"], "{out}");
    for (i, m) in spread.iter().enumerate() {
        for key in ["save", "save_in_page_floors", "restore", "list"] {
            let each = rounds
                .iter()
                .map(|r| r["ratios"][i][key].as_f64().unwrap())
                .collect();
            assert_spread_of(&m[key], each, &format!("{key}: {out}"));
        }
    }
    // Every round's peer reported half of 1,000 µs over a page floor of 400.
    let half = &out["peer_half_save_over_page_floor"];
    assert_eq!(half["median"].as_f64(), Some(1.25), "{out}");
    assert_eq!(
        (half["min"].as_f64(), half["max"].as_f64()),
        (Some(1.25), Some(1.25))
    );
    // The tables: every round and mode, then the spread.
    let out = sb
        .caf_plain(&args(false), &[("CAF_PEER_DIR", s(&peers))])
        .ok();
    let text = out.out();
    assert!(text.contains("3 rounds side by side"), "{}", out.describe());
    assert!(text.contains("over the rounds"), "{}", out.describe());
    assert_eq!(
        text.lines().filter(|l| l.contains("sqlite")).count(),
        4,
        "a row per round and one in the spread: {}",
        out.describe()
    );
    // Nothing left behind: each round's stores, and the run's scratch directory, are removed.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

/// `--concurrent N --rounds K`: each round's saves per second against the peer's, and each
/// mode's ratio over the rounds.
#[cfg(unix)]
#[test]
fn bench_concurrent_rounds_give_the_saves_per_second_ratio_its_spread() {
    let (sb, peers, scratch) = with_fake_peer();
    let args = |json: bool| {
        rounds_args(
            &["--concurrent", "2", "--saves", "3", "--mode", "files"],
            &scratch,
            json,
        )
    };
    let out = sb
        .caf_plain(&args(true), &[("CAF_PEER_DIR", s(&peers))])
        .ok()
        .json();
    let rounds = out["rounds"].as_array().unwrap();
    let order: Vec<bool> = rounds
        .iter()
        .map(|r| r["peer_first"].as_bool().unwrap())
        .collect();
    assert_eq!(order, [false, true, false], "{out}");
    let each: Vec<f64> = rounds
        .iter()
        .map(|r| {
            let caf = &r["caf"][0];
            assert_eq!(caf["lost"].as_u64(), Some(0), "{out}");
            let ratio = r["ratios"][0]["saves_per_s"].as_f64().unwrap();
            // The peer's 100 saves per second.
            let expected = caf["saves_per_s"].as_f64().unwrap() / 100.0;
            assert!((ratio - expected).abs() < 1e-5 * expected.max(1.0), "{out}");
            ratio
        })
        .collect();
    let spread = &out["spread"][0];
    assert_eq!(spread["mode"].as_str(), Some("files"), "{out}");
    assert_spread_of(&spread["saves_per_s"], each, &out.to_string());
    assert!(
        out["floor_with_checksums"]["median"].as_f64().unwrap() > 0.0,
        "{out}"
    );
    let out = sb
        .caf_plain(&args(false), &[("CAF_PEER_DIR", s(&peers))])
        .ok();
    assert!(
        out.out().contains("3 rounds of 2 writers"),
        "{}",
        out.describe()
    );
    assert!(
        out.out().contains("files: caf / LangGraph"),
        "{}",
        out.describe()
    );
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

#[test]
fn bench_rounds_need_a_peer() {
    let sb = Sandbox::new();
    let out = sb.caf(&["bench", "--rounds", "3"]).fails(2);
    assert!(out.err().contains("--peer"), "{}", out.describe());
    let out = sb
        .caf(&["bench", "--peer", "langgraph", "--rounds", "0"])
        .fails(2);
    assert!(out.err().contains("--rounds"), "{}", out.describe());
}
