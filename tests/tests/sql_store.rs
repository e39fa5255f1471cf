//! The store conformance suite on [`caf_sql::SqlStore`]: SQLite always (a fresh file per
//! store), PostgreSQL when `CAF_TEST_POSTGRES_URL` is set (a fresh database per store).

#![allow(clippy::unwrap_used)]

mod sql_common;

mod sqlite {
    caf_tests::conformance_tests!(crate::sql_common::TempSql::sqlite);
}

/// Each check its own test on PostgreSQL too, so that one failure does not hide the rest.
mod postgres {
    caf_tests::conformance_tests!(optional crate::sql_common::pg_base => crate::sql_common::TempSql::postgres);
}

mod hybrid {
    caf_tests::conformance_tests!(crate::sql_common::TempHybrid::new);
}

/// After the hybrid suite's saves and deletes, the database agrees with the files.
#[test]
fn hybrid_database_mirrors_the_files() {
    use caf_core::{CheckpointStore, ListFilter};
    let h = sql_common::TempHybrid::new();
    for c in sql_common::runs::demo_run(7, 10) {
        h.save(&c).unwrap();
    }
    let files = h.files().list(&ListFilter::default()).unwrap();
    let sql = h.sql().list_checkpoints(&ListFilter::default()).unwrap();
    assert_eq!(files, sql);
    for s in &files {
        assert_eq!(
            h.sql().load_checkpoint(&s.id).unwrap(),
            h.files().load(&s.id).unwrap()
        );
    }
    let victim = files[3].id.clone();
    assert!(h.delete(&victim).unwrap());
    assert!(h.sql().load_checkpoint(&victim).is_err());
    assert_eq!(
        h.files().list(&ListFilter::default()).unwrap(),
        h.sql().list_checkpoints(&ListFilter::default()).unwrap()
    );
}
