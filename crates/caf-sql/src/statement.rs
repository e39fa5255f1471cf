//! This crate's own SQL statements, written once for both backends and kept prepared.
//!
//! - [`by_text`]: [`Stmt`], a statement whose text is built at run time (filters of a query),
//!   prepared once per distinct text.

mod by_text;

pub(crate) use by_text::Stmt;
