//! The database through the command line: `caf demo` indexes its checkpoints in SQLite next to
//! the files and ends with statistics from SQL; `caf stats`, `caf query`, `caf sql` (read-only,
//! refused by the connection), `caf sync`, `caf reindex`; saves and deletes keep the database in
//! step (hybrid); `--db URL --no-files` keeps checkpoints in a database only — SQLite always,
//! PostgreSQL when `CAF_TEST_POSTGRES_URL` is set (skipped loudly otherwise).

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{fixtures, s, Sandbox};
use serde_json::Value;

fn count(sb: &Sandbox, sql: &str) -> i64 {
    let out = sb.caf(&["--json", "sql", sql]).ok().json();
    out["rows"][0][0]
        .as_i64()
        .unwrap_or_else(|| panic!("{out}"))
}

#[test]
fn demo_indexes_in_sqlite_and_reports_stats_from_sql() {
    let sb = Sandbox::new();
    let out = sb.caf(&["demo", "--deterministic"]).ok().out();
    assert!(out.contains("From SQL"), "{out}");
    // The run (9 checkpoints, 4 pruned) and its branch (3 checkpoints).
    assert!(
        out.contains("2 executions, 8 checkpoints, 27 thoughts, 13 tool calls (0 failed)"),
        "{out}"
    );
    assert!(sb.store().join(".caf/caf.db").is_file());
    let report = sb.demo(&["--deterministic"]); // a replay: same ids
    assert_eq!(report["stats"]["totals"]["checkpoints"], 8, "{report}");
    let stats = sb.caf(&["--json", "stats"]).ok().json();
    assert_eq!(stats["totals"]["executions"], 2);
    assert_eq!(stats["totals"]["checkpoints"], sb.list(&[]).len());
    let exec = stats["executions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["status"] == "completed")
        .unwrap();
    assert_eq!(exec["status"], "completed");
    assert!(exec["task"].as_str().unwrap().starts_with("Compare three"));
    assert_eq!(exec["tool_calls_by_tool"]["search"], 2);
    let id = exec["execution_id"].as_str().unwrap();
    let one = sb.caf(&["--json", "stats", "--execution", id]).ok().json();
    assert_eq!(one["executions"].as_array().unwrap().len(), 1);
    sb.caf(&["stats", "--execution", "exec_nope"]).fails(1);
    let table = sb.caf(&["stats"]).ok().out();
    assert!(
        table.contains("EXECUTION") && table.contains("completed"),
        "{table}"
    );
}

#[test]
fn queries_find_tool_calls_and_thoughts() {
    let sb = Sandbox::new();
    sb.demo(&[]);
    let calls = sb
        .caf(&["--json", "query", "tool-calls", "--tool", "search"])
        .ok()
        .json();
    let calls = calls.as_array().unwrap();
    assert_eq!(calls.len(), 3, "two in the run, one on its branch");
    for c in calls {
        assert_eq!(c["call"]["tool_id"], "search");
        assert!(c["call"]["args"]["query"].is_string(), "{c}");
        assert!(c["call"]["result"].is_string(), "{c}");
        assert!(c["execution_id"].as_str().unwrap().starts_with("exec_"));
        assert!(c["first_checkpoint_id"]
            .as_str()
            .unwrap()
            .starts_with("ckpt_"));
    }
    // 8 in the run; its branch holds the 3 of the first steps it was forked from, and 2 more.
    let all = sb.caf(&["--json", "query", "tool-calls"]).ok().json();
    assert_eq!(all.as_array().unwrap().len(), 13);
    let failed = sb
        .caf(&["--json", "query", "tool-calls", "--failed"])
        .ok()
        .json();
    assert_eq!(failed.as_array().unwrap().len(), 0);
    // Case-insensitive, LIKE wildcards taken literally.
    let hits = sb
        .caf(&["--json", "query", "thoughts", "--contains", "STEP 3:"])
        .ok()
        .json();
    let hits = hits.as_array().unwrap();
    assert_eq!(hits.len(), 2, "in the run and its branch: {hits:?}");
    assert!(hits[0]["thought"]["content"]
        .as_str()
        .unwrap()
        .starts_with("Step 3:"));
    let none = sb
        .caf(&["--json", "query", "thoughts", "--contains", "%"])
        .ok()
        .json();
    assert_eq!(none.as_array().unwrap().len(), 0);
    let out = sb
        .caf(&["query", "thoughts", "--contains", "step"])
        .ok()
        .out();
    assert!(
        out.contains("THOUGHT") && out.contains("reasoning"),
        "{out}"
    );
}

#[test]
fn sql_is_read_only_by_the_connection() {
    let sb = Sandbox::new();
    sb.demo(&[]);
    let out = sb
        .caf(&[
            "--json",
            "sql",
            "SELECT id, step_number FROM checkpoints ORDER BY step_number LIMIT 2",
        ])
        .ok()
        .json();
    assert_eq!(out["columns"], serde_json::json!(["id", "step_number"]));
    assert_eq!(out["rows"].as_array().unwrap().len(), 2);
    for write in [
        "DELETE FROM checkpoints",
        "UPDATE checkpoints SET step_number = 0",
        "INSERT INTO checkpoint_labels (checkpoint_id, label) SELECT id, 'x' FROM checkpoints",
        "DROP TABLE thoughts",
        "CREATE TABLE evil (x INTEGER)",
    ] {
        let out = sb.caf(&["sql", write]).fails(1);
        assert!(
            out.err().contains("read-only") || out.err().contains("readonly"),
            "{}",
            out.describe()
        );
    }
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 8);
    // `demo` on the final checkpoint, `branch` on the branch's two steps.
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoint_labels"), 3);
    sb.caf(&["sql", "SELEKT nonsense"]).fails(1);
}

/// `caf sql` runs exactly one statement: it refuses several (SQLite would run the first and
/// drop the rest) and an empty text, with one clear error line, and changes nothing.
#[test]
fn sql_refuses_several_statements_and_an_empty_one() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let out = sb
        .caf(&["sql", "SELECT 1; DELETE FROM checkpoints"])
        .fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.err().contains("2 statements") && out.err().contains("DELETE FROM checkpoints"),
        "{}",
        out.describe()
    );
    assert!(out.stdout.is_empty(), "{}", out.describe());
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 3);
    for empty in ["", "  ", "/* nothing */"] {
        let out = sb.caf(&["sql", empty]).fails(1);
        assert!(
            out.err().contains("no SQL statement given"),
            "{}",
            out.describe()
        );
        assert!(!out.err().contains("Detected"), "{}", out.describe());
    }
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints;"), 3);
}

#[test]
fn saves_and_deletes_keep_the_database_in_step() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "3", "--crash-at", "0"]);
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 4);
    // import (hybrid): a 0.0.1 file lands in the files and the database.
    let v0 = fixtures().join("v0.0.1").join("seed-example.json");
    sb.caf(&["import", s(&v0)]).ok();
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 5);
    assert_eq!(count(&sb, "SELECT count(*) FROM executions"), 2);
    // delete one, then a whole execution
    let newest = sb.list(&[])[0]["id"].as_str().unwrap().to_string();
    sb.caf(&["delete", &newest]).ok();
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 4);
    sb.caf(&["delete", "--execution", "exec_xyz"]).ok();
    assert_eq!(
        count(
            &sb,
            "SELECT count(*) FROM checkpoints WHERE execution_id = 'exec_xyz'"
        ),
        0
    );
}

#[test]
fn sync_brings_in_files_and_reindex_rebuilds() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "3", "--crash-at", "0"]);
    // Files saved elsewhere: another demo's checkpoints copied in by hand.
    let other = Sandbox::new();
    other.demo(&["--steps", "2", "--seed", "7", "--crash-at", "0"]);
    for (name, bytes) in caf_tests::cli::json_files(&other.store()) {
        std::fs::write(sb.store().join(name), bytes).unwrap();
    }
    assert_eq!(
        count(&sb, "SELECT count(*) FROM checkpoints"),
        4,
        "not yet synced"
    );
    let report = sb.caf(&["--json", "sync"]).ok().json();
    assert_eq!(report["added"], 3, "{report}");
    assert_eq!(report["unchanged"], 4, "{report}");
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 7);
    let again = sb.caf(&["--json", "sync"]).ok().json();
    assert_eq!(again["added"], 0);
    // Reindex from nothing gives the same database content.
    let before = sb.caf(&["--json", "stats"]).ok().json();
    for f in ["caf.db", "caf.db-wal", "caf.db-shm"] {
        let _ = std::fs::remove_file(sb.store().join(".caf").join(f));
    }
    let out = sb.caf(&["stats"]).fails(1);
    assert!(
        out.err().contains("database is missing") && out.err().contains("caf reindex"),
        "{}",
        out.describe()
    );
    let report = sb.caf(&["--json", "reindex"]).ok().json();
    assert_eq!(report["checkpoints"], 7, "{report}");
    assert_eq!(report["executions"], 2, "{report}");
    let after = sb.caf(&["--json", "stats"]).ok().json();
    assert_eq!(before, after);
}

/// Unreadable files in the directory: `sync` and `reindex` warn about each, count them in the
/// summary and the JSON, bring in the rest, and exit 1 unless `--allow-skipped`.
#[test]
fn sync_and_reindex_report_skipped_files_and_fail_unless_allowed() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "3", "--crash-at", "0"]);
    let other = Sandbox::new();
    other.demo(&["--steps", "2", "--seed", "7", "--crash-at", "0"]);
    for (name, bytes) in caf_tests::cli::json_files(&other.store()) {
        std::fs::write(sb.store().join(name), bytes).unwrap();
    }
    let broken = ["ckpt_broken-1.json", "ckpt_broken-2.json"];
    for name in broken {
        std::fs::write(sb.store().join(name), b"{ not json").unwrap();
    }
    let check_warnings = |out: &caf_tests::cli::Out| {
        let warnings: Vec<String> = out
            .err()
            .lines()
            .filter(|l| l.starts_with("warning: skipped unreadable file: "))
            .map(str::to_string)
            .collect();
        assert_eq!(warnings.len(), 2, "{}", out.describe());
        for name in broken {
            assert!(
                warnings.iter().any(|w| w.contains(name)),
                "{name}: {}",
                out.describe()
            );
        }
        let errors = out.errors();
        assert_eq!(errors.len(), 1, "{}", out.describe());
        assert!(
            errors[0].contains("2 unreadable files skipped")
                && errors[0].contains("--allow-skipped"),
            "{}",
            out.describe()
        );
    };
    // sync: the readable files go in all the same.
    let out = sb.caf(&["sync"]).fails(1);
    check_warnings(&out);
    assert!(
        out.out()
            .contains("3 added, 0 replaced, 4 unchanged, 2 skipped (unreadable)"),
        "{}",
        out.describe()
    );
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 7);
    let out = sb.caf(&["--json", "sync"]).fails(1);
    check_warnings(&out);
    let report = out.json();
    assert_eq!(report["skipped"], 2, "{report}");
    assert_eq!(report["problems"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["unchanged"], 7, "{report}");
    let out = sb.caf(&["--json", "sync", "--allow-skipped"]).ok();
    assert_eq!(out.json()["skipped"], 2);
    assert_eq!(out.err().lines().count(), 2, "{}", out.describe());
    // reindex: rebuilt from the readable files.
    let out = sb.caf(&["reindex"]).fails(1);
    check_warnings(&out);
    assert!(
        out.out()
            .contains("7 checkpoints of 2 executions, 2 skipped (unreadable)"),
        "{}",
        out.describe()
    );
    let report = sb.caf(&["--json", "reindex"]).fails(1).json();
    assert_eq!(report["skipped"], 2, "{report}");
    assert_eq!(report["checkpoints"], 7, "{report}");
    sb.caf(&["reindex", "--allow-skipped"]).ok();
    assert_eq!(count(&sb, "SELECT count(*) FROM checkpoints"), 7);
    // Without broken files, nothing to allow: exit 0.
    for name in broken {
        std::fs::remove_file(sb.store().join(name)).unwrap();
    }
    let out = sb.caf(&["sync"]).ok();
    assert!(out.err().is_empty(), "{}", out.describe());
    let out = sb.caf(&["reindex"]).ok();
    assert!(
        out.out().contains("7 checkpoints of 2 executions") && !out.out().contains("skipped"),
        "{}",
        out.describe()
    );
}

fn database_only(sb: &Sandbox, url: &str) {
    let run = |args: &[&str]| {
        let mut all = vec!["--db", url, "--no-files"];
        all.extend_from_slice(args);
        sb.caf_plain(&all, &[])
    };
    let report = run(&["--json", "demo", "--steps", "3"]).ok().json();
    assert_eq!(report["checkpoints"], 4, "{report}");
    assert!(!sb.store().exists(), "database-only mode wrote files");
    let list: Value = run(&["--json", "list"]).ok().json();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 4);
    let id = list[0]["id"].as_str().unwrap();
    let shown = run(&["inspect", id]).ok().out();
    assert!(shown.contains("Reason      completed"), "{shown}");
    let doc = run(&["--json", "inspect", id]).ok().json();
    assert_eq!(doc["id"], id);
    let diff = run(&["--json", "diff", id]).ok().json();
    assert_eq!(diff["to"], id);
    let stats = run(&["--json", "stats"]).ok().json();
    assert_eq!(stats["totals"]["checkpoints"], 4);
    run(&["delete", id]).ok();
    assert_eq!(
        run(&["--json", "list"])
            .ok()
            .json()
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn database_only_on_sqlite() {
    let sb = Sandbox::new();
    let url = format!("sqlite://{}", sb.path().join("only.db").display());
    database_only(&sb, &url);
}

#[test]
fn database_only_on_postgres() {
    let Some(base) = std::env::var("CAF_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("SKIPPED database_only_on_postgres: set CAF_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)");
        return;
    };
    let db = caf_sql::ScratchDatabase::create(&base).unwrap();
    let sb = Sandbox::new();
    database_only(&sb, db.url());
}

#[test]
fn no_files_needs_a_database() {
    let sb = Sandbox::new();
    let out = sb.caf(&["--no-files", "list"]).fails(2);
    assert!(out.err().contains("--db"), "{}", out.describe());
}

#[test]
fn bench_measures_the_database_modes() {
    let sb = Sandbox::new();
    let out = sb
        .bench_json(&[
            "--executions",
            "2",
            "--steps",
            "12",
            "--mode",
            "files+sqlite",
            "--mode",
            "sqlite",
        ])
        .json();
    let modes: Vec<&str> = out
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["files+sqlite", "sqlite"]);
    let sqlite = &out[1];
    for key in [
        "save_us",
        "restore_us",
        "list_us",
        "floor_us",
        "sync_us",
        "sync_at_10_us",
        "sync_at_last_us",
        "checksum_at_last_us",
    ] {
        assert!(
            sqlite[key].as_f64().is_some_and(|v| v > 0.0),
            "{key}: {sqlite}"
        );
    }
    // The wait for the checksum is part of the SQL part (zero when it was there in time).
    let wait = sqlite["sync_wait_at_last_us"].as_f64().unwrap();
    assert!(
        (0.0..=sqlite["sync_at_last_us"].as_f64().unwrap()).contains(&wait),
        "{sqlite}"
    );
    assert!(out[0].get("checksum_at_last_us").is_none(), "{}", out[0]);
    // The default mode writes its rows after the save returns: that transaction is timed, and
    // only there (the sqlite mode's rows are its SQL part).
    for key in ["rows_after_at_10_us", "rows_after_at_last_us"] {
        assert!(
            out[0][key].as_f64().is_some_and(|v| v > 0.0),
            "{key}: {}",
            out[0]
        );
        assert!(sqlite.get(key).is_none(), "{key}: {sqlite}");
    }
    // Both SQLite modes are set beside the rows floor (the least their rows cost), measured
    // on the same workload; it is not part of the mode's disk use.
    for mode in [&out[0], sqlite] {
        for key in [
            "rows_floor_us",
            "rows_floor_at_10_us",
            "rows_floor_at_last_us",
        ] {
            assert!(mode[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {mode}");
        }
    }
    assert!(sqlite["disk_bytes"].as_u64().unwrap() > 0);
    assert!(sqlite["whole_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        std::fs::read_dir(sb.scratch()).unwrap().count(),
        0,
        "bench left files behind"
    );
    let out = sb
        .caf(&[
            "bench",
            "--mode",
            "postgres",
            "--executions",
            "1",
            "--steps",
            "1",
        ])
        .fails(2);
    assert!(out.err().contains("--db"), "{}", out.describe());
}

/// PostgreSQL's row of the benchmark shows what its tables take on the server, not `0 B`.
#[test]
fn bench_measures_postgres_size_on_the_server() {
    let Some(base) = std::env::var("CAF_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("SKIPPED bench_measures_postgres_size_on_the_server: set CAF_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)");
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
        "--executions",
        "1",
        "--steps",
        "3",
    ];
    let out = sb.caf_plain(&args, &[]).ok().json();
    assert_eq!(out[0]["mode"], "postgres", "{out}");
    assert!(out[0]["disk_bytes"].as_u64().unwrap() > 0, "{out}");
}

/// Averages in `stats --json` are rounded (three decimals), not `2.3333333333333335`.
#[test]
fn stats_averages_are_rounded() {
    let sb = Sandbox::new();
    sb.demo(&["--executions", "3", "--steps", "2"]);
    let stats = sb.caf(&["--json", "stats"]).ok().json();
    let averages = stats["totals"]["averages"].as_object().unwrap();
    let mut fractional = 0;
    for (key, v) in averages {
        let f = v.as_f64().unwrap();
        assert_eq!((f * 1000.0).round() / 1000.0, f, "{key}: {stats}");
        fractional += usize::from(f.fract() != 0.0);
    }
    assert!(fractional > 0, "no average to round here: {stats}");
}

#[test]
fn reading_never_creates_a_database() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let env_db = sb.path().join("env.db");
    let url = format!("sqlite://{}", env_db.display());
    // A DATABASE_URL meant for something else: listing reads the files and creates nothing.
    let out = sb
        .caf_plain(
            &["--dir", &sb.store_str(), "list"],
            &[("DATABASE_URL", &url)],
        )
        .ok();
    assert!(out.out().contains("ID"), "{}", out.describe());
    assert!(!env_db.exists(), "list created {}", env_db.display());
    // Analytics on a database that does not exist: a clear error, and still nothing created.
    let missing = sb.path().join("missing.db");
    let murl = format!("sqlite://{}", missing.display());
    let out = sb.caf(&["--db", &murl, "stats"]).fails(1);
    assert!(out.err().contains("no database"), "{}", out.describe());
    sb.caf(&["--db", &murl, "--no-files", "list"]).fails(1);
    assert!(!missing.exists());
}

#[test]
fn passwords_stay_hidden() {
    let sb = Sandbox::new();
    let secret = "postgres://u:hunter2@127.0.0.1:1/db";
    let help = sb
        .caf_plain(&["--help"], &[("CAF_DATABASE_URL", secret)])
        .ok();
    assert!(!help.out().contains("hunter2"), "{}", help.describe());
    let out = sb.caf(&["--db", secret, "--no-files", "list"]).fails(1);
    assert!(!out.err().contains("hunter2"), "{}", out.describe());
    assert!(out.err().contains("u:***@"), "{}", out.describe());
    // A key/value connection string is not taken for a file name.
    let out = sb
        .caf(&["--db", "host=h password=hunter2", "--no-files", "list"])
        .fails(1);
    assert!(!out.err().contains("hunter2"), "{}", out.describe());
    assert_eq!(
        std::fs::read_dir(sb.path()).unwrap().count(),
        0,
        "a file was created"
    );
}

#[test]
fn reindex_keeps_checkpoints_that_only_the_database_has() {
    let sb = Sandbox::new();
    let db = sb.path().join("shared.db");
    let url = format!("sqlite://{}", db.display());
    sb.caf(&["--db", &url, "--no-files", "demo", "--steps", "2"])
        .ok();
    std::fs::create_dir_all(sb.store()).unwrap();
    let out = sb.caf(&["--db", &url, "reindex"]).fails(1);
    assert!(out.err().contains("--force"), "{}", out.describe());
    let left = sb
        .caf(&["--db", &url, "--no-files", "--json", "list"])
        .ok()
        .json();
    assert_eq!(
        left.as_array().unwrap().len(),
        3,
        "reindex dropped checkpoints"
    );
    sb.caf(&["--db", &url, "reindex", "--force"]).ok();
    let left = sb
        .caf(&["--db", &url, "--no-files", "--json", "list"])
        .ok()
        .json();
    assert_eq!(left.as_array().unwrap().len(), 0);
}

#[test]
fn read_only_sql_cannot_reach_other_files() {
    let sb = Sandbox::new();
    sb.demo(&["--steps", "2"]);
    let evil = sb.path().join("evil.db");
    for sql in [
        format!("ATTACH DATABASE '{}' AS x", evil.display()),
        format!("/* hi */ attach '{}' as x", evil.display()),
        format!("VACUUM INTO '{}'", evil.display()),
    ] {
        let out = sb.caf(&["sql", &sql]).fails(1);
        assert!(out.err().contains("read-only"), "{}", out.describe());
        assert!(!evil.exists(), "{sql} created a file");
    }
}

#[test]
fn importing_one_checkpoint_twice_in_one_call_saves_it_once() {
    let sb = Sandbox::new();
    let v1 = fixtures().join("v1.0.0").join("minimal.json");
    let out = sb.caf(&["--json", "import", s(&v1), s(&v1)]).ok().json();
    assert_eq!(out.as_array().unwrap().len(), 1, "{out}");
}

/// Each checkpoint's row holds its file's checksum. A hybrid save writes its rows while another
/// thread hashes and writes the file; the checksum goes into the row last, in the same
/// transaction, so no row is committed without it.
#[test]
fn each_row_holds_the_checksum_of_its_file() {
    let sb = Sandbox::new();
    sb.demo(&[]);
    let out = sb
        .caf(&["--json", "sql", "SELECT id, integrity FROM checkpoints"])
        .ok()
        .json();
    let rows = out["rows"].as_array().unwrap();
    assert!(rows.len() >= 8, "{out}");
    let files = caf_core::FileStore::open(sb.store()).unwrap();
    for row in rows {
        let id = row[0].as_str().unwrap();
        let bytes = std::fs::read(sb.store().join(format!("{id}.json"))).unwrap();
        let stated = caf_core::store::stated_integrity(&bytes).unwrap();
        // The checksum is the file's: loading verifies it.
        let id = caf_core::CheckpointId::new(id).unwrap();
        caf_core::CheckpointStore::load(&files, &id).unwrap();
        assert_eq!(row[1].as_str(), Some(stated.as_str()), "{id}");
    }
}
