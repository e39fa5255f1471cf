//! Rows as arrays, one per column, for PostgreSQL: `INSERT … SELECT * FROM unnest($1, $2, …)`
//! inserts any number of rows with one statement text, prepared once.
//!
//! A [`Row`] gives its values in column order and says their [`Kind`]s; [`columns`] turns a
//! slice of rows into one [`Array`] per column, bound as [`Param::Array`].

use crate::statement::fixed::Row;
use crate::statement::Param;
use diesel::QueryResult;

/// The type of a column's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    OptText,
    Int,
    OptInt,
    OptBool,
    OptFloat,
}

impl Kind {
    /// The kind of a value.
    #[cfg(test)]
    pub fn of(value: &Param<'_>) -> Option<Self> {
        Some(match value {
            Param::Text(_) => Self::Text,
            Param::OptText(_) => Self::OptText,
            Param::Int(_) => Self::Int,
            Param::OptInt(_) => Self::OptInt,
            Param::Bool(_) => return None,
            Param::OptBool(_) => Self::OptBool,
            Param::OptFloat(_) => Self::OptFloat,
            Param::Array(_) => return None,
        })
    }
}

/// The values of one column of rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Array<'a> {
    Text(Vec<&'a str>),
    OptText(Vec<Option<&'a str>>),
    Int(Vec<i64>),
    OptInt(Vec<Option<i64>>),
    OptBool(Vec<Option<bool>>),
    OptFloat(Vec<Option<f64>>),
}

impl<'a> Array<'a> {
    fn empty(kind: Kind, rows: usize) -> Self {
        match kind {
            Kind::Text => Self::Text(Vec::with_capacity(rows)),
            Kind::OptText => Self::OptText(Vec::with_capacity(rows)),
            Kind::Int => Self::Int(Vec::with_capacity(rows)),
            Kind::OptInt => Self::OptInt(Vec::with_capacity(rows)),
            Kind::OptBool => Self::OptBool(Vec::with_capacity(rows)),
            Kind::OptFloat => Self::OptFloat(Vec::with_capacity(rows)),
        }
    }

    /// Appends a value of this array's kind; `false` for a value of another kind.
    fn push_value(&mut self, value: Param<'a>) -> bool {
        match (self, value) {
            (Self::Text(a), Param::Text(v)) => a.push(v),
            (Self::OptText(a), Param::OptText(v)) => a.push(v),
            (Self::Int(a), Param::Int(v)) => a.push(v),
            (Self::OptInt(a), Param::OptInt(v)) => a.push(v),
            (Self::OptBool(a), Param::OptBool(v)) => a.push(v),
            (Self::OptFloat(a), Param::OptFloat(v)) => a.push(v),
            _ => return false,
        }
        true
    }

    /// Binds the array.
    #[cfg(feature = "postgres")]
    pub fn push<'b>(
        &'b self,
        out: &mut diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> QueryResult<()> {
        use diesel::sql_types::{Array as SqlArray, BigInt, Bool, Double, Nullable, Text};
        match self {
            Self::Text(v) => out.push_bind_param::<SqlArray<Text>, _>(v),
            Self::OptText(v) => out.push_bind_param::<SqlArray<Nullable<Text>>, _>(v),
            Self::Int(v) => out.push_bind_param::<SqlArray<BigInt>, _>(v),
            Self::OptInt(v) => out.push_bind_param::<SqlArray<Nullable<BigInt>>, _>(v),
            Self::OptBool(v) => out.push_bind_param::<SqlArray<Nullable<Bool>>, _>(v),
            Self::OptFloat(v) => out.push_bind_param::<SqlArray<Nullable<Double>>, _>(v),
        }
    }
}

/// `rows` as one array per column, in column order.
pub(crate) fn columns<'a, R: Row>(rows: &'a [R]) -> QueryResult<Vec<Array<'a>>> {
    let mut arrays: Vec<Array<'a>> = R::KINDS
        .iter()
        .map(|kind| Array::empty(*kind, rows.len()))
        .collect();
    let mut values = Vec::with_capacity(R::KINDS.len());
    for row in rows {
        values.clear();
        row.values(&mut values);
        if values.len() != arrays.len() {
            return Err(mismatch());
        }
        for (array, value) in arrays.iter_mut().zip(values.iter()) {
            if !array.push_value(*value) {
                return Err(mismatch());
            }
        }
    }
    Ok(arrays)
}

fn mismatch() -> diesel::result::Error {
    diesel::result::Error::QueryBuilderError("a row's values do not match its column kinds".into())
}
