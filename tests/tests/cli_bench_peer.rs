//! `caf bench --peer langgraph` without the peer's venv: one error line that says how to set it
//! up, exit 1, before anything is measured. (The peer itself is never run here: CI has no
//! LangGraph, and timings are not tested.)
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
