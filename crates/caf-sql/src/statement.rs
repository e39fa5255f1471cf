//! This crate's own SQL statements, written once for both backends and kept prepared.
//!
//! - [`fixed`]: [`fixed::Fixed`] statements, whose text is fixed by their type (every statement of a
//!   save): found in diesel's statement cache by type, prepared once per connection.
//! - [`arrays`]: rows as one array per column, for PostgreSQL's `unnest`: any number of rows
//!   with one statement text.
//! - [`by_text`]: [`Stmt`], a statement whose text is built at run time (the filters of a
//!   query), prepared once per distinct text.

pub(crate) mod arrays;
mod by_text;
pub(crate) mod fixed;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use by_text::Stmt;
pub(crate) use fixed::{row, shape, Param, Shape};
