//! The SQL layer's sync properties, on SQLite and (with `CAF_TEST_POSTGRES_URL`) PostgreSQL:
//! equality with what was saved, one row per distinct item, revisions of tool calls that
//! complete later, idempotence, all-or-nothing saves, NUL characters, garbage collection on
//! delete, and bringing files in (`sync_from`, `reindex_from`).

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::format::ToolStatus;
use caf_core::{Checkpoint, CheckpointStore, Error, FileStore, ListFilter};
use caf_sql::{SqlError, SyncOutcome, TableCounts};
use caf_tests::gen::{ckpt_id, exec_id, sample_checkpoints, CheckpointBuilder};
use serde_json::json;
use sql_common::runs::{agent_run, demo_run};
use sql_common::{on_each_backend, TempSql};

fn save_all(db: &TempSql, checkpoints: &[Checkpoint]) {
    for c in checkpoints {
        db.save_checkpoint(c)
            .unwrap_or_else(|e| panic!("saving {}: {e}", c.id));
    }
}

fn assert_all_load_equal(db: &TempSql, checkpoints: &[Checkpoint]) {
    for c in checkpoints {
        let back = db
            .load_checkpoint(&c.id)
            .unwrap_or_else(|e| panic!("loading {}: {e}", c.id));
        assert_eq!(&back, c, "{} changed in the database", c.id);
    }
}

#[test]
fn demo_runs_load_back_equal() {
    on_each_backend("demo_runs_load_back_equal", |db| {
        let mut all = Vec::new();
        for seed in 1..=3 {
            let run = demo_run(seed, 12);
            save_all(db, &run);
            all.extend(run);
        }
        assert_all_load_equal(db, &all);
        let listed = db.list_checkpoints(&ListFilter::default()).unwrap();
        assert_eq!(listed.len(), all.len());
        // The crash/resume continues the line; only the fork starts another one.
        assert_eq!(db.table_counts().unwrap().lines, 3 * 2);
    });
}

/// Each row holds the checksum and size of the checkpoint's canonical encoding (on SQLite
/// computed on a helper thread while the rows are written, and written into the row last), for
/// saves that start a line and saves that continue one.
#[test]
fn each_row_holds_the_checksum_of_its_encoding() {
    on_each_backend("each_row_holds_the_checksum_of_its_encoding", |db| {
        let mut run = agent_run(2, 30);
        run.extend(demo_run(5, 12));
        save_all(db, &run);
        let rows = db
            .read_only_sql("SELECT id, integrity, bytes FROM checkpoints")
            .unwrap()
            .rows;
        assert_eq!(rows.len(), run.len());
        for row in rows {
            let id = row[0].as_str().unwrap();
            let c = run.iter().find(|c| c.id.as_str() == id).unwrap();
            let file = caf_core::format::encode(c).unwrap();
            let stated = caf_core::store::stated_integrity(&file).unwrap();
            assert_eq!(row[1].as_str(), Some(stated.as_str()), "{id}");
            assert_eq!(row[2].as_u64(), Some(file.len() as u64), "{id}");
        }
    });
}

#[test]
fn arbitrary_checkpoints_load_back_equal_alone_and_chained() {
    on_each_backend("arbitrary_checkpoints", |db| {
        let alone = sample_checkpoints(40);
        save_all(db, &alone);
        assert_all_load_equal(db, &alone);
        // The same arbitrary snapshots as one line: each a child of the previous one, so that
        // every save writes the differences between two unrelated snapshots.
        let mut chained = sample_checkpoints(40);
        for (i, c) in chained.iter_mut().enumerate() {
            c.id = ckpt_id(&format!("ckpt_chain_{i:03}"));
            c.execution_id = exec_id("exec_chain");
            c.parent_id = (i > 0).then(|| ckpt_id(&format!("ckpt_chain_{:03}", i - 1)));
        }
        save_all(db, &chained);
        assert_all_load_equal(db, &chained);
        assert_all_load_equal(db, &alone);
    });
}

#[test]
fn a_thought_in_100_checkpoints_is_one_row() {
    on_each_backend("a_thought_in_100_checkpoints_is_one_row", |db| {
        let run = agent_run(1, 100);
        save_all(db, &run);
        let c = db.table_counts().unwrap();
        assert_eq!(
            (
                c.executions,
                c.lines,
                c.checkpoints,
                c.thoughts,
                c.tool_calls,
                c.steps
            ),
            (1, 1, 100, 100, 100, 0),
            "100 checkpoints holding 1..=100 thoughts and calls store each once: {c:?}"
        );
        // Each step changes three variables and one tool's result (the first steps also move
        // the results map's keys around as new tools appear).
        assert!(c.entries <= 4 * 100 + 10, "{c:?}");
        assert_all_load_equal(db, &run[..1]);
        assert_all_load_equal(db, &run[49..51]);
        assert_all_load_equal(db, &run[99..]);
    });
}

/// A checkpoint with a running call, then its child where the call has completed.
fn running_then_completed() -> (Checkpoint, Checkpoint) {
    let running = CheckpointBuilder::new("ckpt_run_1")
        .execution("exec_rev")
        .at_ms(0)
        .thought("reasoning", "call the search tool")
        .tool_call("search", json!({"q": "caf"}), json!(["a", "b"]))
        .with(|c| {
            let call = std::sync::Arc::make_mut(&mut c.snapshot.tool_state.calls[0]);
            call.status = ToolStatus::Running;
            call.result = None;
            call.success = None;
            call.completed_at = None;
            c.snapshot.tool_state.results.clear();
        })
        .build();
    let completed = CheckpointBuilder::new("ckpt_run_2")
        .execution("exec_rev")
        .parent("ckpt_run_1")
        .at_ms(1000)
        .thought("reasoning", "call the search tool")
        .tool_call("search", json!({"q": "caf"}), json!(["a", "b"]))
        .with(|c| {
            std::sync::Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).created_at =
                running.timestamp
        })
        .build();
    (running, completed)
}

#[test]
fn a_call_completed_later_has_two_revisions_and_old_checkpoints_see_it_running() {
    on_each_backend("a_call_completed_later", |db| {
        let (running, completed) = running_then_completed();
        save_all(db, &[running.clone(), completed.clone()]);
        let counts = db.table_counts().unwrap();
        assert_eq!(
            (counts.lines, counts.thoughts, counts.tool_calls),
            (1, 1, 2)
        );
        let old = db.load_checkpoint(&running.id).unwrap();
        assert_eq!(old, running);
        assert_eq!(old.snapshot.tool_state.calls[0].status, ToolStatus::Running);
        assert_eq!(db.load_checkpoint(&completed.id).unwrap(), completed);
        let rows = db.query_tool_calls(Some("search"), false).unwrap();
        assert_eq!(rows.len(), 1, "one call, reported once: {rows:?}");
        assert_eq!(rows[0].call.status, ToolStatus::Completed);
        assert_eq!(rows[0].call.result, Some(json!(["a", "b"])));
        assert_eq!(rows[0].first_checkpoint_id, "ckpt_run_1");
        assert_eq!(rows[0].last_checkpoint_id.as_deref(), Some("ckpt_run_2"));
        assert_eq!(rows[0].checkpoints, 2);
    });
}

#[test]
fn saving_twice_changes_nothing() {
    on_each_backend("saving_twice_changes_nothing", |db| {
        let run = demo_run(11, 10);
        save_all(db, &run);
        let counts = db.table_counts().unwrap();
        let listed = db.list_checkpoints(&ListFilter::default()).unwrap();
        let stats = db.stats(None).unwrap();
        for c in &run {
            let (summary, outcome) = db.save_checkpoint(c).unwrap();
            assert_eq!(outcome, SyncOutcome::Unchanged, "{}", c.id);
            assert!(listed.contains(&summary));
        }
        assert_eq!(db.table_counts().unwrap(), counts);
        assert_eq!(db.list_checkpoints(&ListFilter::default()).unwrap(), listed);
        assert_eq!(db.stats(None).unwrap(), stats);
        assert_all_load_equal(db, &run);
    });
}

#[test]
fn another_checkpoint_under_an_existing_id_replaces_it() {
    on_each_backend("replaces", |db| {
        let run = agent_run(1, 5);
        save_all(db, &run);
        let mut edited = run[2].clone();
        std::sync::Arc::make_mut(&mut edited.snapshot.thought_chain.thoughts[0]).content =
            "edited elsewhere".into();
        let (_, outcome) = db.save_checkpoint(&edited).unwrap();
        assert_eq!(outcome, SyncOutcome::Replaced);
        assert_eq!(db.load_checkpoint(&edited.id).unwrap(), edited);
        let mut others = run.clone();
        others.remove(2);
        assert_all_load_equal(db, &others);
        assert_eq!(db.table_counts().unwrap().checkpoints, 5);
    });
}

#[test]
fn a_save_that_fails_half_way_leaves_nothing_behind() {
    on_each_backend("a_save_that_fails_half_way", |db| {
        let (running, completed) = running_then_completed();
        save_all(db, std::slice::from_ref(&running));
        let before = db.table_counts().unwrap();
        // The child closes the running call's revision and adds the completed one, then its
        // own row fails to go in: all of it must be rolled back.
        db.fail_inserts_of(completed.id.as_str());
        let err = db.save_checkpoint(&completed).unwrap_err();
        assert!(matches!(err, SqlError::Query { .. }), "{err}");
        assert!(err.to_string().contains("injected failure"), "{err}");
        assert_eq!(db.table_counts().unwrap(), before);
        assert!(matches!(
            db.load_checkpoint(&completed.id),
            Err(SqlError::NotFound { .. })
        ));
        assert_eq!(db.load_checkpoint(&running.id).unwrap(), running);
        // Through the trait, the failure is a backend error.
        assert!(matches!(db.save(&completed), Err(Error::Backend { .. })));
        db.stop_failing();
        save_all(db, std::slice::from_ref(&completed));
        assert_all_load_equal(db, &[running, completed]);
    });
}

#[test]
fn nul_characters_round_trip_and_are_found() {
    on_each_backend("nul_characters_round_trip", |db| {
        let nul = "a\u{0}b \u{0} \u{fffd}";
        let c = CheckpointBuilder::new("ckpt_nul")
            .execution("exec_nul")
            .agent(&format!("agent{nul}"))
            .name(&format!("name{nul}"))
            .label(&format!("label{nul}"))
            .label("label\u{fffd}b \u{fffd} \u{fffd}")
            .thought("reasoning", &format!("content {nul} end"))
            .tool_call("search\u{0}", json!({"q": nul}), json!([nul]))
            .variable("task", json!(nul))
            .build();
        let (summary, _) = db.save_checkpoint(&c).unwrap();
        assert_eq!(db.load_checkpoint(&c.id).unwrap(), c);
        let by_agent = ListFilter {
            agent_id: Some(format!("agent{nul}")),
            ..ListFilter::default()
        };
        assert_eq!(
            db.list_checkpoints(&by_agent).unwrap(),
            vec![summary.clone()]
        );
        let look_alike = ListFilter {
            agent_id: Some("agent\u{fffd}b \u{fffd} \u{fffd}".into()),
            ..ListFilter::default()
        };
        assert!(db.list_checkpoints(&look_alike).unwrap().is_empty());
        let by_label = ListFilter {
            label: Some(format!("label{nul}")),
            ..ListFilter::default()
        };
        assert_eq!(db.list_checkpoints(&by_label).unwrap(), vec![summary]);
        let found = db.query_thoughts("\u{0}b \u{0}").unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].thought.content, format!("content {nul} end"));
        let calls = db.query_tool_calls(Some("search\u{0}"), false).unwrap();
        assert_eq!(calls.len(), 1);
        assert!(db
            .query_tool_calls(Some("search\u{fffd}"), false)
            .unwrap()
            .is_empty());
    });
}

#[test]
fn deleting_keeps_what_others_see_and_collects_the_rest() {
    on_each_backend("deleting_collects", |db| {
        let run = demo_run(5, 12);
        save_all(db, &run);
        let mut rng = fastrand::Rng::with_seed(42);
        let mut left = run.clone();
        while left.len() > 1 {
            let victim = left.remove(rng.usize(..left.len()));
            assert!(db.delete_checkpoint(&victim.id).unwrap());
            if left.len().is_multiple_of(4) {
                assert_all_load_equal(db, &left);
            }
        }
        assert_all_load_equal(db, &left);
        // A child of the last one left continues or starts a line; either way it loads back.
        let mut child = left[0].clone();
        child.id = ckpt_id("ckpt_after_deletes");
        child.parent_id = Some(left[0].id.clone());
        child.timestamp = caf_core::Timestamp::from_micros(child.timestamp.as_micros() + 1);
        save_all(db, &[child.clone()]);
        assert_all_load_equal(db, &[left[0].clone(), child.clone()]);
        assert!(db.delete_checkpoint(&left[0].id).unwrap());
        assert!(db.delete_checkpoint(&child.id).unwrap());
        assert_eq!(db.table_counts().unwrap(), TableCounts::default());
    });
}

#[test]
fn deleting_an_execution_removes_all_its_rows() {
    on_each_backend("deleting_an_execution", |db| {
        let a = demo_run(1, 8);
        let b = demo_run(2, 8);
        save_all(db, &a);
        save_all(db, &b);
        assert_eq!(
            db.delete_execution_checkpoints(&a[0].execution_id).unwrap(),
            a.len()
        );
        assert_all_load_equal(db, &b);
        db.delete_execution_checkpoints(&b[0].execution_id).unwrap();
        assert_eq!(db.table_counts().unwrap(), TableCounts::default());
    });
}

#[test]
fn sync_from_brings_in_files_saved_elsewhere() {
    on_each_backend("sync_from", |db| {
        let dir = tempfile::tempdir().unwrap();
        let files = FileStore::open(dir.path()).unwrap();
        let run = demo_run(3, 10);
        for c in &run {
            files.save(c).unwrap();
        }
        let report = db.sync_from(&files).unwrap();
        assert_eq!(
            (report.added, report.unchanged, report.replaced),
            (run.len() as u64, 0, 0)
        );
        assert!(report.orphaned.is_empty() && report.problems.is_empty());
        assert_all_load_equal(db, &run);
        assert_eq!(
            db.table_counts().unwrap().lines,
            2,
            "saved in order: lines stay long"
        );
        let again = db.sync_from(&files).unwrap();
        assert_eq!((again.added, again.unchanged), (0, run.len() as u64));
        // Edited elsewhere, deleted elsewhere, and one only the database has.
        let mut edited = run[4].clone();
        edited.metadata.labels = vec!["edited".into()];
        files.save(&edited).unwrap();
        files.delete(&run[5].id).unwrap();
        let report = db.sync_from(&files).unwrap();
        assert_eq!((report.added, report.replaced), (0, 1));
        assert_eq!(report.orphaned, vec![run[5].id.to_string()]);
        assert_eq!(db.load_checkpoint(&edited.id).unwrap(), edited);
        // A damaged file is reported and skipped (the file store found it unreadable when it
        // opened, so it is not listed: it is a problem, not just an orphan).
        std::fs::write(files.path_of(&run[6].id), b"{ not json").unwrap();
        let files = FileStore::open(dir.path()).unwrap();
        let report = db.sync_from(&files).unwrap();
        assert!(
            report.orphaned.contains(&run[6].id.to_string()),
            "{report:?}"
        );
        assert_eq!(report.skipped, 1, "{report:?}");
        assert_eq!(report.problems[0].id, run[6].id.to_string());
        let path = files.path_of(&run[6].id).display().to_string();
        assert_eq!(report.problems[0].path, path);
        assert!(report.problems[0].error.contains(&path), "{report:?}");
        let rebuilt = db.reindex_from(&files).unwrap();
        assert_eq!(rebuilt.skipped, 1, "{rebuilt:?}");
        assert_eq!(rebuilt.problems[0].id, run[6].id.to_string());
    });
}

#[test]
fn reindex_rebuilds_the_database_from_the_files() {
    on_each_backend("reindex", |db| {
        let dir = tempfile::tempdir().unwrap();
        let files = FileStore::open(dir.path()).unwrap();
        let run = agent_run(3, 20);
        // Saved out of order into the files; the database holds something else entirely.
        for c in run.iter().rev() {
            files.save(c).unwrap();
        }
        save_all(db, &demo_run(9, 6));
        let report = db.reindex_from(&files).unwrap();
        assert_eq!((report.checkpoints, report.executions), (60, 3));
        assert!(report.problems.is_empty());
        assert_all_load_equal(db, &run);
        let counts = db.table_counts().unwrap();
        assert_eq!(counts.checkpoints, 60);
        assert_eq!(counts.lines, 3, "one line per execution");
        assert_eq!((counts.thoughts, counts.tool_calls), (60, 60));
        assert_eq!(
            db.list_checkpoints(&ListFilter::default()).unwrap(),
            files.list(&ListFilter::default()).unwrap()
        );
    });
}

#[test]
fn hybrid_save_refused_by_the_database_saves_nothing_and_a_retry_succeeds() {
    let h = sql_common::TempHybrid::new();
    let run = agent_run(1, 3);
    h.save(&run[0]).unwrap();
    let db_path = h.path().join("caf.db").display().to_string();
    // Make the database refuse the next checkpoint (a trigger), behind the store's back.
    {
        use diesel::connection::SimpleConnection;
        use diesel::Connection;
        let mut c = diesel::SqliteConnection::establish(&db_path).unwrap();
        c.batch_execute(&format!(
            "CREATE TRIGGER caf_boom BEFORE INSERT ON checkpoints WHEN NEW.id = '{}' \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
            run[1].id
        ))
        .unwrap();
    }
    let err = h.save(&run[1]).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Backend { .. }), "{message}");
    assert!(
        message.contains(&format!("checkpoint {} was not saved", run[1].id))
            && message.contains("injected failure"),
        "{message}"
    );
    // Nothing was saved: no file, no temporary file left, no row.
    assert!(!h.files().path_of(&run[1].id).exists());
    assert!(h.files().load(&run[1].id).is_err());
    assert!(h.sql().load_checkpoint(&run[1].id).is_err());
    let tmp = h.files().root().join(".caf").join("tmp");
    let left = std::fs::read_dir(&tmp)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            !name
                .to_string_lossy()
                .starts_with(caf_core::store::SPARE_PREFIX)
        })
        .count();
    assert_eq!(left, 0, "temporary files left");
    {
        use diesel::connection::SimpleConnection;
        use diesel::Connection;
        let mut c = diesel::SqliteConnection::establish(&db_path).unwrap();
        c.batch_execute("DROP TRIGGER caf_boom;").unwrap();
    }
    h.save(&run[1]).unwrap();
    assert_eq!(h.files().load(&run[1].id).unwrap(), run[1]);
    assert_eq!(h.sql().load_checkpoint(&run[1].id).unwrap(), run[1]);
}
