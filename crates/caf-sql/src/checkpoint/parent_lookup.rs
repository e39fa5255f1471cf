//! What a save reads first when it cannot continue a remembered line: the stored version of
//! the checkpoint (same id), if any, and where its parent is — one statement.

use crate::checkpoint::checkpoint_row::Place;
use crate::connection::AnyConnection;
use crate::statement::fixed::load;
use crate::statement::{shape, Param};
use caf_core::format::Checkpoint;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use diesel::{QueryResult, QueryableByName};

/// What a save needs to know first, read in one statement: the stored version of the
/// checkpoint, if any, and where its parent is.
#[derive(QueryableByName)]
pub(crate) struct Lookup {
    #[diesel(sql_type = Nullable<Text>)]
    pub existing_integrity: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub existing_execution: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    parent_line: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    parent_seq: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    line_execution: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    line_sealed: Option<bool>,
    #[diesel(sql_type = Nullable<BigInt>)]
    tip_seq: Option<i64>,
}

shape!(
    /// The stored version of a checkpoint and its parent's place (`id`, `id`, `parent`).
    LookupSql,
    "SELECT \
    (SELECT integrity FROM checkpoints WHERE id = ?) AS existing_integrity, \
    (SELECT execution_id FROM checkpoints WHERE id = ?) AS existing_execution, \
    p.line_id AS parent_line, p.seq AS parent_seq, l.execution_id AS line_execution, \
    l.sealed AS line_sealed, \
    (SELECT MAX(t.seq) FROM checkpoints t WHERE t.line_id = p.line_id) AS tip_seq \
    FROM (SELECT 1 AS one) AS o \
    LEFT JOIN checkpoints p ON p.id = ? \
    LEFT JOIN lines l ON l.id = p.line_id"
);

/// Reads what a save of `c` needs to know first.
pub(crate) fn lookup(conn: &mut AnyConnection, c: &Checkpoint) -> QueryResult<Lookup> {
    let parent = c.parent_id.as_ref().map(|p| p.as_str());
    let id = Param::Text(c.id.as_str());
    let rows: Vec<Lookup> = load::<LookupSql, _>(conn, &[id, id, Param::OptText(parent)])?;
    rows.into_iter()
        .next()
        .ok_or(diesel::result::Error::NotFound)
}

impl Lookup {
    /// The parent's place, when `c` continues its line: the parent is the newest checkpoint of
    /// a line of the same execution that is not sealed.
    pub fn continued(&self, execution: &str) -> Option<Place> {
        match (self.parent_line, self.parent_seq, &self.line_execution) {
            (Some(line_id), Some(seq), Some(e))
                if e == execution
                    && self.line_sealed == Some(false)
                    && self.tip_seq == Some(seq) =>
            {
                Some(Place { line_id, seq })
            }
            _ => None,
        }
    }
}
