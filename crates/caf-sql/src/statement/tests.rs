//! Fixed statements on both backends: every row count round-trips, shapes are prepared once.

use super::arrays::{columns, Kind};
use super::fixed::{batches, execute_groups, insert_rows, padded, Fixed, Row, MAX_GROUPS};
use super::{shape, Param};
use crate::connection::{open, AnyConnection, Backend, SqlOptions, Target};
use diesel::connection::{InstrumentationEvent, SimpleConnection};
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::{Connection, QueryableByName, RunQueryDsl};
use std::sync::{Arc, Mutex};

shape!(
    InsertPairs,
    "INSERT INTO fixed_test (n, label) VALUES ",
    "(?, ?)",
    ""
);
shape!(
    MarkPairs,
    "UPDATE fixed_test SET mark = ? WHERE label = ? AND n IN (",
    "?",
    ")"
);

struct Pair(i64, Option<String>);

impl Row for Pair {
    const KINDS: &'static [Kind] = &[Kind::Int, Kind::OptText];

    fn values<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([Param::Int(self.0), Param::OptText(self.1.as_deref())]);
    }
}

#[derive(QueryableByName, Debug, PartialEq)]
struct Stored {
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = Nullable<Text>)]
    label: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    mark: Option<i64>,
}

/// A SQLite database in a temporary directory, and the PostgreSQL test database when
/// `CAF_TEST_POSTGRES_URL` is set; each with an empty temporary table `fixed_test`.
fn connections() -> Vec<(AnyConnection, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Target::Sqlite(dir.path().join("fixed.db"));
    let mut all = vec![(open(&sqlite, &SqlOptions::default()).unwrap(), Some(dir))];
    match std::env::var("CAF_TEST_POSTGRES_URL") {
        Ok(url) => {
            let pg = Target::parse(&url).unwrap();
            all.push((open(&pg, &SqlOptions::default()).unwrap(), None));
        }
        Err(_) => eprintln!("statement tests: PostgreSQL skipped (set CAF_TEST_POSTGRES_URL)"),
    }
    for (conn, _) in &mut all {
        conn.batch_execute("CREATE TEMPORARY TABLE fixed_test (n BIGINT, label TEXT, mark BIGINT)")
            .unwrap();
    }
    all
}

fn stored(conn: &mut AnyConnection) -> Vec<Stored> {
    diesel::sql_query("SELECT n, label, mark FROM fixed_test ORDER BY n")
        .load(conn)
        .unwrap()
}

shape!(
    InsertPairsFromArrays,
    "INSERT INTO fixed_test (n, label) SELECT * FROM unnest(?, ?)"
);

/// Checks that `row` gives values of the kinds it declares.
pub(crate) fn assert_kinds<R: Row>(row: &R) {
    let mut values = Vec::new();
    row.values(&mut values);
    let kinds: Vec<Option<Kind>> = values.iter().map(Kind::of).collect();
    let declared: Vec<Option<Kind>> = R::KINDS.iter().map(|k| Some(*k)).collect();
    assert_eq!(kinds, declared);
}

#[test]
fn rows_of_any_count_go_in_as_arrays_on_postgres_and_are_refused_on_sqlite() {
    for (mut conn, _dir) in connections() {
        let backend = conn.backend();
        let mut expected = Vec::new();
        for count in [0, 1, 100] {
            let start = expected.len() as i64;
            let rows: Vec<Pair> = (start..start + count)
                .map(|n| Pair(n, (n % 2 == 0).then(|| format!("{n}"))))
                .collect();
            rows.iter().for_each(assert_kinds);
            let arrays = columns(&rows).unwrap();
            let values: Vec<Param<'_>> = arrays.iter().map(Param::Array).collect();
            let done = super::fixed::execute::<InsertPairsFromArrays>(&mut conn, &values);
            if backend == Backend::Sqlite {
                assert!(done.is_err());
                continue;
            }
            assert_eq!(done.unwrap(), rows.len());
            expected.extend(rows.iter().map(|p| Stored {
                n: p.0,
                label: p.1.clone(),
                mark: None,
            }));
            assert_eq!(stored(&mut conn), expected, "{count} rows");
        }
        if backend == Backend::Sqlite {
            assert!(stored(&mut conn).is_empty());
        }
    }
}

#[test]
fn a_row_whose_values_do_not_match_its_kinds_is_refused() {
    struct Wrong;
    impl Row for Wrong {
        const KINDS: &'static [Kind] = &[Kind::Int, Kind::Text];
        fn values<'a>(&'a self, out: &mut Vec<Param<'a>>) {
            out.extend([Param::Int(1), Param::OptText(None)]);
        }
    }
    assert!(columns(&[Wrong]).is_err());
    assert!(columns::<Wrong>(&[]).is_ok());
}

#[test]
fn batches_cut_every_count_into_few_fixed_shapes() {
    assert_eq!(batches(0).count(), 0);
    assert_eq!(batches(1).collect::<Vec<_>>(), [1]);
    assert_eq!(batches(5).collect::<Vec<_>>(), [4, 1]);
    assert_eq!(batches(64).collect::<Vec<_>>(), [64]);
    assert_eq!(batches(65).collect::<Vec<_>>(), [64, 1]);
    assert_eq!(batches(200).collect::<Vec<_>>(), [64, 64, 64, 8]);
    for n in 0..300 {
        let sizes: Vec<usize> = batches(n).collect();
        assert_eq!(sizes.iter().sum::<usize>(), n, "{n}");
        assert!(sizes
            .iter()
            .all(|s| s.is_power_of_two() && *s <= MAX_GROUPS));
        assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{n}: largest first");
        assert!(sizes.len() <= n / MAX_GROUPS + 6, "{n}: {sizes:?}");
    }
}

#[test]
fn in_lists_are_padded_to_a_power_of_two_with_their_last_value() {
    assert_eq!(padded::<i64>(&[]).count(), 0);
    assert_eq!(padded(&[7]).collect::<Vec<_>>(), [vec![7]]);
    assert_eq!(padded(&[1, 2, 3]).collect::<Vec<_>>(), [vec![1, 2, 3, 3]]);
    let many: Vec<i64> = (0..70).collect();
    let lists: Vec<Vec<i64>> = padded(&many).collect();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[0], (0..64).collect::<Vec<_>>());
    assert_eq!(lists[1], [64, 65, 66, 67, 68, 69, 69, 69]);
}

#[test]
fn the_placeholders_of_a_shape_grow_with_its_groups() {
    assert_eq!(Fixed::<InsertPairs, 1>::placeholders(), 2);
    assert_eq!(Fixed::<InsertPairs, 64>::placeholders(), 128);
    assert_eq!(Fixed::<MarkPairs, 4>::placeholders(), 6);
}

/// The text a shape renders, its values bound as each backend writes placeholders: the head,
/// the groups joined by the separator, the tail, each cut at its `?`s once per shape.
#[test]
fn a_shape_renders_its_head_groups_and_tail_with_each_backend_s_placeholders() {
    let values = [
        Param::Int(1),
        Param::Text("a"),
        Param::Int(2),
        Param::OptText(None),
    ];
    // The text before ` -- binds: `, which lists the values.
    macro_rules! rendered {
        ($shape:ty, $db:ty) => {{
            let query = Fixed::<$shape, 2>::new(&values);
            let text = diesel::debug_query::<$db, _>(&query).to_string();
            text.split(" -- binds: ")
                .next()
                .unwrap_or_default()
                .to_string()
        }};
    }
    // As SQLite writes them; PostgreSQL numbers the placeholders.
    let expected = [
        "INSERT INTO fixed_test (n, label) VALUES (?, ?), (?, ?)",
        "UPDATE fixed_test SET mark = ? WHERE label = ? AND n IN (?, ?)",
    ];
    #[cfg(feature = "sqlite")]
    {
        use diesel::sqlite::Sqlite;
        let got = [rendered!(InsertPairs, Sqlite), rendered!(MarkPairs, Sqlite)];
        assert_eq!(got, expected);
    }
    #[cfg(feature = "postgres")]
    {
        use diesel::pg::Pg;
        let numbered = |text: &str| {
            let mut parts = text.split('?');
            let mut out = parts.next().unwrap_or_default().to_string();
            for (n, part) in (1..).zip(parts) {
                out.push_str(&format!("${n}{part}"));
            }
            out
        };
        let got = [rendered!(InsertPairs, Pg), rendered!(MarkPairs, Pg)];
        assert_eq!(got, expected.map(numbered));
    }
}

#[test]
fn multi_row_inserts_round_trip_at_every_boundary() {
    for (mut conn, _dir) in connections() {
        let backend = conn.backend();
        let mut expected = Vec::new();
        for count in [0, 1, 2, 3, 5, 63, 64, 65, 130, 200] {
            let start = expected.len() as i64;
            let rows: Vec<Pair> = (start..start + count)
                .map(|n| Pair(n, (n % 3 != 0).then(|| format!("row {n} \u{e9}"))))
                .collect();
            insert_rows::<InsertPairs, _>(&mut conn, &rows).unwrap();
            expected.extend(rows.iter().map(|p| Stored {
                n: p.0,
                label: p.1.clone(),
                mark: None,
            }));
            assert_eq!(stored(&mut conn), expected, "{backend}: {count} rows");
        }
    }
}

#[test]
fn padded_in_lists_change_each_listed_row_once() {
    for (mut conn, _dir) in connections() {
        let rows: Vec<Pair> = (0..100).map(|n| Pair(n, Some("x".into()))).collect();
        insert_rows::<InsertPairs, _>(&mut conn, &rows).unwrap();
        let listed: Vec<i64> = (0..100).filter(|n| n % 7 == 0).chain([99]).collect();
        let mut changed = 0;
        for list in padded(&listed) {
            let mut values = vec![Param::Int(1), Param::Text("x")];
            values.extend(list.iter().map(|n| Param::Int(*n)));
            changed += execute_groups::<MarkPairs>(&mut conn, list.len(), &values).unwrap();
        }
        assert_eq!(changed, listed.len(), "{}", conn.backend());
        let marked: Vec<i64> = stored(&mut conn)
            .into_iter()
            .filter(|s| s.mark == Some(1))
            .map(|s| s.n)
            .collect();
        assert_eq!(marked, listed);
    }
}

#[test]
fn values_that_do_not_fit_the_shape_are_refused() {
    for (mut conn, _dir) in connections() {
        let too_few = [Param::Int(1)];
        assert!(execute_groups::<InsertPairs>(&mut conn, 1, &too_few).is_err());
        let too_many = [Param::Int(1), Param::OptText(None), Param::Int(2)];
        assert!(execute_groups::<InsertPairs>(&mut conn, 1, &too_many).is_err());
        assert!(execute_groups::<InsertPairs>(&mut conn, 3, &[]).is_err());
        assert!(stored(&mut conn).is_empty());
    }
}

/// The SQL of every statement a connection prepares for its cache, and of every statement it
/// runs (transaction control left out).
#[derive(Default)]
pub(crate) struct Seen {
    pub prepared: Vec<String>,
    pub run: Vec<String>,
}

/// Records what `conn` prepares and runs from now on.
pub(crate) fn watch(conn: &mut AnyConnection) -> Arc<Mutex<Seen>> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let record = seen.clone();
    conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
        let mut seen = record.lock().unwrap();
        match event {
            InstrumentationEvent::CacheQuery { sql, .. } => seen.prepared.push(sql.to_string()),
            InstrumentationEvent::StartQuery { query, .. } => {
                let sql = query.to_string();
                let word = sql.split_whitespace().next().unwrap_or("").to_uppercase();
                if !matches!(word.as_str(), "BEGIN" | "COMMIT" | "ROLLBACK") {
                    seen.run.push(sql);
                }
            }
            _ => {}
        }
    });
    seen
}

#[test]
fn each_shape_is_prepared_once_and_reused() {
    for (mut conn, _dir) in connections() {
        let seen = watch(&mut conn);
        let mut n = 0;
        for _ in 0..3 {
            let rows: Vec<Pair> = (n..n + 5).map(|i| Pair(i, None)).collect();
            insert_rows::<InsertPairs, _>(&mut conn, &rows).unwrap();
            n += 5;
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.run.len(), 6, "5 rows: 4 + 1, three times");
        assert_eq!(seen.prepared.len(), 2, "{:?}", seen.prepared);
    }
}
