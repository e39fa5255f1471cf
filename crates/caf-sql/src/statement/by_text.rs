//! [`Stmt`]: this crate's own SQL, written once for both backends, that diesel keeps prepared.
//!
//! `diesel::sql_query` opts out of diesel's prepared-statement cache (its text could be
//! anything), so on PostgreSQL every use costs a parse and a plan and an extra round trip. The
//! statements here are fixed strings of this crate, so they are safe to cache: `Stmt` writes
//! its text with the backend's own placeholders (`?` becomes `$1`, `$2`, … on PostgreSQL) and
//! lets diesel cache it by text.

use crate::connection::MultiBackend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Bool, Text, Untyped};
use diesel::{QueryResult, RunQueryDsl};

/// A bind value.
#[derive(Debug, Clone, PartialEq)]
enum Bind {
    Text(String),
    Int(i64),
    Bool(bool),
}

/// SQL text with `?` placeholders and their values, in order.
#[derive(Debug, Clone)]
pub(crate) struct Stmt {
    sql: String,
    binds: Vec<Bind>,
}

impl Stmt {
    /// A statement; its `?` are filled by the binds, in order (the text must hold no other `?`).
    pub fn new(sql: impl Into<String>) -> Self {
        Self {
            sql: sql.into(),
            binds: Vec::new(),
        }
    }

    /// Binds a text.
    pub fn text(mut self, v: impl Into<String>) -> Self {
        self.binds.push(Bind::Text(v.into()));
        self
    }

    /// Binds a 64-bit integer.
    pub fn int(mut self, v: i64) -> Self {
        self.binds.push(Bind::Int(v));
        self
    }

    /// Binds a boolean.
    pub fn boolean(mut self, v: bool) -> Self {
        self.binds.push(Bind::Bool(v));
        self
    }
}

impl QueryFragment<MultiBackend> for Stmt {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
        let mut parts = self.sql.split('?');
        if let Some(first) = parts.next() {
            out.push_sql(first);
        }
        let mut binds = self.binds.iter();
        for part in parts {
            match binds.next() {
                Some(Bind::Text(v)) => out.push_bind_param::<Text, String>(v)?,
                Some(Bind::Int(v)) => out.push_bind_param::<BigInt, i64>(v)?,
                Some(Bind::Bool(v)) => out.push_bind_param::<Bool, bool>(v)?,
                None => {
                    return Err(diesel::result::Error::QueryBuilderError(
                        "more placeholders than binds".into(),
                    ))
                }
            }
            out.push_sql(part);
        }
        if binds.next().is_some() {
            return Err(diesel::result::Error::QueryBuilderError(
                "more binds than placeholders".into(),
            ));
        }
        Ok(())
    }
}

impl QueryId for Stmt {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for Stmt {
    type SqlType = Untyped;
}

impl<Conn> RunQueryDsl<Conn> for Stmt {}
