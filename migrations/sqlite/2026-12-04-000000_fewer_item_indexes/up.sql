-- Four b-trees fewer per usual save (five indexes gone). A save writes about one page per
-- b-tree it changes (docs/sql.md, "Indexes"), and the usual save adds a thought and a tool call:
-- each went into its table, its key and two indexes.
--
-- - `thoughts_execution`, `tool_calls_execution` (gone on PostgreSQL too): statistics and
--   deleting an execution now reach its items through its lines (`lines_execution`, then the
--   items' key, which starts with `line_id`; a line holds one execution's checkpoints).
-- - `thoughts_current`, `tool_calls_current`, `steps_current` (SQLite only): a save closes the
--   current revision of a position with `line_id = ? AND position IN (…) AND to_seq IS NULL`,
--   which the key (`line_id`, `position`, `from_seq`) serves as well (a position has a revision
--   or two). SQLite's saves run one at a time (`BEGIN IMMEDIATE`), and a save closes the current
--   revision before it adds the next, so a position keeps at most one; the unique index no
--   longer stands guard over that: a second current revision would make a checkpoint of that
--   line fail to load (its item count no longer matches), and in a store with files,
--   `caf verify` compares every checkpoint in the database with its file. PostgreSQL keeps these
--   indexes: its save looks the current revisions up with `position = ANY (…)` under a generic
--   plan (`append_pg.rs`).
--
-- What it costs: statistics of every execution and the views `thoughts_v` / `tool_calls_v`
-- (current revisions) read the whole table instead of an index.
DROP INDEX thoughts_current;
DROP INDEX tool_calls_current;
DROP INDEX steps_current;
DROP INDEX thoughts_execution;
DROP INDEX tool_calls_execution;
