//! [`SqlStore::read_only_sql`]: any query, on a connection that cannot write.
//!
//! Results come back through diesel-dynamic-schema's `DynamicRow` (a row of named fields whose
//! number is only known at run time), each value decoded by its database type into JSON.

mod statement_starts;

use crate::connection::{AnyConnection, Backend, TxMode};
use crate::error::{Result, SqlError};
use crate::SqlStore;
use diesel::deserialize::{self, FromSql};
use diesel::RunQueryDsl;
use diesel_dynamic_schema::dynamic_value::{Any, DynamicRow, NamedField};
use serde::Serialize;
use serde_json::{Number, Value};

/// The result of a query: column names and rows of JSON values (`null` for SQL NULL).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SqlRows {
    /// The column names, in order (empty when the statement returns no rows and its columns
    /// cannot be found out, e.g. a `PRAGMA`).
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<Value>>,
}

/// One value of a result, as JSON: integers and floats as numbers (non-finite floats as
/// strings), text as strings, JSON as JSON, binary as `\x…` hex, dates and times as RFC 3339.
#[derive(Debug, Clone, PartialEq)]
struct Cell(Value);

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or_else(|| Value::String(f.to_string()), Value::Number)
}

fn hex(bytes: &[u8]) -> Value {
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("\\x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    Value::String(s)
}

#[cfg(feature = "sqlite")]
impl FromSql<Any, diesel::sqlite::Sqlite> for Cell {
    fn from_sql(mut value: diesel::sqlite::SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
        use diesel::sqlite::{Sqlite, SqliteType};
        Ok(Self(match value.value_type() {
            Some(SqliteType::Long) => Value::from(value.read_long()),
            Some(SqliteType::Double | SqliteType::Float) => float(value.read_double()),
            Some(SqliteType::Binary) => hex(value.read_blob()),
            None => Value::Null,
            Some(_) => Value::String(
                <String as FromSql<diesel::sql_types::Text, Sqlite>>::from_sql(value)?,
            ),
        }))
    }
}

#[cfg(feature = "postgres")]
impl FromSql<Any, diesel::pg::Pg> for Cell {
    fn from_sql(value: diesel::pg::PgValue<'_>) -> deserialize::Result<Self> {
        use diesel::pg::data_types::PgNumeric;
        const NUMERIC: u32 = 1700;
        if value.get_oid().get() == NUMERIC {
            let n = <PgNumeric as FromSql<diesel::sql_types::Numeric, diesel::pg::Pg>>::from_sql(
                value,
            )?;
            return Ok(Self(pg::numeric(n)));
        }
        pg::cell(value.get_oid().get(), value.as_bytes()).map(Self)
    }
}

#[cfg(feature = "postgres")]
mod pg {
    //! PostgreSQL's binary formats of the common types.

    use super::{float, hex};
    use chrono::{DateTime, NaiveDate};
    use diesel::deserialize;
    use serde_json::Value;

    fn array<const N: usize>(b: &[u8]) -> deserialize::Result<[u8; N]> {
        b.try_into()
            .map_err(|_| format!("expected {N} bytes, got {}", b.len()).into())
    }

    /// 2000-01-01 in microseconds since the Unix epoch: PostgreSQL's epoch.
    const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

    pub(super) fn cell(oid: u32, b: &[u8]) -> deserialize::Result<Value> {
        Ok(match oid {
            16 => Value::Bool(b.first().is_some_and(|x| *x != 0)),
            17 => hex(b),
            18 | 19 | 25 | 705 | 1042 | 1043 => Value::String(String::from_utf8(b.to_vec())?),
            20 => Value::from(i64::from_be_bytes(array(b)?)),
            21 => Value::from(i16::from_be_bytes(array(b)?)),
            23 => Value::from(i32::from_be_bytes(array(b)?)),
            26 => Value::from(u32::from_be_bytes(array(b)?)),
            700 => float(f64::from(f32::from_be_bytes(array(b)?))),
            701 => float(f64::from_be_bytes(array(b)?)),
            114 => json(b)?,
            3802 => json(b.get(1..).unwrap_or_default())?,
            1082 => {
                let days = i32::from_be_bytes(array(b)?);
                let date = NaiveDate::from_ymd_opt(2000, 1, 1)
                    .and_then(|d| d.checked_add_signed(chrono::Duration::days(days.into())));
                date.map_or(Value::Null, |d| Value::String(d.to_string()))
            }
            1114 | 1184 => {
                let micros = i64::from_be_bytes(array(b)?).saturating_add(PG_EPOCH_MICROS);
                DateTime::from_timestamp_micros(micros).map_or(Value::Null, |t| {
                    Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
                })
            }
            2950 => {
                let u: [u8; 16] = array(b)?;
                let h: String = u.iter().map(|x| format!("{x:02x}")).collect();
                Value::String(format!(
                    "{}-{}-{}-{}-{}",
                    &h[0..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..32]
                ))
            }
            other => Value::String(format!(
                "<{} bytes of type oid {other}; cast it to text>",
                b.len()
            )),
        })
    }

    fn json(b: &[u8]) -> deserialize::Result<Value> {
        let s = std::str::from_utf8(b)?;
        Ok(serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string())))
    }

    /// `numeric` as a JSON number when it is one (an integer, or a float otherwise).
    pub(super) fn numeric(n: diesel::pg::data_types::PgNumeric) -> Value {
        use diesel::pg::data_types::PgNumeric;
        let text = match n {
            PgNumeric::NaN => return Value::String("NaN".into()),
            PgNumeric::Positive {
                weight,
                scale,
                digits,
            } => decimal(false, weight, scale, &digits),
            PgNumeric::Negative {
                weight,
                scale,
                digits,
            } => decimal(true, weight, scale, &digits),
        };
        if let Ok(i) = text.parse::<i64>() {
            return Value::from(i);
        }
        text.parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(text), Value::Number)
    }

    /// The decimal text of a numeric: base-10000 `digits`, the first at 10000^`weight`.
    fn decimal(negative: bool, weight: i16, scale: u16, digits: &[i16]) -> String {
        let mut int_part = String::new();
        let mut frac_part = String::new();
        let weight = i32::from(weight);
        for (i, d) in digits.iter().enumerate() {
            let power = weight - i as i32;
            let group = format!("{:04}", d);
            if power >= 0 {
                int_part.push_str(&group);
            } else {
                frac_part.push_str(&group);
            }
        }
        // Missing groups between the last digit and the units, or before the first fraction.
        let last_power = weight - digits.len() as i32 + 1;
        if last_power > 0 {
            for _ in 0..last_power {
                int_part.push_str("0000");
            }
        }
        if weight < -1 {
            frac_part.insert_str(0, &"0000".repeat((-weight - 1) as usize));
        }
        let int_part = int_part.trim_start_matches('0');
        let mut frac: String = frac_part.chars().take(usize::from(scale)).collect();
        while frac.len() < usize::from(scale) {
            frac.push('0');
        }
        let mut s = String::new();
        if negative {
            s.push('-');
        }
        s.push_str(if int_part.is_empty() { "0" } else { int_part });
        if !frac.is_empty() {
            s.push('.');
            s.push_str(&frac);
        }
        s
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn decimals() {
            assert_eq!(super::decimal(false, 0, 0, &[12]), "12");
            assert_eq!(super::decimal(false, 1, 0, &[1, 2]), "10002");
            assert_eq!(super::decimal(false, 1, 0, &[5]), "50000");
            assert_eq!(super::decimal(true, 0, 2, &[3, 1400]), "-3.14");
            assert_eq!(super::decimal(false, -1, 4, &[5]), "0.0005");
            assert_eq!(super::decimal(false, -2, 5, &[1000]), "0.00001");
            assert_eq!(super::decimal(false, 0, 0, &[]), "0");
        }
    }
}

type Row = DynamicRow<NamedField<Option<Cell>>>;

fn run(conn: &mut AnyConnection, sql: &str) -> diesel::QueryResult<Vec<Row>> {
    crate::connection::with_inner!(conn, c => diesel::sql_query(sql).load::<Row>(c))
}

/// Whether the database refused a statement because the connection is read-only.
fn is_read_only_refusal(e: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    match e {
        Error::DatabaseError(DatabaseErrorKind::ReadOnlyTransaction, _) => true,
        Error::DatabaseError(_, info) => {
            let m = info.message().to_ascii_lowercase();
            m.contains("readonly") || m.contains("read-only") || m.contains("read only")
        }
        _ => false,
    }
}

impl SqlStore {
    /// Runs one statement on a separate, read-only connection and returns its rows.
    ///
    /// Read-only is enforced by the database, not by looking at the text: SQLite opens the file
    /// read-only (`mode=ro`) with `PRAGMA query_only`; PostgreSQL runs the statement in
    /// `BEGIN READ ONLY` (rolled back afterwards) on a session whose transactions default to
    /// read-only. A statement that writes fails with the database's own error, returned as
    /// [`SqlError::ReadOnly`]; nothing changes. The text must hold exactly one statement (a
    /// trailing `;` and comments are fine): an empty text, or several statements, are refused
    /// with [`SqlError::NotOneStatement`] before anything runs.
    pub fn read_only_sql(&self, sql: &str) -> Result<SqlRows> {
        let backend = self.backend();
        one_statement(backend, sql)?;
        if backend == Backend::Sqlite {
            refuse_file_statements(backend, sql)?;
        }
        let mut guard = self.read_only_connection()?;
        let Some(conn) = guard.as_mut() else {
            return Err(SqlError::Corrupt {
                backend,
                what: "read-only connection".into(),
                message: "not open".into(),
            });
        };
        let result = conn.in_tx(TxMode::ReadOnly, |conn| {
            let rows = run(conn, sql).map_err(|source| classify(backend, source))?;
            let columns = match rows.first() {
                Some(first) => names(first),
                None => empty_result_columns(conn, sql),
            };
            Ok(SqlRows {
                columns,
                rows: rows.into_iter().map(values).collect(),
            })
        });
        if matches!(
            &result,
            Err(SqlError::Query { .. }) | Err(SqlError::ReadOnly { .. })
        ) {
            // The statement may have left the session in a state of its own (say, it ended
            // the transaction): start afresh next time.
            *guard = None;
        }
        result
    }
}

/// Refuses a text that is not exactly one statement.
fn one_statement(backend: Backend, sql: &str) -> Result<()> {
    let starts = statement_starts::statement_starts(sql, backend);
    let reason = match starts.as_slice() {
        [_] => return Ok(()),
        [] => "no SQL statement given (the text is empty or only comments)".to_string(),
        [_, second, ..] => {
            let rest: String = sql[*second..]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let shown: String = rest.chars().take(40).collect();
            let more = if rest.chars().count() > 40 { "…" } else { "" };
            format!(
                "the text holds {} statements (the second is \"{shown}{more}\"); run one statement \
                 at a time: nothing was run",
                starts.len()
            )
        }
    };
    Err(SqlError::NotOneStatement {
        backend,
        statements: starts.len(),
        reason,
    })
}

/// SQLite statements that reach other files without writing this database: `ATTACH` creates
/// the file it names, `VACUUM INTO` writes a copy. The read-only connection refuses every write
/// to the database itself; these are refused before they run.
fn refuse_file_statements(backend: Backend, sql: &str) -> Result<()> {
    let mut text = sql.trim_start();
    // Skip leading comments.
    loop {
        if let Some(rest) = text.strip_prefix("--") {
            text = rest.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(rest) = text.strip_prefix("/*") {
            text = rest.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else {
            break;
        }
    }
    let word: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    if matches!(word.as_str(), "ATTACH" | "DETACH" | "VACUUM") {
        return Err(SqlError::Refused {
            backend,
            reason: format!("refused by the read-only connection: {word} reaches other files"),
        });
    }
    Ok(())
}

fn classify(backend: Backend, source: diesel::result::Error) -> SqlError {
    if is_read_only_refusal(&source) {
        SqlError::ReadOnly { backend, source }
    } else {
        SqlError::Query {
            backend,
            context: "running the query".into(),
            source,
        }
    }
}

fn names(row: &Row) -> Vec<String> {
    (0..row.len())
        .filter_map(|i| row.get(i).map(|f| f.name.clone()))
        .collect()
}

fn values(row: Row) -> Vec<Value> {
    (0..row.len())
        .map(|i| {
            row.get(i)
                .and_then(|f| f.value.as_ref())
                .map_or(Value::Null, |c| c.0.clone())
        })
        .collect()
}

/// The column names of a query that returned no row: the same query, left-joined to a single
/// row, returns one row of NULLs under those names. Statements that are not queries give none.
fn empty_result_columns(conn: &mut AnyConnection, sql: &str) -> Vec<String> {
    let inner = sql.trim().trim_end_matches(';').trim_end();
    let probe = format!(
        "SELECT caf_q.* FROM (SELECT 1 AS caf_one) AS caf_d LEFT JOIN (\n{inner}\n) AS caf_q ON 1 = 1"
    );
    match run(conn, &probe) {
        Ok(rows) => rows.first().map(names).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}
