//! What a save costs in statements: the usual save (a child of the tip this store wrote last)
//! runs a fixed, small set of statements, all prepared once per connection and reused by every
//! execution; on SQLite and (with `CAF_TEST_POSTGRES_URL`) PostgreSQL.

use crate::statement::tests::watch;
use crate::{Backend, SqlStore};
use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};
use serde_json::json;

/// One step of an agent: a thought, a completed tool call (its result replaces the previous
/// one in the results map), three variables changed.
fn step(state: &mut RuntimeState, s: usize) {
    state.add_thought("reasoning", format!("thinking about step {s}"), Some(0.85));
    let call = state.start_tool_call("search", json!({"query": "q", "n": s}));
    state
        .complete_tool_call(&call, json!(format!("result {s}")))
        .unwrap();
    state.set_variable("step", json!(s));
    state.set_variable("last_tool", json!(format!("search #{s}")));
    state.set_variable("score", json!(s as f64 / 100.0));
}

fn run(manager: &CheckpointManager<SqlStore>, agent: &str, steps: usize) -> RuntimeState {
    let mut state = RuntimeState::new(agent);
    for s in 0..steps {
        step(&mut state, s);
        let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
        manager.checkpoint(&mut state, options).unwrap();
    }
    state
}

/// Runs `test` on a store in a new SQLite file, and in a new PostgreSQL database when
/// `CAF_TEST_POSTGRES_URL` is set (and this build has the test helpers).
fn on_each_backend(test: impl Fn(SqlStore)) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("caf.db").display());
    test(SqlStore::open(&url).unwrap());
    #[cfg(all(feature = "postgres", feature = "test-support"))]
    if let Ok(base) = std::env::var("CAF_TEST_POSTGRES_URL") {
        let db = crate::ScratchDatabase::create(&base).unwrap();
        test(SqlStore::open(db.url()).unwrap());
    }
}

/// The first words of a statement and the table it names: `INSERT INTO thoughts`.
fn head(sql: &str) -> String {
    let words: Vec<&str> = sql.split_whitespace().collect();
    match words.as_slice() {
        ["INSERT", "INTO", table, ..] => format!("INSERT INTO {table}"),
        ["UPDATE", table, ..] => format!("UPDATE {table}"),
        [first, ..] => first.to_string(),
        [] => String::new(),
    }
}

/// The statements prepared, but the checksum's `UPDATE`: a SQLite save runs it only when the
/// hash helper took the checksum in time (see `SqlStore::save_checkpoint`), so the first save
/// that does may come late and prepare it then.
fn prepared_anew(prepared: &[String]) -> Vec<&str> {
    prepared
        .iter()
        .map(String::as_str)
        .filter(|sql| !sql.starts_with("UPDATE checkpoints SET integrity"))
        .collect()
}

#[test]
fn a_save_that_continues_a_remembered_line_runs_few_prepared_statements() {
    on_each_backend(|store| {
        let backend = store.backend();
        let manager = CheckpointManager::new(store);
        let mut state = run(&manager, "agent-a", 3);
        let seen = watch(&mut manager.store().lock().conn);
        step(&mut state, 3);
        let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
        let saved = manager.checkpoint(&mut state, options).unwrap();
        let seen = seen.lock().unwrap();
        let heads: Vec<String> = seen.run.iter().map(|sql| head(sql)).collect();
        match backend {
            // Whether the parent is still the line's tip, then the checkpoint row; the entries
            // that changed closed (three variables, the tool's result) and their new revisions;
            // the thought; the tool call; the execution's row; last, when the checksum was
            // computed on the helper thread meanwhile (it is computed first when the helper
            // did not take it at once), the checksum into the checkpoint row.
            Backend::Sqlite => {
                let expected = [
                    "SELECT",
                    "INSERT INTO checkpoints",
                    "UPDATE entries",
                    "INSERT INTO entries",
                    "INSERT INTO thoughts",
                    "INSERT INTO tool_calls",
                    "UPDATE executions",
                ];
                let rows = match heads.split_last() {
                    Some((last, rows)) if last == "UPDATE checkpoints" => rows,
                    _ => &heads[..],
                };
                assert_eq!(rows, expected, "{:#?}", seen.run);
                assert!(seen.run[0].contains("NOT sealed"), "{}", seen.run[0]);
            }
            // The execution's lock, then all of it in one statement.
            Backend::Postgres => {
                assert_eq!(heads, ["SELECT", "WITH"], "{:#?}", seen.run);
                assert!(seen.run[0].contains("pg_advisory_xact_lock"));
            }
        }
        assert_eq!(prepared_anew(&seen.prepared), [""; 0], "{backend}");
        drop(seen);
        assert_eq!(manager.store().load_checkpoint(&saved.id).unwrap(), saved);
    });
}

#[test]
fn another_execution_reuses_every_prepared_statement() {
    on_each_backend(|store| {
        let backend = store.backend();
        let manager = CheckpointManager::new(store);
        run(&manager, "agent-a", 4);
        let seen = watch(&mut manager.store().lock().conn);
        let state = run(&manager, "agent-b", 4);
        let seen = seen.lock().unwrap();
        assert_eq!(prepared_anew(&seen.prepared), [""; 0], "{backend}");
        assert!(!seen.run.is_empty());
        drop(seen);
        let latest = manager
            .store()
            .load_checkpoint(state.last_checkpoint().unwrap());
        assert_eq!(latest.unwrap().snapshot, *state.snapshot());
    });
}

#[test]
fn labels_of_a_remembered_line_save_are_found_by_label() {
    on_each_backend(|store| {
        let backend = store.backend();
        let manager = CheckpointManager::new(store);
        let mut state = run(&manager, "agent-a", 2);
        step(&mut state, 2);
        let options = CheckpointOptions::new(CheckpointReason::Manual)
            .label("b")
            .label("a");
        let labelled = manager.checkpoint(&mut state, options).unwrap();
        for (label, found) in [("a", true), ("b", true), ("c", false)] {
            let filter = caf_core::ListFilter {
                label: Some(label.into()),
                ..Default::default()
            };
            let listed = manager.store().list_checkpoints(&filter).unwrap();
            let ids: Vec<_> = listed.iter().map(|s| s.id.clone()).collect();
            let expected = if found {
                vec![labelled.id.clone()]
            } else {
                vec![]
            };
            assert_eq!(ids, expected, "{backend}: label {label}");
        }
        assert_eq!(
            manager.store().load_checkpoint(&labelled.id).unwrap(),
            labelled
        );
    });
}

/// SQLite's save closes the entry revisions it replaces by the key of `entries`, where the line's
/// tip says each starts (there is no index of current entries to find them by position): when
/// one of them is no longer current — the table was changed behind the store's back —, the save
/// fails as damage and writes nothing, rather than leave a position with two current revisions
/// or none.
#[test]
fn a_sqlite_save_whose_entry_to_close_is_not_current_fails_and_writes_nothing() {
    use caf_core::{CheckpointStore, ListFilter};
    use diesel::RunQueryDsl;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("caf.db").display());
    let manager = CheckpointManager::new(SqlStore::open(&url).unwrap());
    let mut state = run(&manager, "agent-a", 3);
    diesel::sql_query(
        "UPDATE entries SET to_seq = 99 WHERE part = 'variables' AND key = 'step' \
         AND to_seq IS NULL",
    )
    .execute(&mut manager.store().lock().conn)
    .unwrap();
    step(&mut state, 3);
    let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
    let error = manager.checkpoint(&mut state, options).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("3 of the 4 entry revisions to close are current"),
        "{error}"
    );
    let listed = manager.store().list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), 3);
    let entries: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "(SELECT count(*) FROM entries WHERE to_seq = 3)",
    ))
    .get_result(&mut manager.store().lock().conn)
    .unwrap();
    assert_eq!(entries, 0, "the other revisions it closed were rolled back");
}
