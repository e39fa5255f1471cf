//! The `async` durability mode from the command line: `caf demo --durability async`, and
//! `durability = "async"` in the directory's caf.toml, write exactly what the sync mode writes
//! (files and database), and bad values are refused.
//!
//! The harness is [`caf_tests::cli`].

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{json_files, Sandbox};

const DEMO: [&str; 8] = [
    "demo",
    "--executions",
    "2",
    "--steps",
    "6",
    "--crash-at",
    "4",
    "--deterministic",
];

/// The demo's files, and what `caf list --json` and `caf stats --json` (the database) print.
fn run_demo(sb: &Sandbox, extra: &[&str]) -> (std::collections::BTreeMap<String, Vec<u8>>, String) {
    let mut args = DEMO.to_vec();
    args.extend_from_slice(extra);
    sb.caf(&args).ok();
    let listed = sb.caf(&["--json", "list"]).ok().out().to_string();
    let stats = sb.caf(&["--json", "stats"]).ok().out().to_string();
    let listed = format!("{listed}\n{stats}");
    (json_files(&sb.store()), listed)
}

#[test]
fn async_demo_writes_what_the_sync_demo_writes() {
    let sync = Sandbox::new();
    let (files, listed) = run_demo(&sync, &[]);
    assert!(files.len() > 10, "{}", files.len());
    let by_flag = Sandbox::new();
    assert_eq!(
        run_demo(&by_flag, &["--durability", "async"]),
        (files.clone(), listed.clone()),
        "--durability async"
    );
    let by_config = Sandbox::new();
    std::fs::create_dir_all(by_config.store()).unwrap();
    std::fs::write(
        by_config.store().join("caf.toml"),
        "durability = \"async\"\n",
    )
    .unwrap();
    let (config_files, config_listed) = run_demo(&by_config, &[]);
    assert_eq!((config_files, config_listed), (files, listed), "caf.toml");
    // The database agrees with the files.
    by_config.caf(&["verify"]).ok();
}

#[test]
fn bad_durability_values_are_refused() {
    let sb = Sandbox::new();
    let out = sb.caf(&["demo", "--durability", "eventually"]).fails(2);
    assert!(out.err().contains("eventually"), "{}", out.describe());
    std::fs::create_dir_all(sb.store()).unwrap();
    std::fs::write(sb.store().join("caf.toml"), "durability = \"later\"\n").unwrap();
    let out = sb.caf(&["demo"]).fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.errors()[0].contains("caf.toml:1:"),
        "{}",
        out.describe()
    );
    // Nothing was written.
    assert!(json_files(&sb.store()).is_empty());
    // The flag does not make a broken caf.toml usable: every store opened to write reads it
    // for its redaction rules, and no save goes ahead without them.
    let out = sb
        .caf(&["demo", "--durability", "sync", "--steps", "3"])
        .fails(1);
    assert!(
        out.errors()[0].contains("caf.toml:1:"),
        "{}",
        out.describe()
    );
    assert!(json_files(&sb.store()).is_empty());
    // With a valid file, the flag wins over it.
    std::fs::write(sb.store().join("caf.toml"), "durability = \"async\"\n").unwrap();
    sb.caf(&["demo", "--durability", "sync", "--steps", "3"])
        .ok();
}
