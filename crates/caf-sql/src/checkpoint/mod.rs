//! One checkpoint in the tables: how it is written (a line continued or started, the item and
//! entry revisions that changed) and read back.
//!
//! - [`save`]: the save transaction ([`save::save_in_tx`]): the usual save (a child of a
//!   remembered tip), the general one, idempotence, replacement, lines.
//! - [`load`]: reading a checkpoint back ([`load::load_in_tx`]).
//! - [`append_pg`]: PostgreSQL's usual save in one statement.
//! - [`changes`]: every revision a save writes, computed before anything is written.
//! - [`checkpoint_row`]: the `checkpoints` row (header columns, `exact`, the `rest` JSON).
//! - [`item_revisions`]: revisions of thoughts, tool calls and completed steps.
//! - [`item_columns`]: how an item becomes the columns and payload of its row, and back.
//! - [`with_members`]: parsing an item typed from its payload and the members its columns hold.
//! - [`entry_revisions`]: revisions of the entries of the snapshot's lists and maps.
//! - [`entry_since`]: where the current entry revisions of a line start (to close them by key).
//! - [`parent_lookup`]: what the general save reads first (the stored version, the parent's
//!   place).
//! - [`line_cache`]: the previous snapshot of recently written lines, kept in memory.

pub(crate) mod append_pg;
pub(crate) mod changes;
pub(crate) mod checkpoint_row;
pub(crate) mod entry_revisions;
pub(crate) mod entry_since;
pub(crate) mod item_columns;
pub(crate) mod item_revisions;
pub(crate) mod line_cache;
pub(crate) mod load;
pub(crate) mod parent_lookup;
pub(crate) mod save;
#[cfg(test)]
mod tests;
pub(crate) mod with_members;
