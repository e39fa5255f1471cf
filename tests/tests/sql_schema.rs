//! The migrations create exactly the tables and columns of `crates/caf-sql/src/schema.rs`
//! (names, order, types, nullability), and the read-only views of docs/sql.md, on SQLite and
//! (with `CAF_TEST_POSTGRES_URL`) PostgreSQL.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::CheckpointStore;
use serde_json::json;
use sql_common::runs::{agent_run, demo_run};
use sql_common::{on_each_backend, TempSql};
use std::collections::BTreeMap;

fn sql(db: &caf_sql::SqlStore, q: &str) -> caf_sql::SqlRows {
    db.read_only_sql(q).unwrap_or_else(|e| panic!("{q}: {e}"))
}

/// The tables of `schema.rs`: name → columns (name, diesel type with `Nullable<…>`).
fn schema_rs() -> BTreeMap<String, Vec<(String, String)>> {
    let text = include_str!("../../crates/caf-sql/src/schema.rs");
    let mut tables = BTreeMap::new();
    let mut current: Option<(String, Vec<(String, String)>)> = None;
    let mut sql_name: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_suffix('{').map(str::trim) {
            if let Some(name) = rest
                .split(" (")
                .next()
                .filter(|n| !n.contains(' ') && !n.is_empty())
            {
                if rest.contains('(') {
                    current = Some((name.to_string(), Vec::new()));
                }
            }
        } else if let Some(name) = line
            .strip_prefix("#[sql_name = \"")
            .and_then(|r| r.strip_suffix("\"]"))
        {
            sql_name = Some(name.to_string());
        } else if let (Some((_, cols)), Some((name, ty))) =
            (current.as_mut(), line.split_once(" -> "))
        {
            let name = sql_name.take().unwrap_or_else(|| name.to_string());
            cols.push((name, ty.trim_end_matches(',').to_string()));
        } else if line == "}" {
            if let Some((name, cols)) = current.take() {
                tables.insert(name, cols);
            }
        }
    }
    tables
}

/// The diesel type a column of the database maps to.
fn diesel_type(db_type: &str, nullable: bool) -> String {
    let base = match db_type.to_ascii_lowercase().as_str() {
        "text" => "Text",
        "bigint" | "integer" => "BigInt",
        "double" | "double precision" => "Double",
        "boolean" => "Bool",
        other => panic!("unexpected column type {other}"),
    };
    if nullable {
        format!("Nullable<{base}>")
    } else {
        base.to_string()
    }
}

#[test]
fn the_migrations_create_exactly_schema_rs() {
    let want = schema_rs();
    assert_eq!(want.len(), 11, "{:?}", want.keys());
    on_each_backend("the_migrations_create_exactly_schema_rs", |db| {
        let sqlite = db.backend() == caf_sql::Backend::Sqlite;
        let tables = if sqlite {
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations' ORDER BY name"
        } else {
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = \
             current_schema() AND table_type = 'BASE TABLE' \
             AND table_name <> '__diesel_schema_migrations' ORDER BY table_name"
        };
        let names: Vec<String> = sql(db, tables)
            .rows
            .into_iter()
            .map(|r| r[0].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, want.keys().cloned().collect::<Vec<_>>());
        for (table, columns) in &want {
            let q = if sqlite {
                format!("SELECT name, type, \"notnull\" = 0 FROM pragma_table_info('{table}') ORDER BY cid")
            } else {
                format!(
                    "SELECT column_name::text, data_type::text, is_nullable = 'YES' FROM \
                     information_schema.columns WHERE table_schema = current_schema() AND \
                     table_name = '{table}' ORDER BY ordinal_position"
                )
            };
            let got: Vec<(String, String)> = sql(db, &q)
                .rows
                .into_iter()
                .map(|r| {
                    let nullable = r[2] == json!(true) || r[2] == json!(1);
                    (
                        r[0].as_str().unwrap().to_string(),
                        diesel_type(r[1].as_str().unwrap(), nullable),
                    )
                })
                .collect();
            assert_eq!(&got, columns, "table {table} on {}", db.backend());
        }
    });
}

/// A time column of a view as an instant: ISO 8601 text on SQLite (exactly the files' form),
/// `timestamptz` on PostgreSQL (which `read_only_sql` gives as RFC 3339).
fn instant(v: &serde_json::Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("{v}")))
        .unwrap_or_else(|e| panic!("{v}: {e}"))
        .with_timezone(&chrono::Utc)
}

#[test]
fn the_views_read_like_the_files() {
    on_each_backend("the_views_read_like_the_files", |db| {
        let sqlite = db.backend() == caf_sql::Backend::Sqlite;
        let names = if sqlite {
            "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name"
        } else {
            "SELECT table_name::text FROM information_schema.views \
             WHERE table_schema = current_schema() ORDER BY table_name"
        };
        let views: Vec<serde_json::Value> = sql(db, names)
            .rows
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        assert_eq!(
            views,
            [
                json!("checkpoints_v"),
                json!("executions_v"),
                json!("thoughts_v"),
                json!("tool_calls_v")
            ]
        );
        let run = agent_run(2, 5);
        for c in &run {
            db.save(c).unwrap();
        }
        // Checkpoints: the time as in the file (to the microsecond), and the exact microseconds.
        for c in &run {
            let r = sql(
                db,
                &format!(
                    "SELECT \"timestamp\", timestamp_us, thoughts, tool_calls FROM checkpoints_v \
                     WHERE id = '{}'",
                    c.id
                ),
            );
            let row = &r.rows[0];
            let in_file = serde_json::to_value(c.timestamp).unwrap();
            if sqlite {
                assert_eq!(row[0], in_file);
            }
            assert_eq!(instant(&row[0]), instant(&in_file));
            assert_eq!(row[1], json!(c.timestamp.as_micros()));
            assert_eq!(row[2], json!(c.thought_count()));
            assert_eq!(row[3], json!(c.snapshot.tool_state.calls.len()));
        }
        // Executions: started at their first checkpoint.
        let r = sql(
            db,
            "SELECT id, started_at, started_at_us, status FROM executions_v ORDER BY id",
        );
        assert_eq!(r.rows.len(), 2);
        for row in &r.rows {
            let first = run
                .iter()
                .find(|c| json!(c.execution_id.as_str()) == row[0])
                .unwrap();
            assert_eq!(instant(&row[1]), first.timestamp.as_datetime());
            assert_eq!(row[2], json!(first.timestamp.as_micros()));
        }
        // Items: one row per thought and tool call (their current revision), with times.
        let n = |q: &str| sql(db, q).rows[0][0].clone();
        assert_eq!(n("SELECT COUNT(*) FROM thoughts_v"), json!(10));
        assert_eq!(n("SELECT COUNT(*) FROM tool_calls_v"), json!(10));
        let last = run.last().unwrap();
        let call = last.snapshot.tool_state.calls.last().unwrap();
        let r = sql(
            db,
            &format!(
                "SELECT tool_id, status, started_at, completed_at, duration_ms FROM tool_calls_v \
                 WHERE id = '{}' AND execution_id = '{}'",
                call.id, last.execution_id
            ),
        );
        let row = &r.rows[0];
        assert_eq!(row[0], json!(call.tool_id));
        assert_eq!(row[1], json!("completed"));
        let (started, completed) = (call.started_at.unwrap(), call.completed_at.unwrap());
        assert_eq!(instant(&row[2]), started.as_datetime());
        assert_eq!(instant(&row[3]), completed.as_datetime());
        assert_eq!(
            row[4],
            json!((completed.as_micros() - started.as_micros()) / 1000)
        );
        // A call saved running, then completed: two revisions in the table, one in the view.
        let demo = demo_run(3, 4);
        for c in &demo {
            db.save(c).unwrap();
        }
        let q = "SELECT COUNT(*) FROM tool_calls t WHERE t.execution_id = 'exec_demo_3'";
        let revisions = n(q).as_i64().unwrap();
        let current = n("SELECT COUNT(*) FROM tool_calls_v WHERE execution_id = 'exec_demo_3'")
            .as_i64()
            .unwrap();
        assert!(current < revisions, "{current} of {revisions}");
        // Read-only views: writing through them fails (and `caf sql` is read-only anyway).
        assert!(db.read_only_sql("DELETE FROM checkpoints_v").is_err());
    });
}

/// The ```sql blocks of docs/sql.md (`-- SQLite` / `-- PostgreSQL` on a block's first line:
/// that backend only).
fn doc_queries() -> Vec<(Option<caf_sql::Backend>, String)> {
    let text = include_str!("../../docs/sql.md");
    let mut out = Vec::new();
    let mut block: Option<Vec<&str>> = None;
    for line in text.lines() {
        match (&mut block, line) {
            (None, "```sql") => block = Some(Vec::new()),
            (Some(lines), "```") => {
                let only = match lines.first() {
                    Some(&"-- SQLite") => Some(caf_sql::Backend::Sqlite),
                    Some(&"-- PostgreSQL") => Some(caf_sql::Backend::Postgres),
                    _ => None,
                };
                out.push((only, lines.join("\n")));
                block = None;
            }
            (Some(lines), l) => lines.push(l),
            (None, _) => {}
        }
    }
    out
}

/// Every example query of docs/sql.md runs, on each backend it is given for.
#[test]
fn the_example_queries_of_the_docs_run() {
    let queries = doc_queries();
    assert!(queries.len() >= 12, "{queries:#?}");
    on_each_backend("the_example_queries_of_the_docs_run", |db| {
        let run = demo_run(5, 6);
        for c in &run {
            db.save(c).unwrap();
        }
        let last = run.last().unwrap();
        let mut ran = 0;
        for (only, q) in &queries {
            if only.is_some_and(|b| b != db.backend()) {
                continue;
            }
            let q = q
                .replace("'ckpt_…'", &format!("'{}'", last.id))
                .replace("'exec_…'", &format!("'{}'", last.execution_id));
            let rows = db
                .read_only_sql(&q)
                .unwrap_or_else(|e| panic!("{}: {q}\n{e}", db.backend()));
            assert!(!rows.columns.is_empty(), "{q}");
            ran += 1;
        }
        assert!(ran >= 12, "{ran}");
    });
}

/// docs/sql.md has a section for every table and view, naming each of its columns.
#[test]
fn the_docs_describe_every_table_view_and_column() {
    let text = include_str!("../../docs/sql.md");
    let section = |name: &str| -> &str {
        let head = format!("### `{name}`");
        let start = text
            .find(&head)
            .unwrap_or_else(|| panic!("docs/sql.md has no section {head}"));
        let rest = &text[start + head.len()..];
        &rest[..rest
            .find("\n### ")
            .or_else(|| rest.find("\n## "))
            .unwrap_or(rest.len())]
    };
    for (table, columns) in schema_rs() {
        let body = section(&table);
        for (column, _) in columns {
            assert!(
                body.contains(&format!("`{column}`")),
                "{table}.{column} undocumented"
            );
        }
    }
    let db = TempSql::sqlite();
    for view in [
        "executions_v",
        "checkpoints_v",
        "thoughts_v",
        "tool_calls_v",
    ] {
        let body = section(view);
        let columns = sql(
            &db,
            &format!("SELECT name FROM pragma_table_info('{view}')"),
        );
        assert!(!columns.rows.is_empty(), "{view}");
        for c in columns.rows {
            let column = c[0].as_str().unwrap();
            assert!(
                body.contains(&format!("`{column}`")),
                "{view}.{column} undocumented"
            );
        }
    }
}

/// A database made before the views existed gets them the next time caf opens it.
#[test]
fn an_older_database_gets_the_views_when_opened() {
    use diesel::connection::SimpleConnection;
    use diesel::Connection;
    let db = TempSql::sqlite();
    let path = db.sqlite_path().unwrap().to_path_buf();
    let url = db.url();
    {
        let mut c = diesel::SqliteConnection::establish(&path.display().to_string()).unwrap();
        c.batch_execute(
            "DROP VIEW tool_calls_v; DROP VIEW thoughts_v; DROP VIEW checkpoints_v; \
             DROP VIEW executions_v; \
             DELETE FROM __diesel_schema_migrations WHERE version LIKE '20261130%';",
        )
        .unwrap();
    }
    let store = caf_sql::SqlStore::open(&url).unwrap();
    let r = store
        .read_only_sql("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view'")
        .unwrap();
    assert_eq!(r.rows[0][0], json!(4));
    drop(store);
    drop(db);
}

/// The folder of the SQLite migration that rekeyed `entries` and made `checkpoint_labels` and
/// `unflushed_files` WITHOUT ROWID.
const FEWER_PAGES: &str = "2026-12-03-000000_fewer_pages";

/// The SQLite migrations, oldest first: (folder name, up.sql, down.sql).
fn sqlite_migrations() -> Vec<(String, String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/sqlite");
    let mut out: Vec<(String, String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let read = |f: &str| std::fs::read_to_string(path.join(f)).unwrap();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            (name, read("up.sql"), read("down.sql"))
        })
        .collect();
    out.sort();
    out
}

/// Every object of a SQLite file but diesel's table: (type, name, table, SQL), by name.
fn sqlite_objects(c: &mut diesel::SqliteConnection) -> Vec<(String, String, String, String)> {
    use diesel::prelude::*;
    use diesel::sql_types::Text;
    #[derive(QueryableByName)]
    struct Object {
        #[diesel(sql_type = Text)]
        kind: String,
        #[diesel(sql_type = Text)]
        name: String,
        #[diesel(sql_type = Text)]
        tbl: String,
        #[diesel(sql_type = Text)]
        text: String,
    }
    diesel::sql_query(
        "SELECT type AS kind, name, tbl_name AS tbl, COALESCE(sql, '') AS text \
         FROM sqlite_schema WHERE tbl_name <> '__diesel_schema_migrations' ORDER BY name",
    )
    .load::<Object>(c)
    .unwrap()
    .into_iter()
    .map(|o| (o.kind, o.name, o.tbl, o.text))
    .collect()
}

/// Every row of every table, in key order, as `read_only_sql` reads them.
fn every_row(store: &caf_sql::SqlStore) -> BTreeMap<&'static str, Vec<Vec<serde_json::Value>>> {
    [
        ("executions", "id"),
        ("lines", "id"),
        ("checkpoints", "id"),
        ("checkpoint_labels", "checkpoint_id, label"),
        ("thoughts", "line_id, position, from_seq"),
        ("tool_calls", "line_id, position, from_seq"),
        ("steps", "line_id, position, from_seq"),
        ("entries", "line_id, part, position, from_seq"),
        ("pruned", "id"),
        ("unflushed_files", "writer, n"),
    ]
    .into_iter()
    .map(|(table, key)| {
        let q = format!("SELECT * FROM {table} ORDER BY {key}");
        let rows = store
            .read_only_sql(&q)
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        (table, rows.rows)
    })
    .collect()
}

/// The indexes, keys and WITHOUT ROWID tables are deliberate: a save writes about one page per
/// b-tree it changes (`docs/sql.md`, "Indexes"; `sql_pages.rs`). PostgreSQL has four named
/// indexes more than SQLite (the `…_current` of the items and the entries); on SQLite the labels and the unflushed files keep their rows in their
/// key's b-tree (no `sqlite_autoindex_…`), and the key of `entries` puts the rows of one save
/// together.
#[test]
fn the_indexes_are_those_the_queries_need() {
    let named = [
        "checkpoint_labels_label",
        "checkpoints_agent",
        "checkpoints_execution_time",
        "checkpoints_reason",
        "checkpoints_time",
        "executions_agent",
        "executions_status",
        "lines_execution",
        "tool_calls_tool",
    ];
    on_each_backend("the_indexes_are_those_the_queries_need", |db| {
        let sqlite = db.backend() == caf_sql::Backend::Sqlite;
        let q = if sqlite {
            "SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name"
        } else {
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() \
             AND indexname NOT LIKE '%_pkey' ORDER BY indexname"
        };
        let mut want: Vec<String> = named.iter().map(|s| s.to_string()).collect();
        if sqlite {
            // The keys of the rowid tables whose key is not their rowid, and UNIQUE (line_id,
            // seq) of `checkpoints`.
            want.extend(
                [
                    "sqlite_autoindex___diesel_schema_migrations_1",
                    "sqlite_autoindex_checkpoints_1",
                    "sqlite_autoindex_checkpoints_2",
                    "sqlite_autoindex_entries_1",
                    "sqlite_autoindex_executions_1",
                    "sqlite_autoindex_pruned_1",
                    "sqlite_autoindex_steps_1",
                    "sqlite_autoindex_thoughts_1",
                    "sqlite_autoindex_tool_calls_1",
                ]
                .map(String::from),
            );
        } else {
            // PostgreSQL's save looks current revisions up in the unique `…_current` indexes;
            // SQLite's closes them through the tables' keys (`…_fewer_item_indexes`,
            // `…_entries_closed_by_key`).
            want.extend(
                [
                    "checkpoints_line_id_seq_key",
                    "entries_current",
                    "steps_current",
                    "thoughts_current",
                    "tool_calls_current",
                ]
                .map(String::from),
            );
        }
        want.sort();
        let got: Vec<String> = sql(db, q)
            .rows
            .into_iter()
            .map(|r| r[0].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, want, "on {}", db.backend());
        let key = if sqlite {
            "SELECT name FROM pragma_index_info('sqlite_autoindex_entries_1') ORDER BY seqno"
        } else {
            "SELECT a.attname::text FROM pg_index i \
             CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k (attnum, n) \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
             WHERE i.indexrelid = 'entries_pkey'::regclass ORDER BY k.n"
        };
        let key: Vec<serde_json::Value> = sql(db, key)
            .rows
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        assert_eq!(
            key,
            ["line_id", "from_seq", "part", "position"].map(|s| json!(s))
        );
        if sqlite {
            let without_rowid: Vec<serde_json::Value> = sql(
                db,
                "SELECT name FROM pragma_table_list WHERE schema = 'main' AND wr ORDER BY name",
            )
            .rows
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
            assert_eq!(
                without_rowid,
                ["checkpoint_labels", "journal_slots", "unflushed_files"].map(|s| json!(s))
            );
        }
    });
}

/// A SQLite database of the schema before `…_fewer_pages` (and `…_fewer_item_indexes`), with rows in it (a forked demo run
/// with labels, a failure and a resume; agent runs; a deleted checkpoint; a tombstone; an
/// unflushed file), migrates when caf opens it: every row is kept as it was, every checkpoint
/// loads back equal, listings and statistics are the same, and saving goes on. The old
/// schema is made by the migrations' `down.sql`, checked equal to what the older migrations
/// create in an empty file, so `down.sql` is tested too.
#[test]
fn a_database_of_the_previous_schema_migrates_keeping_every_row() {
    use diesel::connection::SimpleConnection;
    use diesel::Connection;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("caf.db");
    let url = format!("sqlite://{}", path.display());
    let mut saved = demo_run(7, 6);
    saved.extend(agent_run(2, 12));
    let (first, rest) = saved.split_at(saved.len() - 6);
    let deleted = first[3].id.clone();
    let before = {
        let store = caf_sql::SqlStore::open(&url).unwrap();
        for c in first {
            store.save(c).unwrap();
        }
        assert!(store.delete(&deleted).unwrap());
        diesel::SqliteConnection::establish(&path.display().to_string())
            .unwrap()
            .batch_execute(
                "INSERT INTO pruned (id, parent_id, execution_id, timestamp, pruned_at) \
                 VALUES ('ckpt_gone', NULL, 'exec_run_000', 1, 2); \
                 INSERT INTO unflushed_files (writer, n, store_id, boot_id, checkpoint_id) \
                 VALUES (7, 1, 'store', 'boot', 'ckpt_gone')",
            )
            .unwrap();
        (
            every_row(&store),
            store.list_checkpoints(&Default::default()).unwrap(),
            store.stats(None).unwrap(),
        )
    };
    assert!(before.1.len() > 20, "{}", before.1.len());
    for (table, rows) in &before.0 {
        assert!(
            !rows.is_empty(),
            "no rows in {table}: the test would prove nothing there"
        );
    }
    let migrations = sqlite_migrations();
    let since = migrations
        .iter()
        .position(|(name, _, _)| name == FEWER_PAGES)
        .unwrap();
    let mut c = diesel::SqliteConnection::establish(&path.display().to_string()).unwrap();
    // Every migration from `…_fewer_pages` on, undone newest first.
    for (name, _, down) in migrations[since..].iter().rev() {
        let version: String = name.split('_').next().unwrap().replace('-', "");
        c.batch_execute(&format!(
            "PRAGMA foreign_keys = ON; BEGIN IMMEDIATE; {down} \
             DELETE FROM __diesel_schema_migrations WHERE version = '{version}'; COMMIT;"
        ))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let old_dir = tempfile::tempdir().unwrap();
    let mut old =
        diesel::SqliteConnection::establish(&old_dir.path().join("old.db").display().to_string())
            .unwrap();
    for (name, up, _) in migrations
        .iter()
        .take_while(|(name, _, _)| name != FEWER_PAGES)
    {
        old.batch_execute(up)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let old_schema = sqlite_objects(&mut old);
    assert!(old_schema.iter().any(|o| o.1 == "checkpoints_parent"));
    assert_eq!(sqlite_objects(&mut c), old_schema);
    drop(c);

    let store = caf_sql::SqlStore::open(&url).unwrap();
    let after = (
        every_row(&store),
        store.list_checkpoints(&Default::default()).unwrap(),
        store.stats(None).unwrap(),
    );
    assert_eq!(after.0, before.0);
    assert_eq!(after.1, before.1);
    assert_eq!(after.2, before.2);
    for c in first.iter().filter(|c| c.id != deleted) {
        assert_eq!(&store.load(&c.id).unwrap(), c, "{}", c.id);
    }
    for c in rest {
        store.save(c).unwrap();
        assert_eq!(&store.load(&c.id).unwrap(), c, "{}", c.id);
    }
    let rows = sql(&store, "SELECT COUNT(*) FROM checkpoints").rows[0][0].clone();
    assert_eq!(rows, json!(before.1.len() + rest.len()));
}

/// On SQLite, with no index of the items on their execution or current revision
/// (`…_fewer_item_indexes`), the statements that used them still search the items' key: a save
/// closing current revisions, statistics of one execution, deleting an execution. (A plan that
/// scans a table would make each of them read every revision of every execution.)
#[test]
fn sqlite_reaches_items_through_their_key() {
    use diesel::{Connection, QueryableByName, RunQueryDsl};
    #[derive(QueryableByName)]
    struct Step {
        #[diesel(sql_type = diesel::sql_types::Text)]
        detail: String,
    }
    let db = TempSql::sqlite();
    for c in agent_run(1, 3) {
        db.save(&c).unwrap();
    }
    let mut c =
        diesel::SqliteConnection::establish(&db.sqlite_path().unwrap().display().to_string())
            .unwrap();
    let of_execution = "line_id IN (SELECT id FROM lines WHERE execution_id = 'e')";
    for table in ["thoughts", "tool_calls", "steps"] {
        let statements = [
            format!(
                "UPDATE {table} SET to_seq = 9 WHERE line_id = 1 AND to_seq IS NULL \
                 AND position IN (1, 2)"
            ),
            format!(
                "SELECT execution_id, COUNT(DISTINCT from_seq) FROM {table} \
                 WHERE {of_execution} GROUP BY execution_id"
            ),
            format!("DELETE FROM {table} WHERE {of_execution}"),
        ];
        for sql in statements {
            let plan: Vec<String> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}"))
                .load::<Step>(&mut c)
                .unwrap()
                .into_iter()
                .map(|s| s.detail)
                .collect();
            let key = format!("sqlite_autoindex_{table}_1 (line_id=?");
            assert!(
                plan.iter()
                    .any(|d| d.starts_with(&format!("SEARCH {table} USING")) && d.contains(&key))
                    && !plan.iter().any(|d| d.starts_with(&format!("SCAN {table}"))),
                "{sql}: {plan:?}"
            );
        }
    }
}
