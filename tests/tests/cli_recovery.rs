//! Recovery through the command line: `caf verify [--repair [--force]]`; `inspect` showing the
//! database's copy of a damaged file (and reporting a damaged file once); the warning of
//! `stats`, `query` and `sql` when files and database disagree; `inspect`'s integrity line for
//! a 0.0.1 file. SQLite always; PostgreSQL when `CAF_TEST_POSTGRES_URL` is set.

#![allow(clippy::unwrap_used)]

use caf_tests::cli::{files, fixtures, s, Sandbox};
use caf_tests::recovery::corrupt;
use serde_json::Value;

/// A sandbox with a demo store (files plus their SQLite database); its ids, newest first.
fn demo() -> (Sandbox, Vec<String>) {
    let sb = Sandbox::new();
    sb.demo(&[]);
    let ids = sb.list_ids();
    (sb, ids)
}

/// The lines of stderr.
fn err_lines(out: &caf_tests::cli::Out) -> Vec<String> {
    out.err().lines().map(str::to_string).collect()
}

#[test]
fn verify_finds_nothing_in_a_fresh_store_and_each_problem_once_in_a_damaged_one() {
    let (sb, ids) = demo();
    let out = sb.caf(&["verify"]).ok();
    assert!(out.out().contains("no problems"), "{}", out.describe());
    assert!(out.err().is_empty(), "{}", out.describe());

    corrupt(&sb.path_of(&ids[0]), false);
    std::fs::copy(sb.path_of(&ids[2]), sb.path_of(&ids[1])).unwrap();
    let before = files(&sb.store());
    let out = sb.caf(&["verify"]).fails(1);
    assert_eq!(files(&sb.store()), before, "verify changed a file");
    let errors = out.errors();
    assert_eq!(
        errors.len(),
        3,
        "two problems and the count: {}",
        out.describe()
    );
    let newest = sb.path_of(&ids[0]).display().to_string();
    let corrupted = errors.iter().find(|l| l.contains(&newest)).unwrap();
    assert!(
        corrupted.contains("checksum mismatch")
            && corrupted.contains("--repair writes it back from the database"),
        "{corrupted}"
    );
    let misnamed = &sb.path_of(&ids[1]).display().to_string();
    assert!(errors
        .iter()
        .any(|l| l.contains(misnamed) && l.contains(&format!("holds checkpoint {}", ids[2]))));
    assert_eq!(errors[2], "error: 2 problems found");

    let report = sb.caf(&["--json", "verify"]).fails(1).json();
    let problems = report["problems"].as_array().unwrap();
    let kinds: Vec<(&str, &str, &str)> = problems
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap(),
                p["area"].as_str().unwrap(),
                p["remedy"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("corrupted", "file", "restore_from_database")),
        "{report}"
    );
    assert!(
        kinds.contains(&("wrong_name", "file", "restore_from_database")),
        "{report}"
    );
    assert_eq!(report["files"], ids.len());
    assert_eq!(report["rows"], ids.len());
}

#[test]
fn verify_repair_writes_damaged_files_back_from_the_database_byte_for_byte() {
    let (sb, ids) = demo();
    let original = std::fs::read(sb.path_of(&ids[0])).unwrap();
    corrupt(&sb.path_of(&ids[0]), false);
    let damaged = std::fs::read(sb.path_of(&ids[0])).unwrap();
    let out = sb.caf(&["verify", "--repair"]).ok();
    assert!(out.out().contains("restored"), "{}", out.describe());
    assert!(
        out.out().contains("1 problem found, 1 repaired, 0 left"),
        "{}",
        out.describe()
    );
    // What was found and fixed is one warning; nothing is an error.
    let lines = err_lines(&out);
    assert_eq!(lines.len(), 1, "{}", out.describe());
    assert!(lines[0].starts_with("warning: repaired ") && lines[0].contains(&ids[0]));
    assert_eq!(std::fs::read(sb.path_of(&ids[0])).unwrap(), original);
    let q = sb.store().join(".caf/quarantine");
    assert_eq!(
        std::fs::read(q.join(format!("{}.json", ids[0]))).unwrap(),
        damaged
    );
    assert!(q.join(format!("{}.json.why.txt", ids[0])).is_file());
    sb.caf(&["verify"]).ok();
}

#[test]
fn verify_repair_without_a_database_quarantines_and_never_deletes() {
    let (sb, ids) = demo();
    // A store without a database: neither the database nor the mark that it had one (a
    // database deleted from a store that had one is a problem of its own, rebuilt by --repair:
    // tests/tests/faults/sqlite_faults.rs).
    std::fs::remove_file(sb.store().join(".caf/caf.db")).unwrap();
    std::fs::remove_file(sb.store().join(".caf/has-db")).unwrap();
    corrupt(&sb.path_of(&ids[3]), false);
    let damaged = std::fs::read(sb.path_of(&ids[3])).unwrap();
    let out = sb.caf(&["--json", "verify", "--repair"]).ok().json();
    assert_eq!(out["repairs"][0]["action"], "quarantined", "{out}");
    assert!(
        out["after"]["problems"].as_array().unwrap().is_empty(),
        "{out}"
    );
    assert!(!sb.path_of(&ids[3]).exists());
    let q = sb.store().join(".caf/quarantine");
    assert_eq!(
        std::fs::read(q.join(format!("{}.json", ids[3]))).unwrap(),
        damaged
    );
    let note = std::fs::read_to_string(q.join(format!("{}.json.why.txt", ids[3]))).unwrap();
    assert!(note.contains("checksum mismatch"), "{note}");
    assert_eq!(sb.list_ids().len(), ids.len() - 1);
    sb.caf(&["verify"]).ok();
}

#[test]
fn rows_with_no_file_are_kept_unless_forced() {
    let (sb, ids) = demo();
    std::fs::remove_file(sb.path_of(&ids[4])).unwrap();
    let out = sb.caf(&["verify"]).fails(1);
    assert!(
        out.errors()[0].contains(&format!(
            "{}: the database holds it, but it has no file",
            ids[4]
        )),
        "{}",
        out.describe()
    );
    let out = sb.caf(&["verify", "--repair"]).fails(1);
    assert!(out.err().contains("--repair --force"), "{}", out.describe());
    sb.caf(&["verify", "--repair", "--force"]).ok();
    let saved = sb
        .store()
        .join(format!(".caf/quarantine/{}.database.json", ids[4]));
    assert!(saved.is_file());
    sb.caf(&["verify"]).ok();
    // The saved copy can be imported back.
    sb.caf(&["import", s(&saved)]).ok();
    assert_eq!(sb.list_ids().len(), ids.len());
}

#[test]
fn verify_refuses_bad_usage_and_missing_stores() {
    let (sb, _) = demo();
    sb.caf(&["verify", "--force"]).fails(2);
    let url = format!("sqlite://{}", sb.store().join(".caf/caf.db").display());
    sb.caf(&["--db", &url, "--no-files", "verify"]).fails(2);
    let out = sb.caf_plain(&["--dir", "nowhere", "verify"], &[]).fails(1);
    assert!(
        out.err().contains("no checkpoint directory"),
        "{}",
        out.describe()
    );
}

#[test]
fn stats_query_and_sql_warn_when_files_and_database_disagree() {
    let (sb, ids) = demo();
    let commands: [&[&str]; 3] = [
        &["stats"],
        &["query", "tool-calls"],
        &["sql", "SELECT COUNT(*) FROM checkpoints"],
    ];
    for c in commands {
        let out = sb.caf(c).ok();
        assert!(out.err().is_empty(), "{}", out.describe());
    }
    corrupt(&sb.path_of(&ids[0]), false);
    for c in commands {
        let out = sb.caf(c).ok();
        assert_eq!(
            err_lines(&out),
            [format!(
                "warning: 1 checkpoint differs between the files in {} and the database (1 damaged file); run `caf verify`",
                sb.store().display()
            )],
            "{}",
            out.describe()
        );
    }
    sb.caf(&["verify", "--repair"]).ok();
    let out = sb.caf(&["stats"]).ok();
    assert!(out.err().is_empty(), "{}", out.describe());
}

#[test]
fn inspect_shows_the_database_copy_of_a_damaged_file_and_reports_a_problem_once() {
    let (sb, ids) = demo();
    let clean = sb.caf(&["inspect", &ids[0]]).ok().out();
    corrupt(&sb.path_of(&ids[0]), false);
    let out = sb.caf(&["inspect", &ids[0]]).ok();
    let lines = err_lines(&out);
    assert_eq!(lines.len(), 1, "{}", out.describe());
    assert!(
        lines[0].starts_with("warning: ")
            && lines[0].contains(&sb.path_of(&ids[0]).display().to_string())
            && lines[0].contains("checksum mismatch")
            && lines[0].contains("showing the database's intact copy"),
        "{}",
        lines[0]
    );
    assert!(
        out.out().contains("integrity ok (the database's copy)"),
        "{}",
        out.out()
    );
    let thoughts = |o: &str| o.split("Last thoughts").nth(1).map(str::to_string);
    assert_eq!(thoughts(&out.out()), thoughts(&clean));
    let json: Value = sb.caf(&["--json", "inspect", &ids[0]]).ok().json();
    assert_eq!(json["id"], ids[0].as_str());
    // diff reads through the same path.
    sb.caf(&["diff", &ids[0]]).ok();

    // Without a database: the problem is one error line, not a warning and an error.
    std::fs::remove_file(sb.store().join(".caf/caf.db")).unwrap();
    let out = sb.caf(&["inspect", &ids[0]]).fails(1);
    let lines = err_lines(&out);
    assert_eq!(lines.len(), 1, "{}", out.describe());
    assert!(lines[0].contains("checksum mismatch"), "{}", lines[0]);
}

#[test]
fn inspect_says_a_0_0_1_file_has_no_integrity() {
    let sb = Sandbox::new();
    let v0 = fixtures().join("v0.0.1/ts-caf.json");
    let out = sb.caf(&["inspect", s(&v0)]).ok().out();
    assert!(out.contains("no integrity (format 0.0.1)"), "{out}");
    assert!(!out.contains("integrity ok"), "{out}");
    let v1 = fixtures().join("v1.1.0/full.json");
    let out = sb.caf(&["inspect", s(&v1)]).ok().out();
    assert!(out.contains("integrity ok"), "{out}");
    // By id, from a store holding the 0.0.1 file as it is.
    std::fs::create_dir_all(sb.store()).unwrap();
    std::fs::copy(&v0, sb.path_of("m6sewr9c_4fz8q1lma")).unwrap();
    let out = sb.caf(&["inspect", "m6sewr9c_4fz8q1lma"]).ok().out();
    assert!(
        out.contains("read as 0.0.1") && out.contains("no integrity (format 0.0.1)"),
        "{out}"
    );
}

#[test]
fn verify_and_repair_with_postgres() {
    let Some(base) = std::env::var("CAF_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("SKIPPED verify_and_repair_with_postgres: set CAF_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)");
        return;
    };
    let db = caf_sql::ScratchDatabase::create(&base).unwrap();
    let sb = Sandbox::new();
    sb.caf(&["--db", db.url(), "demo"]).ok();
    let ids = sb.list_ids();
    sb.caf(&["--db", db.url(), "verify"]).ok();
    let original = std::fs::read(sb.path_of(&ids[0])).unwrap();
    corrupt(&sb.path_of(&ids[0]), false);
    let out = sb.caf(&["--db", db.url(), "stats"]).ok();
    assert!(out.err().contains("1 damaged file"), "{}", out.describe());
    let out = sb.caf(&["--db", db.url(), "inspect", &ids[0]]).ok();
    assert!(
        out.err().contains("showing the database's intact copy"),
        "{}",
        out.describe()
    );
    sb.caf(&["--db", db.url(), "verify"]).fails(1);
    sb.caf(&["--db", db.url(), "verify", "--repair"]).ok();
    assert_eq!(std::fs::read(sb.path_of(&ids[0])).unwrap(), original);
    sb.caf(&["--db", db.url(), "verify"]).ok();
}
