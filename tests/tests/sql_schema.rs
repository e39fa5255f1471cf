//! The migrations create exactly the tables and columns of `crates/caf-sql/src/schema.rs`
//! (names, order, types, nullability), on SQLite and (with `CAF_TEST_POSTGRES_URL`)
//! PostgreSQL.

#![allow(clippy::unwrap_used)]

mod sql_common;

use serde_json::json;
use sql_common::{on_each_backend, TempSql};
use std::collections::BTreeMap;

fn sql(db: &TempSql, q: &str) -> caf_sql::SqlRows {
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
    assert_eq!(want.len(), 8, "{:?}", want.keys());
    on_each_backend("the_migrations_create_exactly_schema_rs", |db| {
        let sqlite = db.backend() == caf_sql::Backend::Sqlite;
        let tables = if sqlite {
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations' ORDER BY name"
        } else {
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = \
             current_schema() AND table_name <> '__diesel_schema_migrations' ORDER BY table_name"
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
