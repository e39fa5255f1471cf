//! `caf bench --concurrent N`: N writer processes save into one store at once; every save
//! that returned is in the store afterwards, with no error, in every mode (and on PostgreSQL
//! when `CAF_TEST_POSTGRES_URL` is set). What is asserted is behaviour (counts, errors, the
//! scratch directory cleaned up), never a timing.
//!
//! The harness is [`caf_tests::cli`].

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{s, Sandbox};
use caf_tests::pg_base;
use serde_json::Value;

fn check_mode(report: &Value, mode: &str, processes: u64, saves: u64) {
    let modes = report["caf"].as_array().unwrap();
    let f = modes
        .iter()
        .find(|f| f["mode"] == mode)
        .unwrap_or_else(|| panic!("no {mode} in {report}"));
    assert_eq!(f["processes"], processes, "{f}");
    assert_eq!(f["saves_each"], saves, "{f}");
    assert_eq!(f["saved"], processes * saves, "every save returned: {f}");
    assert_eq!(
        f["found"],
        processes * saves,
        "every save is in the store: {f}"
    );
    assert_eq!(f["lost"], 0, "{f}");
    assert_eq!(f["errors"], 0, "{f}");
    assert_eq!(f["workers_crashed"], 0, "{f}");
    assert!(f["saves_per_s"].as_f64().unwrap() > 0.0, "{f}");
    // The workers' CPU time was measured (from the word to go until their stores closed).
    assert!(f["cpu_us_per_save"].as_f64().unwrap() > 0.0, "{f}");
}

#[test]
fn concurrent_writers_lose_nothing_in_every_mode() {
    let sb = Sandbox::new();
    let report = sb
        .bench_json(&[
            "--concurrent",
            "4",
            "--saves",
            "12",
            "--mode",
            "files",
            "--mode",
            "files+sqlite",
            "--mode",
            "sqlite",
        ])
        .json();
    let scratch = sb.scratch();
    for mode in ["files", "files+sqlite", "sqlite"] {
        check_mode(&report, mode, 4, 12);
    }
    // The floors under the same load, measured in the same run: appends alone, appends with a
    // file per checkpoint, and appends with a checksummed file per checkpoint.
    for (key, with_files, with_checksums) in [
        ("floor", false, false),
        ("floor_with_files", true, false),
        ("floor_with_checksums", true, true),
    ] {
        let floor = &report[key];
        assert_eq!(floor["processes"], 4, "{floor}");
        assert_eq!(floor["saves_each"], 12, "{floor}");
        assert_eq!(floor["with_files"], with_files, "{floor}");
        assert_eq!(floor["with_checksums"], with_checksums, "{floor}");
        assert!(floor["saves_per_s"].as_f64().unwrap() > 0.0, "{floor}");
        assert!(floor["cpu_us_per_save"].as_f64().unwrap() > 0.0, "{floor}");
    }
    assert!(report.get("peer").is_none(), "{report}");
    assert_eq!(
        std::fs::read_dir(&scratch).unwrap().count(),
        0,
        "bench left files in its scratch directory"
    );
    // The table, in the command line's words.
    let out = sb
        .caf(&[
            "bench",
            "--concurrent",
            "2",
            "--saves",
            "3",
            "--scratch",
            s(&scratch),
        ])
        .ok();
    assert!(out.out().contains("SAVES/S"), "{}", out.describe());
    for row in [
        "floor: appends, one fdatasync each",
        "floor: appends and files",
        "floor: appends, checksummed files",
    ] {
        assert!(out.out().contains(row), "{row}: {}", out.describe());
    }
    assert!(
        out.err()
            .contains("measuring files: 2 writers x 3 saves into one store"),
        "{}",
        out.describe()
    );
}

#[test]
fn concurrent_writers_lose_nothing_on_postgres() {
    let Some(base) = pg_base("concurrent_writers_lose_nothing_on_postgres") else {
        return;
    };
    let sb = Sandbox::new();
    let args = [
        "--db",
        base.as_str(),
        "--json",
        "bench",
        "--mode",
        "postgres",
        "--concurrent",
        "4",
        "--saves",
        "10",
    ];
    let report = sb.caf_plain(&args, &[]).ok().json();
    check_mode(&report, "postgres", 4, 10);
}

#[test]
fn worker_options_are_internal_and_checked() {
    let sb = Sandbox::new();
    // --worker without --worker-dir is bad usage, and neither is in the help.
    sb.caf(&["bench", "--worker", "1"]).fails(2);
    let help = sb.caf(&["bench", "--help"]).ok();
    assert!(help.out().contains("--concurrent"), "{}", help.describe());
    assert!(!help.out().contains("--worker"), "{}", help.describe());
}
