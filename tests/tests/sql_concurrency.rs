//! Concurrent writers lose nothing: 8 processes (the `caf-sql-writer` binary) saving into one
//! SQLite file, created by them, never fail with "database is locked"; the same against
//! PostgreSQL (with `CAF_TEST_POSTGRES_URL`); and 8 threads with a store each, on both.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, ExecutionId};
use caf_core::{ListFilter, RuntimeState};
use caf_sql::SqlStore;
use serde_json::json;
use sql_common::{pg_base, pg_database};
use std::process::{Command, Stdio};
use std::sync::Arc;

const WRITERS: usize = 8;
const PER_WRITER: usize = 30;

/// Runs `WRITERS` writer processes at once against `url`, each on its own execution.
fn run_writer_processes(url: &str) {
    let exe = env!("CARGO_BIN_EXE_caf-sql-writer");
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            Command::new(exe)
                .args([url, &format!("exec_proc_{w}"), &PER_WRITER.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (w, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "writer {w} failed ({}): {stderr}",
            out.status
        );
        assert!(!stderr.contains("locked"), "writer {w}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("saved {PER_WRITER}")
        );
    }
}

/// Every writer's checkpoints are there, load, and add up.
fn check_processes_result(url: &str) {
    let store = SqlStore::open(url).unwrap();
    let all = store.list_checkpoints(&ListFilter::default()).unwrap();
    assert_eq!(all.len(), WRITERS * PER_WRITER);
    for w in 0..WRITERS {
        let e = ExecutionId::new(format!("exec_proc_{w}")).unwrap();
        let mine = store.list_checkpoints(&ListFilter::execution(&e)).unwrap();
        assert_eq!(mine.len(), PER_WRITER, "writer {w}");
        for s in &mine {
            store.load_checkpoint(&s.id).unwrap();
        }
        let stats = store.stats(Some(&e)).unwrap();
        let x = &stats.executions[0];
        assert_eq!(x.status, caf_core::ExecutionStatus::Completed);
        assert_eq!((x.checkpoints, x.thoughts, x.tool_calls), (30, 30, 30));
        assert_eq!(x.tokens_used, 300);
    }
    let counts = store.table_counts().unwrap();
    assert_eq!(
        counts.lines as usize, WRITERS,
        "each writer's checkpoints form one line"
    );
}

#[test]
fn sqlite_eight_processes_lose_nothing_and_never_see_locked() {
    let dir = tempfile::tempdir().unwrap();
    // The database does not exist yet: the writers race to create it too.
    let url = format!("sqlite://{}", dir.path().join("shared.db").display());
    run_writer_processes(&url);
    check_processes_result(&url);
}

#[test]
fn postgres_eight_processes_lose_nothing() {
    let Some(base) = pg_base("postgres_eight_processes_lose_nothing") else {
        return;
    };
    // A database with no tables yet: the writers race to migrate it too.
    let db = pg_database(&base);
    run_writer_processes(db.url());
    check_processes_result(db.url());
}

/// 8 threads, each with a store of its own on `url`: four on executions of their own, four
/// taking turns on one shared execution (each its own chain of checkpoints).
fn threads(url: &str) {
    const PER_THREAD: usize = 20;
    std::thread::scope(|scope| {
        for t in 0..WRITERS {
            scope.spawn(move || {
                let store = SqlStore::open(url).unwrap();
                let manager = CheckpointManager::new(store);
                let e = if t < 4 {
                    format!("exec_thread_{t}")
                } else {
                    "exec_shared".to_string()
                };
                let mut state = RuntimeState::with_clock(
                    format!("agent_{t}"),
                    ExecutionId::new(e).unwrap(),
                    Arc::new(caf_core::SystemClock),
                );
                for s in 0..PER_THREAD {
                    state.add_thought("reasoning", format!("thread {t} step {s}"), None);
                    let call = state.start_tool_call("search", json!({"t": t, "s": s}));
                    state.complete_tool_call(&call, json!(s)).unwrap();
                    manager
                        .checkpoint(
                            &mut state,
                            CheckpointOptions::new(CheckpointReason::StepCompleted),
                        )
                        .unwrap();
                }
            });
        }
    });
    let store = SqlStore::open(url).unwrap();
    let all = store.list_checkpoints(&ListFilter::default()).unwrap();
    assert_eq!(all.len(), WRITERS * PER_THREAD);
    for s in &all {
        store.load_checkpoint(&s.id).unwrap();
    }
    let shared = ExecutionId::new("exec_shared").unwrap();
    assert_eq!(
        store
            .list_checkpoints(&ListFilter::execution(&shared))
            .unwrap()
            .len(),
        4 * PER_THREAD
    );
    assert_eq!(store.table_counts().unwrap().lines as usize, WRITERS);
}

#[test]
fn sqlite_eight_threads_with_a_store_each() {
    let dir = tempfile::tempdir().unwrap();
    threads(&format!(
        "sqlite://{}",
        dir.path().join("threads.db").display()
    ));
}

#[test]
fn postgres_eight_threads_with_a_store_each() {
    let Some(base) = pg_base("postgres_eight_threads_with_a_store_each") else {
        return;
    };
    let db = pg_database(&base);
    threads(db.url());
}
