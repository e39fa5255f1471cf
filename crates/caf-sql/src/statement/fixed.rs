//! [`Fixed`]: a statement whose text is fixed by its type, run on the backend's own connection
//! and found in diesel's statement cache by its type alone.
//!
//! Diesel keeps a statement prepared when it can tell it is safe to; it finds a cached statement
//! either by the query's type (when the type says everything about the text) or else by
//! building the text again and looking it up. Two of its paths never cache: `sql_query` (the
//! text could be anything), and `IN (…)` lists and multi-row inserts built from a slice (their
//! text changes with the length). And through `MultiConnection` every statement's text is
//! built again on every run, cached or not.
//!
//! A `Fixed` statement avoids all of that: its text is a [`Shape`] — a head, a group repeated
//! `N` times (`N` is part of the type), a tail — so diesel finds it by its type, builds its text
//! only to prepare it, once per connection, and keeps it. It runs on the SQLite or PostgreSQL
//! connection inside [`AnyConnection`] directly. Values are borrowed ([`Param`]), not copied.
//!
//! Row counts that vary are split into a few fixed shapes: [`batches`] cuts `n` rows into
//! groups of [`MAX_GROUPS`] and then the powers of two of the rest (5 rows: 4 + 1), and `IN`
//! lists are padded to the next power of two by repeating their last value ([`padded`]). So a
//! table needs at most eight shapes, each prepared once.

use crate::connection::{with_inner, AnyConnection};
use crate::statement::arrays::{Array, Kind};
use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, Bool, Double, HasSqlType, Nullable, Text, Untyped};
use diesel::{QueryResult, QueryableByName, RunQueryDsl};
use std::marker::PhantomData;

/// The most groups (rows of a multi-row insert, values of an `IN` list) one statement takes.
pub(crate) const MAX_GROUPS: usize = 64;

/// A value bound to a statement, borrowed from what is saved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Param<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Int(i64),
    OptInt(Option<i64>),
    Bool(bool),
    OptBool(Option<bool>),
    OptFloat(Option<f64>),
    /// A column of rows as one array (PostgreSQL only, see [`crate::statement::arrays`]).
    Array(&'a Array<'a>),
}

impl<'a> Param<'a> {
    /// Binds a value that is not an array.
    fn push<'b, DB>(&'b self, out: &mut AstPass<'_, 'b, DB>) -> QueryResult<()>
    where
        DB: Backend + HasSqlType<Text> + HasSqlType<BigInt> + HasSqlType<Bool> + HasSqlType<Double>,
        str: ToSql<Text, DB>,
        i64: ToSql<BigInt, DB>,
        bool: ToSql<Bool, DB>,
        f64: ToSql<Double, DB>,
    {
        match self {
            Self::Text(v) => out.push_bind_param::<Text, str>(v),
            Self::OptText(v) => out.push_bind_param::<Nullable<Text>, Option<&'a str>>(v),
            Self::Int(v) => out.push_bind_param::<BigInt, i64>(v),
            Self::OptInt(v) => out.push_bind_param::<Nullable<BigInt>, Option<i64>>(v),
            Self::Bool(v) => out.push_bind_param::<Bool, bool>(v),
            Self::OptBool(v) => out.push_bind_param::<Nullable<Bool>, Option<bool>>(v),
            Self::OptFloat(v) => out.push_bind_param::<Nullable<Double>, Option<f64>>(v),
            Self::Array(_) => Err(diesel::result::Error::QueryBuilderError(
                "array parameters are for PostgreSQL".into(),
            )),
        }
    }
}

/// The text of a statement, with `?` for each bound value (the backend writes its own
/// placeholders: `?` on SQLite, `$1`, `$2`, … on PostgreSQL). The text must hold no other `?`.
pub(crate) trait Shape: 'static {
    /// The text before the repeated group.
    const HEAD: &'static str;
    /// The repeated group: a row of values `(?, ?, ?)`, or one value of an `IN` list.
    const GROUP: &'static str = "";
    /// Between two groups.
    const SEPARATOR: &'static str = ", ";
    /// The text after the groups.
    const TAIL: &'static str = "";

    /// The head, group and tail cut at their placeholders, once per shape (see [`Pieces`]).
    fn pieces() -> &'static Pieces;
}

/// A shape's texts cut at their `?`s, so that a statement run many times is not searched for
/// its placeholders on each run (diesel walks a statement twice per run: to ask whether it may
/// be cached, and to bind its values).
#[derive(Debug)]
pub(crate) struct Pieces {
    head: Vec<&'static str>,
    group: Vec<&'static str>,
    tail: Vec<&'static str>,
}

impl Pieces {
    /// `S`'s texts, cut.
    pub fn of<S: Shape>() -> Self {
        let cut = |text: &'static str| text.split('?').collect();
        Self {
            head: cut(S::HEAD),
            group: cut(S::GROUP),
            tail: cut(S::TAIL),
        }
    }
}

/// Declares a [`Shape`]: `shape!(Name, "head")` or `shape!(Name, "head", "group", "tail")`.
macro_rules! shape {
    ($(#[$doc:meta])* $name:ident, $head:expr) => {
        $crate::statement::shape!($(#[$doc])* $name, $head, "", "");
    };
    ($(#[$doc:meta])* $name:ident, $head:expr, $group:expr, $tail:expr) => {
        $(#[$doc])*
        pub(crate) struct $name;
        impl $crate::statement::Shape for $name {
            const HEAD: &'static str = $head;
            const GROUP: &'static str = $group;
            const TAIL: &'static str = $tail;

            fn pieces() -> &'static $crate::statement::fixed::Pieces {
                static PIECES: std::sync::OnceLock<$crate::statement::fixed::Pieces> =
                    std::sync::OnceLock::new();
                PIECES.get_or_init($crate::statement::fixed::Pieces::of::<Self>)
            }
        }
    };
}
pub(crate) use shape;

/// Statement `S` with its group repeated `N` times, and the values for its placeholders, in
/// order.
pub(crate) struct Fixed<'a, S, const N: usize> {
    values: &'a [Param<'a>],
    shape: PhantomData<S>,
}

/// The cache key of `Fixed<S, N>`: one prepared statement per shape and group count.
pub(crate) struct Key<S, const N: usize>(PhantomData<S>);

impl<'a, S: Shape, const N: usize> Fixed<'a, S, N> {
    /// The statement with these values.
    pub fn new(values: &'a [Param<'a>]) -> Self {
        Self {
            values,
            shape: PhantomData,
        }
    }

    /// How many placeholders the statement has.
    #[cfg(test)]
    pub fn placeholders() -> usize {
        let count = |s: &str| s.matches('?').count();
        count(S::HEAD) + N * count(S::GROUP) + count(S::TAIL)
    }

    /// Writes the text and binds the values, each with `push`.
    fn walk<'b, DB: Backend>(
        &'b self,
        mut out: AstPass<'_, 'b, DB>,
        push: impl Fn(&'b Param<'a>, &mut AstPass<'_, 'b, DB>) -> QueryResult<()>,
    ) -> QueryResult<()> {
        let mut values = self.values.iter();
        let mut text = |out: &mut AstPass<'_, 'b, DB>, pieces: &'static [&'static str]| {
            let Some((first, rest)) = pieces.split_first() else {
                return Ok(());
            };
            out.push_sql(first);
            for piece in rest {
                let value = values.next().ok_or_else(|| {
                    diesel::result::Error::QueryBuilderError(
                        format!("more placeholders than values in {}", S::HEAD).into(),
                    )
                })?;
                push(value, out)?;
                out.push_sql(piece);
            }
            QueryResult::Ok(())
        };
        let pieces = S::pieces();
        text(&mut out, &pieces.head)?;
        for i in 0..N {
            if i > 0 {
                out.push_sql(S::SEPARATOR);
            }
            text(&mut out, &pieces.group)?;
        }
        text(&mut out, &pieces.tail)?;
        if values.next().is_some() {
            return Err(diesel::result::Error::QueryBuilderError(
                format!("more values than placeholders in {}", S::HEAD).into(),
            ));
        }
        Ok(())
    }

    /// Runs the statement; returns how many rows it changed.
    pub fn execute(self, conn: &mut AnyConnection) -> QueryResult<usize> {
        with_inner!(conn, c => RunQueryDsl::execute(self, c))
    }
}

#[cfg(feature = "sqlite")]
impl<S: Shape, const N: usize> QueryFragment<diesel::sqlite::Sqlite> for Fixed<'_, S, N> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, diesel::sqlite::Sqlite>) -> QueryResult<()> {
        self.walk(out, |value, out| value.push(out))
    }
}

#[cfg(feature = "postgres")]
impl<S: Shape, const N: usize> QueryFragment<diesel::pg::Pg> for Fixed<'_, S, N> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, diesel::pg::Pg>) -> QueryResult<()> {
        self.walk(out, |value, out| match value {
            Param::Array(array) => array.push(out),
            scalar => scalar.push(out),
        })
    }
}

impl<S: Shape, const N: usize> QueryId for Fixed<'_, S, N> {
    type QueryId = Key<S, N>;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl<S, const N: usize> Query for Fixed<'_, S, N> {
    type SqlType = Untyped;
}

impl<S, const N: usize, Conn> RunQueryDsl<Conn> for Fixed<'_, S, N> {}

/// Runs statement `S` (with no repeated group) and reads its rows.
pub(crate) fn load<S: Shape, T>(
    conn: &mut AnyConnection,
    values: &[Param<'_>],
) -> QueryResult<Vec<T>>
where
    T: LoadableRow,
{
    with_inner!(conn, c => RunQueryDsl::load(Fixed::<S, 0>::new(values), c))
}

/// A row type [`load`] can read on every backend this build has.
#[cfg(all(feature = "sqlite", feature = "postgres"))]
pub(crate) trait LoadableRow:
    QueryableByName<diesel::sqlite::Sqlite> + QueryableByName<diesel::pg::Pg> + 'static
{
}
#[cfg(all(feature = "sqlite", feature = "postgres"))]
impl<T> LoadableRow for T where
    T: QueryableByName<diesel::sqlite::Sqlite> + QueryableByName<diesel::pg::Pg> + 'static
{
}
#[cfg(all(feature = "sqlite", not(feature = "postgres")))]
pub(crate) trait LoadableRow: QueryableByName<diesel::sqlite::Sqlite> + 'static {}
#[cfg(all(feature = "sqlite", not(feature = "postgres")))]
impl<T> LoadableRow for T where T: QueryableByName<diesel::sqlite::Sqlite> + 'static {}
#[cfg(all(feature = "postgres", not(feature = "sqlite")))]
pub(crate) trait LoadableRow: QueryableByName<diesel::pg::Pg> + 'static {}
#[cfg(all(feature = "postgres", not(feature = "sqlite")))]
impl<T> LoadableRow for T where T: QueryableByName<diesel::pg::Pg> + 'static {}

/// Runs statement `S` (with no repeated group); returns how many rows it changed.
pub(crate) fn execute<S: Shape>(
    conn: &mut AnyConnection,
    values: &[Param<'_>],
) -> QueryResult<usize> {
    Fixed::<S, 0>::new(values).execute(conn)
}

/// Runs statement `S` with its group repeated `groups` times, a power of two up to
/// [`MAX_GROUPS`] (see [`batches`] and [`padded`]).
pub(crate) fn execute_groups<S: Shape>(
    conn: &mut AnyConnection,
    groups: usize,
    values: &[Param<'_>],
) -> QueryResult<usize> {
    match groups {
        1 => Fixed::<S, 1>::new(values).execute(conn),
        2 => Fixed::<S, 2>::new(values).execute(conn),
        4 => Fixed::<S, 4>::new(values).execute(conn),
        8 => Fixed::<S, 8>::new(values).execute(conn),
        16 => Fixed::<S, 16>::new(values).execute(conn),
        32 => Fixed::<S, 32>::new(values).execute(conn),
        64 => Fixed::<S, 64>::new(values).execute(conn),
        n => Err(diesel::result::Error::QueryBuilderError(
            format!("{n} groups: not a statement shape").into(),
        )),
    }
}

/// How `n` rows are cut into statements: groups of [`MAX_GROUPS`], then the powers of two of
/// the rest, largest first (`n = 0` gives none).
pub(crate) fn batches(n: usize) -> impl Iterator<Item = usize> {
    let full = n / MAX_GROUPS;
    let rest = n % MAX_GROUPS;
    std::iter::repeat_n(MAX_GROUPS, full).chain(
        (0..MAX_GROUPS.trailing_zeros())
            .rev()
            .map(|bit| 1usize << bit)
            .filter(move |size| rest & size != 0),
    )
}

/// `values` cut into lists of at most [`MAX_GROUPS`], each padded to a power of two by repeating
/// its last value (for `IN` lists, where a repeated value changes nothing).
pub(crate) fn padded<T: Copy>(values: &[T]) -> impl Iterator<Item = Vec<T>> + '_ {
    values.chunks(MAX_GROUPS).map(|chunk| {
        let mut list = chunk.to_vec();
        if let Some(last) = chunk.last() {
            list.resize(chunk.len().next_power_of_two(), *last);
        }
        list
    })
}

/// Something written as one group of values of a multi-row insert.
pub(crate) trait Row {
    /// The kinds of its values, in order (for [`crate::statement::arrays::columns`]).
    const KINDS: &'static [Kind];
    /// Appends the row's values, in the order of the shape's columns.
    fn values<'a>(&'a self, out: &mut Vec<Param<'a>>);
}

/// Implements [`Row`] for a type from one list of its values, each written `Kind(value)` with
/// `this` standing for the row: `row!(T, |r| [Int(r.id), OptText(r.note.as_deref())])`. The
/// kinds and the values are written once, so they cannot disagree.
macro_rules! row {
    ($row:ty, |$this:ident| [$($kind:ident($value:expr)),* $(,)?]) => {
        impl $crate::statement::fixed::Row for $row {
            const KINDS: &'static [$crate::statement::arrays::Kind] =
                &[$($crate::statement::arrays::Kind::$kind),*];

            fn values<'a>(&'a self, out: &mut Vec<$crate::statement::Param<'a>>) {
                let $this = self;
                out.extend([$($crate::statement::Param::$kind($value)),*]);
            }
        }
    };
}
pub(crate) use row;

/// Inserts `rows` with statement `S` (its group is one row), in as few fixed shapes as
/// [`batches`] gives.
pub(crate) fn insert_rows<S: Shape, R: Row>(
    conn: &mut AnyConnection,
    rows: &[R],
) -> QueryResult<()> {
    let mut rest = rows;
    let mut values = Vec::new();
    for size in batches(rows.len()) {
        let (batch, after) = rest.split_at(size);
        values.clear();
        for row in batch {
            row.values(&mut values);
        }
        execute_groups::<S>(conn, size, &values)?;
        rest = after;
    }
    Ok(())
}
