//! # caf-sql — the SQL layer of caf
//!
//! Checkpoints in SQLite (embedded, bundled: the default) or PostgreSQL, through diesel, in
//! normalized tables that can be queried: `executions`, `checkpoints` (+ `checkpoint_labels`),
//! `thoughts`, `tool_calls`, `steps` (completed plan steps), `entries` (context lists and maps,
//! tool results, pending steps) and `lines` (see below), plus read-only views for people who
//! write SQL (`executions_v`, `checkpoints_v`, `thoughts_v`, `tool_calls_v`: readable times,
//! current revisions). The schema is created by the embedded migrations under `migrations/`
//! when a store opens; [`schema`] is diesel's view of its tables; `docs/sql.md` describes every
//! table, view and column, with example queries.
//!
//! - [`SqlStore`] implements [`caf_core::CheckpointStore`] (database-only use; the same
//!   conformance suite as the memory and file stores) and adds analytics
//!   ([`SqlStore::stats`], [`SqlStore::query_tool_calls`], [`SqlStore::query_thoughts`],
//!   [`SqlStore::read_only_sql`]).
//! - [`HybridStore`] keeps checkpoint files as the source of truth and the database as their
//!   index, updated on every save; [`SqlStore::sync_from`] brings in files saved elsewhere and
//!   [`SqlStore::reindex_from`] rebuilds the database from the files.
//! - The database is also a second copy of the files: a hybrid store loads the database's
//!   intact copy of a damaged file ([`SqlStore::intact_copy`]) and says so
//!   ([`caf_core::LoadSource`]); [`verify`] checks a store — files, index, database against the
//!   files — and repairs it (damaged files to a quarantine, or written back from the database
//!   byte for byte); [`SqlStore::compare_with_files`] tells cheaply whether the two disagree.
//!
//! ```
//! use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};
//! use caf_sql::SqlStore;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqlStore::open(&format!("sqlite://{}", dir.path().join("caf.db").display())).unwrap();
//! let manager = CheckpointManager::new(store);
//! let mut state = RuntimeState::new("research-agent");
//! for step in 0..3 {
//!     state.add_thought("reasoning", format!("thinking about step {step}"), Some(0.9));
//!     manager.checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::StepCompleted)).unwrap();
//! }
//! let stats = manager.store().stats(None).unwrap();
//! assert_eq!(stats.totals.checkpoints, 3);
//! assert_eq!(stats.totals.thoughts, 3); // stored once each, not 1 + 2 + 3 times
//! ```
//!
//! ## Lines and revisions: why the database grows with distinct content
//!
//! Consecutive checkpoints of an agent mostly repeat each other: checkpoint #100 holds the 99
//! thoughts of #99 and one more, and the same conversation plus one message. Storing each
//! checkpoint whole costs checkpoints × state size; caf stores each distinct piece once.
//!
//! - A **line** (`lines`) is a run of checkpoints of one execution, each the child of the
//!   previous one; each checkpoint has a `seq` in its line. A checkpoint whose parent is the
//!   newest checkpoint (the tip) of its line, in the same execution, continues the line
//!   (`seq = tip + 1`). Any other — no parent, parent unknown or not a tip (a fork), or a new
//!   version of an existing id — starts a new line, where everything is written.
//! - The growing parts of a snapshot are stored per line and **position** as **revisions**:
//!   thoughts (`thoughts`), tool calls (`tool_calls`), completed plan steps (`steps`), and the
//!   entries of the context's lists and maps — `history`, `messages`, `memory`, `state`,
//!   `variables` — of the tool results map and of the pending plan steps (`entries`, by `part`;
//!   map members at their position in key order, pending steps numbered from the end). A row is
//!   visible to the line's checkpoints with `from_seq <= seq < to_seq` (`to_seq` NULL: current).
//! - Continuing a line compares the new snapshot with the previous checkpoint's, position by
//!   position, and writes only the differences: a new position inserts a row; a changed one — a
//!   tool call that completed, a variable that changed — closes the old row (`to_seq = seq`)
//!   and inserts a new revision, so an older checkpoint still loads it as it was then; a
//!   position beyond the new count is closed. The store keeps the previous snapshot of recently
//!   written lines in memory (updated in place, copying only what changed). A child of such a
//!   remembered tip is written without reading anything first: its `checkpoints` row goes in
//!   only if, inside the transaction, the parent is still the line's tip (the line is not
//!   sealed, nothing comes after the parent, no checkpoint has the child's id); if not (another
//!   process appended, deleted, replaced), the save reads what is stored and, to continue a
//!   line, the parent back.
//! - Restoring checkpoint (line, seq) reads the rows visible at seq, by position; the few
//!   remaining fields (metadata extras, progress counters, current ids, extensions) are the
//!   `rest` JSON column of its `checkpoints` row. A loaded checkpoint equals the saved one (and
//!   so its file).
//! - Deleting a checkpoint deletes the revisions only it could see; deleting a line's tip
//!   `seals` the line (nothing continues it, so seq numbers are never reused); a line with no
//!   checkpoint left goes with all its rows.
//!
//! So save #100 costs about what save #10 costs (the differences, plus the checkpoint row), and
//! the database grows with distinct content: on the agent-run workload of 20 executions × 100
//! steps, about 8 MB in SQLite against 175 MB for the snapshots stored whole.
//!
//! ## Exactness
//!
//! Timestamps are `BIGINT` microseconds since the epoch; JSON is `TEXT` holding serialized JSON
//! (PostgreSQL's `text` and `jsonb` refuse `\u0000`; its escaped form inside JSON text is fine).
//! Items keep their exact JSON in `payload`, less what a column holds exactly (a thought's
//! `content`, a tool call's `args` and `result`). In query columns a NUL character becomes
//! U+FFFD (on both backends, so that queries behave alike) and a counter above `i64::MAX`
//! saturates; the exact values are kept (in `payload`, and in the `exact` column of
//! `checkpoints`), so nothing is lost, and filters on such values are exact.
//!
//! ## Transactions and concurrency
//!
//! A save is one transaction: the checkpoint is stored whole or not at all. Saving the same
//! checkpoint again changes nothing (its checksum is compared first); another checkpoint under
//! an existing id replaces it. SQLite runs in WAL mode with a busy timeout and foreign keys on,
//! and writers take the lock up front (`BEGIN IMMEDIATE`), so concurrent processes wait for each
//! other instead of failing with "database is locked". A commit is on disk when it returns (see
//! [`Durability`]): by default a SQLite writer commits with `synchronous = NORMAL` and then
//! flushes the log itself once it has released the write lock, so that concurrent writers share
//! flushes (group commit, `group_commit.rs`), and writers of one database take turns on a
//! blocking file lock (`DB-writer.lock`) rather than sleep in SQLite's busy handler. On
//! PostgreSQL the writers of one execution take turns on a transaction-scoped advisory lock, and
//! a save that loses a race is retried.
//!
//! ## Statements: few, and prepared once
//!
//! Every statement of a save has a text fixed by its type (`statement::fixed`): diesel finds it
//! in its statement cache by type, prepares it once per connection and never builds its text
//! again; rows of any number go in through a few fixed shapes (batches of 64, 32, … 1 rows;
//! `IN` lists padded to a power of two). The usual save — a child of the tip this store wrote
//! last — computes its revisions first, then writes them:
//!
//! - on SQLite in seven statements on the agent-run workload: whether the parent is still the
//!   tip, the `checkpoints` row, the entries that changed closed (one statement for every part,
//!   each revision found by the key of `entries`: the line's tip knows where it starts) and
//!   added, the thought, the tool call, the execution's row — which leaves its indexed
//!   columns alone when the agent and status stay, so their indexes are not rewritten;
//! - on PostgreSQL in one statement after the execution's lock (`WITH` queries that write only
//!   if the `checkpoints` row went in; rows as one array per column through `unnest`): four
//!   round trips with `BEGIN` and `COMMIT`. The save's transaction runs generic plans
//!   (planning that statement costs more than running it).
//!
//! ## Pages: what a commit writes
//!
//! On SQLite a commit appends every page the transaction changed to the write-ahead log, and a
//! save changes about one page per b-tree it writes to: each table and each of its indexes. So
//! the schema keeps the b-trees of a save to what queries need (`docs/sql.md`, "Indexes"): no
//! index on `checkpoints.parent_id` (no query filters on it); `entries` keyed by (`line_id`,
//! `from_seq`, `part`, `position`), so that the revisions one save writes are next to each
//! other rather than one place per changed position, and closed through that key (no index of
//! current entries on SQLite); the listing indexes of `checkpoints` in
//! ascending order, so that the newest checkpoint is appended at the end of their ranges (read
//! backwards, newest first); `checkpoint_labels`, `unflushed_files` and `journal_slots`
//! `WITHOUT ROWID` (small rows, kept in their key's b-tree instead of a rowid table plus the
//! key's index). The revision tables stay rowid tables: their rows are large (a tool call's
//! result, a thought's content), and a `WITHOUT ROWID` b-tree keeps whole rows in its inner
//! pages and spills rows of more than about 1000 bytes to overflow pages — measured, a save
//! then wrote more pages, not fewer. On the agent-run workload a usual save writes about 23 to
//! 26 pages, growing slowly with the database (`tests/tests/sql_pages.rs` bounds it).
//!
//! ## Modules
//!
//! - `checkpoint/`: one checkpoint in the tables — `save` (the save transaction: the usual
//!   save, the general one, idempotence, replacement), `append_pg` (PostgreSQL's one-statement
//!   save), `changes` (the revisions a save writes, computed first), `item_revisions` and
//!   `item_columns` (thoughts, tool calls, completed steps: revisions; item ↔ row and
//!   payload), `entry_revisions` (the entries of the snapshot's lists and maps),
//!   `checkpoint_row` (the `checkpoints` row and the `rest` JSON), `parent_lookup` (what the
//!   general save reads first), `line_cache` (remembered tips), `load` (reading one back).
//! - `statement/`: the crate's own SQL — `fixed` (fixed-shape statements), `arrays` (rows as
//!   column arrays for PostgreSQL), `by_text` (statements whose text is built at run time: the
//!   filters of queries).
//! - `executions` (the `executions` row), `delete` (deleting checkpoints and executions,
//!   collecting the revisions nothing sees any more), `list` (listings), `queries` and
//!   `analytics` (thoughts, tool calls, statistics), `sql_console` (`read_only_sql`, and
//!   `statement_starts`: refusing a text that is not one statement), `files` (`sync_from`,
//!   `reindex_from`), `copies` (the database as a second copy of the files), `verify`,
//!   `pruned` (tombstones), `unflushed` and `flusher` (files a hybrid store wrote or removed
//!   without flushing, and the thread that syncs them), `recover` (what opening does with those
//!   records after a power loss), `columns` (how values become columns), `connection`, `open`,
//!   `store`, `hybrid`, `schema`, `error`.

#![forbid(unsafe_code)]

mod analytics;
mod checkpoint;
mod columns;
mod connect_error;
mod connection;
mod copies;
mod delete;
mod error;
mod executions;
mod files;
mod flusher;
mod group_commit;
mod hash_pace;
mod hybrid;
mod journal;
mod journal_delta;
mod journal_marks;
mod journal_revision;
mod journaled;
mod list;
#[cfg(feature = "test-support")]
mod measure;
pub mod open;
mod own_database;
mod pruned;
mod queries;
mod reconnect;
mod recover;
#[cfg(all(feature = "sqlite", feature = "test-support"))]
mod rows_floor;
pub mod schema;
#[cfg(all(feature = "postgres", feature = "test-support"))]
mod scratch;
mod sql_console;
mod stager;
mod statement;
mod store;
mod unflushed;
pub mod verify;

pub use analytics::{Averages, ExecutionStats, Stats, Totals};
pub use checkpoint::save::SyncOutcome;
pub use connection::{redact, sqlite_path, Backend, Durability, SqlOptions};
pub use copies::{DatabaseCopy, Disagreement};
pub use error::{Result, SqlError};
pub use files::{FileProblem, ReindexReport, SyncReport};
pub use hybrid::{HybridOptions, HybridStore};
pub use journaled::{JournalOptions, JournaledStore};
#[cfg(feature = "test-support")]
pub use measure::TableCounts;
pub use open::{Access, DeleteError, Location, OpenError, Store};
pub use queries::{ThoughtRow, ToolCallRow};
pub use recover::Recovery;
#[cfg(all(feature = "sqlite", feature = "test-support"))]
pub use rows_floor::RowsFloor;
#[cfg(all(feature = "postgres", feature = "test-support"))]
pub use scratch::ScratchDatabase;
pub use sql_console::SqlRows;
pub use store::SqlStore;
