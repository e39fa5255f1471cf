//! The database itself rather than its rows: a directory's own database (`DIR/.caf/caf.db`)
//! that is missing or damaged ([`crate::own_database`]). [`verify_store`] reports it (and checks
//! the files and index without it); [`repair_store`] moves a damaged one to the quarantine,
//! creates a new one and fills it from the files.

use super::repair::{repair, Quarantine, Repair, RepairOptions, RepairReport};
use super::{verify, Result, VerifyError, VerifyReport};
use crate::connection::with_inner;
use crate::open::{Location, OpenError};
use crate::{SqlError, SqlStore};
use serde::Serialize;
use std::path::PathBuf;

/// What is wrong with a directory's own database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DatabaseProblemKind {
    /// The directory had its own database, and its file is gone.
    Missing,
    /// SQLite cannot read it (truncated, overwritten, malformed pages).
    Damaged,
}

/// A directory's own database, missing or damaged. [`repair_store`] rebuilds it from the files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DatabaseProblem {
    /// What is wrong.
    pub kind: DatabaseProblemKind,
    /// The database file.
    pub path: PathBuf,
    /// What is wrong, in one line (it does not repeat the path).
    pub message: String,
}

/// What SQLite's `PRAGMA quick_check` says of the database, `None` if it finds nothing wrong
/// (and always on PostgreSQL, whose server looks after its own files).
fn quick_check(db: &SqlStore) -> std::result::Result<Option<String>, SqlError> {
    #[derive(diesel::QueryableByName)]
    struct Line {
        #[diesel(sql_type = diesel::sql_types::Text)]
        quick_check: String,
    }
    let backend = db.backend();
    if backend != crate::Backend::Sqlite {
        return Ok(None);
    }
    let lines: Vec<Line> = db
        .with_conn(|conn| {
            with_inner!(conn, c => {
                use diesel::RunQueryDsl;
                diesel::sql_query("PRAGMA quick_check").load(c)
            })
        })
        .map_err(SqlError::query(backend, "checking the database file"))?;
    let text: Vec<String> = lines
        .into_iter()
        .map(|l| l.quick_check)
        .filter(|l| l != "ok")
        .collect();
    Ok((!text.is_empty()).then(|| text.join("; ")))
}

/// Opens the database of `location` for checking: `Ok(None)` when it has none, a
/// [`DatabaseProblem`] when its own database is missing or damaged.
fn open_checked(location: &Location) -> Result<(Option<SqlStore>, Option<DatabaseProblem>)> {
    if location.db_url(false).is_none() {
        return Ok((None, None));
    }
    let problem = |kind, path, message: String| DatabaseProblem {
        kind,
        path,
        message,
    };
    match location.database(false) {
        Ok(db) => {
            let damage = match quick_check(&db) {
                Ok(None) => return Ok((Some(db), None)),
                Ok(Some(text)) => text,
                Err(e) if crate::own_database::is_damage(&e) => e.to_string(),
                Err(e) => return Err(e.into()),
            };
            if location.db.is_some() {
                return Err(VerifyError::Database(SqlError::Corrupt {
                    backend: db.backend(),
                    what: "database".into(),
                    message: damage,
                }));
            }
            let message = format!("the directory's database is damaged ({damage})");
            let path = location.default_db_path();
            Ok((
                None,
                Some(problem(DatabaseProblemKind::Damaged, path, message)),
            ))
        }
        Err(OpenError::MissingDatabase { path }) => Ok((
            None,
            Some(problem(
                DatabaseProblemKind::Missing,
                path,
                "the directory's database is missing (deleted?)".into(),
            )),
        )),
        Err(OpenError::DamagedDatabase { path, error }) => Ok((
            None,
            Some(problem(
                DatabaseProblemKind::Damaged,
                path,
                format!("the directory's database is damaged ({error})"),
            )),
        )),
        Err(e) => Err(VerifyError::Open(Box::new(e))),
    }
}

/// The note kept beside a damaged database in the quarantine.
fn note_of(p: &DatabaseProblem) -> String {
    format!(
        "problem: {}\noutcome: moved here; a new database is built from the checkpoint files\n",
        p.message
    )
}

/// Checks the store at `location` as [`verify`] does, with its database (the one given, or the
/// directory's own): a missing or damaged own database is reported in
/// [`VerifyReport::database_problem`], and the files and index are checked without it.
pub fn verify_store(location: &Location) -> Result<VerifyReport> {
    let (db, problem) = open_checked(location)?;
    let mut report = verify(&location.dir, db.as_ref())?;
    report.database_problem = problem;
    Ok(report)
}

/// Repairs the store at `location` as [`repair`] does. A missing or damaged own database is
/// rebuilt first: a damaged one (with its `-wal` and `-shm` files) is moved to the quarantine,
/// a new one is created, and the repair fills it from the files.
pub fn repair_store(location: &Location, options: RepairOptions) -> Result<RepairReport> {
    let (db, problem) = open_checked(location)?;
    let Some(problem) = problem else {
        return repair(&location.dir, db.as_ref(), options);
    };
    let found = {
        let mut r = verify(&location.dir, None)?;
        r.database_problem = Some(problem.clone());
        r
    };
    let set_aside = match problem.kind {
        DatabaseProblemKind::Damaged => {
            Some(Quarantine::new(&location.dir).keep_database(&problem.path, &note_of(&problem))?)
        }
        _ => None,
    };
    let db = location
        .database(true)
        .map_err(|e| VerifyError::Open(Box::new(e)))?;
    let rest = repair(&location.dir, Some(&db), options)?;
    let mut repairs = vec![Repair::RebuiltDatabase {
        path: problem.path,
        set_aside: set_aside.as_ref().map(|(to, _)| to.clone()),
        note: set_aside.map(|(_, note)| note),
    }];
    repairs.extend(rest.repairs);
    Ok(RepairReport {
        found,
        repairs,
        after: rest.after,
    })
}

/// Moves the directory's own database to the quarantine if it is damaged (with its `-wal` and
/// `-shm` files, and a note), so that a new one can be built from the files (`caf reindex`);
/// returns where it went. Nothing is done to a database that opens.
pub fn set_aside_damaged_database(location: &Location) -> Result<Option<PathBuf>> {
    let (_, problem) = open_checked(location)?;
    match problem {
        Some(p) if p.kind == DatabaseProblemKind::Damaged => {
            let (to, _) = Quarantine::new(&location.dir).keep_database(&p.path, &note_of(&p))?;
            Ok(Some(to))
        }
        _ => Ok(None),
    }
}
