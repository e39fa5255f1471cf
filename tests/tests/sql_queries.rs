//! What the SQL layer answers, on SQLite and (with `CAF_TEST_POSTGRES_URL`) PostgreSQL:
//! statistics, tool-call and thought queries on a known dataset, read-only SQL that the database
//! itself keeps read-only, and the size of the database on the agent-run workload.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::format::{encode, ToolCall, ToolStatus};
use caf_core::{Checkpoint, CheckpointReason, ExecutionId};
use caf_sql::{SqlError, SqlRows};
use caf_tests::gen::{at_ms, CheckpointBuilder};
use serde_json::{json, Value};
use sql_common::runs::agent_run;
use sql_common::{on_each_backend, pg_base, TempSql};
use std::collections::BTreeMap;
use std::sync::Arc;

fn call(id: &str, tool: &str, status: ToolStatus, ms: i64) -> Arc<ToolCall> {
    let t = at_ms(ms);
    let done = status.is_finished();
    Arc::new(ToolCall {
        args: json!({"q": id}),
        completed_at: done.then_some(t),
        duration_ms: None,
        error: (status == ToolStatus::Failed).then(|| "ENOENT".to_string()),
        extensions: Default::default(),
        id: id.to_string(),
        result: (status == ToolStatus::Completed).then(|| json!([tool])),
        started_at: Some(t),
        status,
        success: done.then_some(status == ToolStatus::Completed),
        tool_id: tool.to_string(),
    })
}

/// Two executions: `exec_a` (3 checkpoints, completed; a call that completes later, a failed
/// call) and `exec_b` (1 checkpoint, paused).
fn dataset() -> Vec<Checkpoint> {
    let t1 = "Search for Rust ORMs";
    let t2 = "Diesel looks 100% solid_state";
    let t3 = "Écrire le résumé";
    let a = |id: &str, ms: i64, tokens: u64| {
        CheckpointBuilder::new(id)
            .execution("exec_a")
            .agent("agent_a")
            .at_ms(ms)
            .tokens(tokens)
            .variable("task", json!("find things"))
            .thought("reasoning", t1)
            .with(move |c| {
                c.metadata.duration_ms = tokens / 10;
                Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).created_at = at_ms(0);
            })
    };
    let a1 = a("ckpt_a1", 0, 100)
        .with(|c| c.snapshot.tool_state.calls = vec![call("c1", "search", ToolStatus::Running, 0)])
        .build();
    let a2 = a("ckpt_a2", 1000, 200)
        .parent("ckpt_a1")
        .thought("observation", t2)
        .with(|c| {
            Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[1]).created_at = at_ms(1000);
            c.snapshot.tool_state.calls = vec![
                call("c1", "search", ToolStatus::Completed, 0),
                call("c2", "read_file", ToolStatus::Failed, 1000),
            ];
        })
        .build();
    let a3 = a("ckpt_a3", 2000, 300)
        .parent("ckpt_a2")
        .thought("observation", t2)
        .thought("action", t3)
        .reason(CheckpointReason::Completed)
        .with(|c| {
            Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[1]).created_at = at_ms(1000);
            Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[2]).created_at = at_ms(2000);
            c.snapshot.tool_state.calls = vec![
                call("c1", "search", ToolStatus::Completed, 0),
                call("c2", "read_file", ToolStatus::Failed, 1000),
                call("c3", "search", ToolStatus::Completed, 2000),
            ];
        })
        .build();
    let b1 = CheckpointBuilder::new("ckpt_b1")
        .execution("exec_b")
        .agent("agent_b")
        .at_ms(5000)
        .tokens(50)
        .reason(CheckpointReason::Paused)
        .thought("reasoning", "Paused for review")
        .with(|c| {
            c.metadata.duration_ms = 5;
            c.snapshot.tool_state.calls = vec![call("c9", "http_get", ToolStatus::Completed, 5000)];
        })
        .build();
    vec![a1, a2, a3, b1]
}

fn seeded(db: &TempSql) {
    for c in dataset() {
        db.save_checkpoint(&c).unwrap();
    }
}

#[test]
fn stats_on_a_known_dataset() {
    on_each_backend("stats_on_a_known_dataset", |db| {
        seeded(db);
        let stats = db.stats(None).unwrap();
        let tools = |v: &[(&str, u64)]| -> BTreeMap<String, u64> {
            v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
        };
        assert_eq!(stats.executions.len(), 2);
        let a = &stats.executions[0];
        assert_eq!(
            (
                a.execution_id.as_str(),
                a.agent_id.as_str(),
                a.task.as_str(),
                a.status.as_str()
            ),
            ("exec_a", "agent_a", "find things", "completed")
        );
        assert_eq!(
            (a.started_at, a.completed_at),
            (at_ms(0), Some(at_ms(2000)))
        );
        assert_eq!(a.last_checkpoint_id.as_deref(), Some("ckpt_a3"));
        assert_eq!(
            (a.checkpoints, a.thoughts, a.tool_calls, a.failed_tool_calls),
            (3, 3, 3, 1)
        );
        assert_eq!(
            a.tool_calls_by_tool,
            tools(&[("read_file", 1), ("search", 2)])
        );
        assert_eq!((a.tokens_used, a.duration_ms), (300, 30));
        let b = &stats.executions[1];
        assert_eq!(
            (b.status.as_str(), b.task.as_str(), b.completed_at),
            ("paused", "", None)
        );
        assert_eq!(
            (b.checkpoints, b.thoughts, b.tool_calls, b.failed_tool_calls),
            (1, 1, 1, 0)
        );
        let t = &stats.totals;
        assert_eq!(
            (
                t.executions,
                t.checkpoints,
                t.thoughts,
                t.tool_calls,
                t.failed_tool_calls
            ),
            (2, 4, 4, 4, 1)
        );
        assert_eq!((t.tokens_used, t.duration_ms), (350, 35));
        assert_eq!(
            t.tool_calls_by_tool,
            tools(&[("http_get", 1), ("read_file", 1), ("search", 2)])
        );
        assert_eq!(
            t.executions_by_status,
            [
                (caf_core::ExecutionStatus::Completed, 1),
                (caf_core::ExecutionStatus::Paused, 1)
            ]
            .into_iter()
            .collect()
        );
        assert_eq!(t.averages.tokens_per_execution, 175.0);
        assert_eq!(t.averages.checkpoints_per_execution, 2.0);
        assert_eq!(t.averages.duration_ms_per_execution, 17.5);
        // One execution only; it serializes for --json.
        let only_b = db
            .stats(Some(&ExecutionId::new("exec_b").unwrap()))
            .unwrap();
        assert_eq!(only_b.executions, vec![b.clone()]);
        assert_eq!(only_b.totals.tokens_used, 50);
        let j = serde_json::to_value(&stats).unwrap();
        assert_eq!(
            j["executions"][0]["started_at"],
            json!(at_ms(0).to_string())
        );
        let none = db
            .stats(Some(&ExecutionId::new("exec_none").unwrap()))
            .unwrap();
        assert!(none.executions.is_empty());
        assert_eq!(none.totals.averages.tokens_per_execution, 0.0);
    });
}

#[test]
fn tool_call_queries() {
    on_each_backend("tool_call_queries", |db| {
        seeded(db);
        let all = db.query_tool_calls(None, false).unwrap();
        let ids: Vec<&str> = all.iter().map(|r| r.call.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2", "c3", "c9"]);
        let c1 = &all[0];
        assert_eq!(
            (c1.execution_id.as_str(), c1.call.status),
            ("exec_a", ToolStatus::Completed)
        );
        assert_eq!(
            (
                c1.first_checkpoint_id.as_str(),
                c1.last_checkpoint_id.as_deref(),
                c1.checkpoints
            ),
            ("ckpt_a1", Some("ckpt_a3"), 3)
        );
        assert_eq!(c1.call.args, json!({"q": "c1"}));
        assert_eq!(c1.call.result, Some(json!(["search"])));
        assert_eq!(
            (all[1].first_checkpoint_id.as_str(), all[1].checkpoints),
            ("ckpt_a2", 2)
        );
        let search: Vec<String> = db
            .query_tool_calls(Some("search"), false)
            .unwrap()
            .into_iter()
            .map(|r| r.call.id)
            .collect();
        assert_eq!(search, ["c1", "c3"]);
        let failed = db.query_tool_calls(None, true).unwrap();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].call.error.as_deref(), Some("ENOENT"));
        assert!(db
            .query_tool_calls(Some("search"), true)
            .unwrap()
            .is_empty());
        assert!(db.query_tool_calls(Some("nope"), false).unwrap().is_empty());
        let j = serde_json::to_value(&failed).unwrap();
        assert_eq!(j[0]["call"]["tool_id"], json!("read_file"));
    });
}

#[test]
fn thought_queries_ignore_case_and_take_wildcards_literally() {
    on_each_backend("thought_queries", |db| {
        seeded(db);
        let found = |needle: &str| -> Vec<String> {
            db.query_thoughts(needle)
                .unwrap()
                .into_iter()
                .map(|r| r.thought.content)
                .collect()
        };
        assert_eq!(found("rust orm"), ["Search for Rust ORMs"]);
        assert_eq!(found("100%"), ["Diesel looks 100% solid_state"]);
        assert_eq!(found("%"), ["Diesel looks 100% solid_state"]);
        assert_eq!(found("d_s"), ["Diesel looks 100% solid_state"]);
        assert!(found("e_s").is_empty(), "`_` is not a wildcard");
        assert_eq!(found("ÉCRIRE"), ["Écrire le résumé"]);
        assert_eq!(found("écrire"), ["Écrire le résumé"]);
        assert_eq!(found("").len(), 4);
        assert!(found("zzz").is_empty());
        let rows = db.query_thoughts("rust").unwrap();
        assert_eq!(
            (rows[0].first_checkpoint_id.as_str(), rows[0].checkpoints),
            ("ckpt_a1", 3)
        );
        assert_eq!(rows[0].last_checkpoint_id.as_deref(), Some("ckpt_a3"));
    });
}

fn sql(db: &TempSql, q: &str) -> SqlRows {
    db.read_only_sql(q).unwrap_or_else(|e| panic!("{q}: {e}"))
}

#[test]
fn read_only_sql_answers_queries() {
    on_each_backend("read_only_sql_answers_queries", |db| {
        seeded(db);
        let r = sql(
            db,
            "SELECT id, step_number, tokens_used FROM checkpoints ORDER BY id",
        );
        assert_eq!(r.columns, ["id", "step_number", "tokens_used"]);
        assert_eq!(r.rows.len(), 4);
        assert_eq!(r.rows[0], vec![json!("ckpt_a1"), json!(0), json!(100)]);
        let r = sql(
            db,
            "SELECT COUNT(*) AS n, SUM(tokens_used) AS total, AVG(tokens_used) AS mean, \
             MAX(name) AS no_name FROM checkpoints",
        );
        assert_eq!(r.columns, ["n", "total", "mean", "no_name"]);
        assert_eq!(
            r.rows,
            vec![vec![json!(4), json!(650), json!(162.5), Value::Null]]
        );
        let r = sql(db, "SELECT id, reason FROM checkpoints WHERE id = 'none';");
        assert_eq!(r.columns, ["id", "reason"], "columns of an empty result");
        assert!(r.rows.is_empty());
        let r = sql(db, "SELECT 0.25 AS f, 'x' AS s, 7 AS i");
        assert_eq!(r.rows, vec![vec![json!(0.25), json!("x"), json!(7)]]);
        assert!(matches!(
            db.read_only_sql("SELEC nonsense"),
            Err(SqlError::Query { .. })
        ));
        // The payloads are JSON text: the database's JSON functions work on them.
        let json_fn = match db.backend() {
            caf_sql::Backend::Sqlite => {
                "SELECT json_extract(payload, '$.tool_id') AS t FROM tool_calls WHERE id = 'c9'"
            }
            caf_sql::Backend::Postgres => {
                "SELECT payload::json->>'tool_id' AS t FROM tool_calls WHERE id = 'c9'"
            }
        };
        assert_eq!(sql(db, json_fn).rows, vec![vec![json!("http_get")]]);
    });
}

/// A text that is not exactly one statement is refused before anything runs: SQLite would
/// otherwise run the first statement only and drop the rest without a word.
#[test]
fn read_only_sql_runs_exactly_one_statement() {
    on_each_backend("read_only_sql_runs_exactly_one_statement", |db| {
        seeded(db);
        for several in [
            "SELECT 1; DELETE FROM checkpoints",
            "SELECT 1; SELECT 2",
            "SELECT ';'; SELECT 2; -- three? no, two",
        ] {
            match db.read_only_sql(several) {
                Err(e @ SqlError::NotOneStatement { statements: 2, .. }) => {
                    let text = e.to_string();
                    assert!(
                        text.contains("2 statements") && text.contains("nothing was run"),
                        "{text}"
                    );
                }
                other => panic!("{several}: {other:?}"),
            }
        }
        for empty in ["", "   ", ";", "-- a comment only", "/* … */ ;"] {
            match db.read_only_sql(empty) {
                Err(e @ SqlError::NotOneStatement { statements: 0, .. }) => {
                    assert!(e.to_string().contains("no SQL statement"), "{e}");
                }
                other => panic!("{empty:?}: {other:?}"),
            }
        }
        for one in [
            "SELECT 1;",
            "SELECT ';' AS s; -- the end",
            "/* a; b */ SELECT 1",
        ] {
            assert_eq!(sql(db, one).rows.len(), 1, "{one}");
        }
        assert_eq!(db.table_counts().unwrap().checkpoints, 4);
    });
}

#[test]
fn read_only_sql_refuses_every_write() {
    on_each_backend("read_only_sql_refuses_every_write", |db| {
        seeded(db);
        let counts = db.table_counts().unwrap();
        let stats = db.stats(None).unwrap();
        let sneaky = match db.backend() {
            caf_sql::Backend::Sqlite => "PRAGMA query_only = OFF",
            caf_sql::Backend::Postgres => "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        };
        let _ = db.read_only_sql(sneaky);
        for write in [
            "INSERT INTO executions (id, agent_id, task, started_at, status) \
             VALUES ('exec_evil', 'x', '', 0, 'running')",
            "UPDATE checkpoints SET reason = 'manual'",
            "DELETE FROM checkpoints",
            "DROP TABLE thoughts",
            "CREATE TABLE evil (x INTEGER)",
            "CREATE INDEX evil ON checkpoints (version)",
        ] {
            match db.read_only_sql(write) {
                Err(SqlError::ReadOnly { .. }) => {}
                other => panic!("{write}: expected a read-only refusal, got {other:?}"),
            }
        }
        if db.backend() == caf_sql::Backend::Postgres {
            for write in [
                "WITH gone AS (DELETE FROM checkpoints RETURNING id) SELECT * FROM gone",
                "SELECT 1; DELETE FROM checkpoints",
            ] {
                assert!(db.read_only_sql(write).is_err(), "{write}");
            }
        }
        assert_eq!(db.table_counts().unwrap(), counts);
        assert_eq!(db.stats(None).unwrap(), stats);
        // The store itself still writes.
        let mut c = dataset().remove(3);
        c.id = caf_tests::gen::ckpt_id("ckpt_b2");
        db.save_checkpoint(&c).unwrap();
    });
}

/// Saves the agent-run workload into `db`; returns (database bytes, bytes of every snapshot
/// stored whole).
fn measure(db: &TempSql, executions: usize, steps: usize) -> (u64, u64) {
    let run = agent_run(executions, steps);
    let whole: u64 = run.iter().map(|c| encode(c).unwrap().len() as u64).sum();
    for c in &run {
        db.save_checkpoint(c).unwrap();
    }
    (db.database_bytes().unwrap(), whole)
}

#[test]
fn the_database_is_a_tenth_of_the_snapshots_or_less() {
    on_each_backend("the_database_is_a_tenth", |db| {
        let (bytes, whole) = measure(db, 3, 100);
        eprintln!(
            "{}: agent-run 3 x 100: database {bytes} bytes, snapshots whole {whole} bytes, \
             ratio 1/{:.1}",
            db.backend(),
            whole as f64 / bytes as f64
        );
        assert!(bytes * 10 <= whole, "{bytes} * 10 > {whole}");
    });
}

/// The full workload of DESIGN.md (20 x 100), for the figures in the docs:
/// `cargo test -p caf-tests --test sql_queries -- --ignored --nocapture`.
#[test]
#[ignore = "measurement for the docs; takes a while"]
fn size_on_the_full_agent_run_workload() {
    let report = |db: &TempSql| {
        let (bytes, whole) = measure(db, 20, 100);
        let breakdown = match db.backend() {
            caf_sql::Backend::Sqlite => {
                "SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY 2 DESC"
            }
            caf_sql::Backend::Postgres => {
                "SELECT c.relname::text AS name, pg_relation_size(c.oid) AS bytes FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = current_schema() ORDER BY 2 DESC"
            }
        };
        match db.read_only_sql(breakdown) {
            Ok(r) => {
                for row in r.rows {
                    eprintln!("  {:<40} {}", row[0], row[1]);
                }
            }
            Err(e) => eprintln!("  (no breakdown: {e})"),
        }
        eprintln!(
            "{}: agent-run 20 x 100: database {bytes} bytes, snapshots whole {whole} bytes, \
             ratio 1/{:.1}",
            db.backend(),
            whole as f64 / bytes as f64
        );
        assert!(bytes * 10 <= whole);
    };
    report(&TempSql::sqlite());
    if let Some(base) = pg_base("size_on_the_full_agent_run_workload") {
        report(&TempSql::postgres(&base));
    }
}

/// The SQL cost of a save does not grow with the chain: median time of saves #5–#15 against
/// #90–#100 of the agent-run workload, from pre-encoded bytes (file serialization excluded).
/// A measurement, not a timed test: `cargo test --release -p caf-tests --test sql_queries --
/// --ignored --nocapture sync_cost`.
#[test]
#[ignore = "measurement for the docs"]
fn sync_cost_is_flat() {
    let report = |db: &TempSql| {
        let run = agent_run(5, 100);
        let encoded: Vec<Vec<u8>> = run.iter().map(|c| encode(c).unwrap()).collect();
        let mut times = vec![Vec::new(); 100];
        for (i, (c, bytes)) in run.iter().zip(&encoded).enumerate() {
            let t = std::time::Instant::now();
            db.sync_encoded(c, bytes).unwrap();
            times[i % 100].push(t.elapsed().as_secs_f64() * 1e6);
        }
        let median = |range: std::ops::Range<usize>| {
            let mut v: Vec<f64> = range.flat_map(|i| times[i].clone()).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (early, late) = (median(5..15), median(90..100));
        eprintln!(
            "{}: SQL sync per save: #5-#15 {early:.0} µs, #90-#100 {late:.0} µs (x{:.2})",
            db.backend(),
            late / early
        );
    };
    report(&TempSql::sqlite());
    if let Some(base) = pg_base("sync_cost_is_flat") {
        report(&TempSql::postgres(&base));
    }
}
