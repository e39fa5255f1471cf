//! Hostile surroundings: what caf keeps in `DIR/.caf/` is never a symbolic link it would read
//! or write through (a link could point at another store or a system file).

#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use caf_core::{Error, FileStore};
use caf_tests::cli::{files, Sandbox};
use std::os::unix::fs::symlink;

/// A store made by `caf demo --steps 2`, and a directory outside it with one file.
fn setup() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    sb.caf(&["demo", "--steps", "2"]).ok();
    let outside = sb.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), b"do not touch").unwrap();
    (sb, outside)
}

#[test]
fn a_linked_caf_directory_is_refused_and_nothing_is_written_through_it() {
    let (sb, outside) = setup();
    let meta = sb.store().join(".caf");
    std::fs::rename(&meta, sb.path().join("moved-caf")).unwrap();
    symlink(&outside, &meta).unwrap();
    let before = files(&outside);
    match FileStore::open(sb.store()) {
        Err(Error::LinkedInternal { path }) => assert_eq!(path, meta),
        other => panic!("expected LinkedInternal, got {other:?}"),
    }
    for args in [&["list"][..], &["verify"], &["log"]] {
        let out = sb.caf(args).fails(1);
        assert_eq!(out.errors().len(), 1, "{}", out.describe());
        assert!(out.err().contains("symbolic link"), "{}", out.describe());
    }
    let file = sb.path().join("parts.json");
    std::fs::write(&file, br#"{"agent_id": "a"}"#).unwrap();
    sb.caf(&["save", "-e", "e", "-f", caf_tests::cli::s(&file)])
        .fails(1);
    assert_eq!(
        files(&outside),
        before,
        "nothing was written through the link"
    );
}

#[test]
fn linked_entries_inside_caf_are_refused() {
    for name in ["tmp", "index.jsonl", "caf.db"] {
        let (sb, outside) = setup();
        let entry = sb.store().join(".caf").join(name);
        let target = outside.join(name);
        if entry.is_dir() {
            std::fs::remove_dir_all(&entry).unwrap();
            std::fs::create_dir(&target).unwrap();
        } else {
            std::fs::copy(&entry, &target).unwrap();
            std::fs::remove_file(&entry).unwrap();
        }
        symlink(&target, &entry).unwrap();
        let before = files(&outside);
        let out = sb.caf(&["demo", "--steps", "2"]).fails(1);
        assert!(
            out.err().contains("symbolic link"),
            "{name}: {}",
            out.describe()
        );
        assert!(out.err().contains(name), "{name}: {}", out.describe());
        assert_eq!(files(&outside), before, "{name}: written through the link");
    }
}

#[test]
fn every_internal_name_is_refused_as_a_link_even_one_not_made_yet() {
    // The lock, the store id, the boot markers, the database marker, and SQLite's -wal and
    // -shm files (which SQLite itself would follow).
    for name in [
        "lock",
        "store-id",
        "unflushed",
        "has-db",
        "caf.db-wal",
        "caf.db-shm",
    ] {
        let (sb, outside) = setup();
        let entry = sb.store().join(".caf").join(name);
        let target = outside.join(name);
        match std::fs::symlink_metadata(&entry) {
            Ok(m) if m.is_dir() => {
                std::fs::remove_dir_all(&entry).unwrap();
                std::fs::create_dir(&target).unwrap();
            }
            Ok(_) => {
                std::fs::copy(&entry, &target).unwrap();
                std::fs::remove_file(&entry).unwrap();
            }
            Err(_) => std::fs::write(&target, b"outside").unwrap(),
        }
        symlink(&target, &entry).unwrap();
        let before = files(&outside);
        let out = sb.caf(&["demo", "--steps", "2"]).fails(1);
        assert!(
            out.err().contains("symbolic link") && out.err().contains(name),
            "{name}: {}",
            out.describe()
        );
        assert_eq!(files(&outside), before, "{name}: written through the link");
    }
}

#[test]
fn a_link_planted_in_place_of_a_spare_file_is_not_written_through() {
    // A hybrid store makes empty spare files in .caf/tmp for its next saves; one replaced by a
    // link to a file elsewhere must not be written into.
    let (sb, outside) = setup();
    let victim = outside.join("precious.txt");
    let location = caf_sql::Location::new(sb.store(), None, false);
    let store = location.open(caf_sql::Access::Update).unwrap();
    let tmp = sb.store().join(".caf/tmp");
    let spares = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(".caf-spare-")
            })
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut made = Vec::new();
    // The flusher makes them after a save.
    let mut c = store
        .load(&caf_core::CheckpointId::new(sb.list_ids()[0].as_str()).unwrap())
        .unwrap();
    while made.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no spare file was made"
        );
        c.id = caf_core::CheckpointId::generate();
        store.save(&c).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        made = spares();
    }
    for spare in &made {
        std::fs::remove_file(spare).unwrap();
        symlink(&victim, spare).unwrap();
    }
    for _ in 0..made.len() + 2 {
        c.id = caf_core::CheckpointId::generate();
        store.save(&c).unwrap();
        assert_eq!(store.load(&c.id).unwrap(), c);
    }
    drop(store);
    assert!(
        std::fs::read(&victim).unwrap() == b"do not touch",
        "the file behind the planted link was written"
    );
}

/// `caf ARGS` in the sandbox's store with stdout going to `stdout`; (exit code, stderr).
fn caf_into(sb: &Sandbox, args: &[&str], stdout: std::process::Stdio) -> (i32, String) {
    let out = std::process::Command::new(caf_tests::cli::caf_bin())
        .arg("--dir")
        .arg(sb.store())
        .args(args)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_full_output_fails_cleanly_and_a_closed_pipe_is_not_an_error() {
    let (sb, _) = setup();
    let id = sb.list(&[])[0]["id"].as_str().unwrap().to_string();
    if std::path::Path::new("/dev/full").exists() {
        for args in [&["export", id.as_str()][..], &["--json", "list"], &["list"]] {
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let (code, err) = caf_into(&sb, args, full.into());
            assert_eq!(code, 1, "{args:?}: {err}");
            let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
            assert_eq!(errors.len(), 1, "{args:?}: {err}");
            assert!(errors[0].contains("No space left on device"), "{err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    // A reader that stops early (`caf list --json | head -c 1`): not an error, no panic.
    let mut child = std::process::Command::new(caf_tests::cli::caf_bin())
        .arg("--dir")
        .arg(sb.store())
        .args(["--json", "list"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// `caf sql` on PostgreSQL refuses writes through the connection itself, and cannot act
/// outside the database even when the configured user is a superuser (it takes the role
/// `pg_read_all_data`). Runs with `CAF_TEST_POSTGRES_URL`.
#[test]
fn caf_sql_on_postgres_cannot_write_or_run_programs() {
    let Ok(base) = std::env::var("CAF_TEST_POSTGRES_URL") else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED caf_sql_on_postgres_cannot_write_or_run_programs: set CAF_TEST_POSTGRES_URL"
        );
        return;
    };
    let db = caf_sql::ScratchDatabase::create(&base).unwrap();
    let sb = Sandbox::new();
    let url = db.url().to_string();
    let caf = |args: &[&str]| {
        let mut all = vec!["--db", url.as_str(), "--no-files"];
        all.extend_from_slice(args);
        sb.caf_plain(&all, &[])
    };
    caf(&["demo", "--steps", "2"]).ok();
    let marker = sb.path().join("pwned");
    let copy = format!("COPY (SELECT 1) TO PROGRAM 'touch {}'", marker.display());
    for statement in [
        "DELETE FROM checkpoints",
        "DROP TABLE thoughts",
        copy.as_str(),
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()",
    ] {
        let out = caf(&["sql", statement]).fails(1);
        assert_eq!(out.errors().len(), 1, "{statement}: {}", out.describe());
    }
    assert!(!marker.exists(), "COPY TO PROGRAM ran a program");
    // A function that writes runs inside a read-only transaction that is rolled back.
    caf(&["sql", "SELECT lo_create(0)"]).ok();
    let n = caf(&[
        "--json",
        "sql",
        "SELECT count(*) AS n FROM pg_largeobject_metadata",
    ])
    .ok()
    .json();
    assert_eq!(n["rows"][0][0], 0, "{n}");
    let n = caf(&["--json", "sql", "SELECT count(*) AS n FROM checkpoints"])
        .ok()
        .json();
    assert_eq!(n["rows"][0][0], 3, "{n}");
}
