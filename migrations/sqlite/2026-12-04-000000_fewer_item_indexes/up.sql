-- Four b-trees fewer per save, on SQLite only. A save writes about one page per b-tree it
-- changes (docs/sql.md, "Indexes"), and the usual save adds a thought and a tool call: each
-- went into its table, its key and two indexes that SQLite does not need.
--
-- - `thoughts_current`, `tool_calls_current`, `steps_current`: a save closes the current
--   revision of a position with `line_id = ? AND position IN (…) AND to_seq IS NULL`, which
--   the key (`line_id`, `position`, `from_seq`) serves as well: a position has a revision or
--   two. At most one current revision per position is kept by the save, which runs under the
--   database's write lock and the execution's lock; `caf verify` loads every checkpoint from
--   the database and compares it with its file, so a second current revision would show there.
--   (PostgreSQL keeps these unique indexes: its writers run concurrently, and the index is
--   what orders two saves of one line.)
-- - `thoughts_execution`, `tool_calls_execution`: statistics reach an execution's items
--   through its lines (`lines_execution`, then the key, which starts with `line_id`), as
--   deleting an execution always did.
DROP INDEX thoughts_current;
DROP INDEX tool_calls_current;
DROP INDEX steps_current;
DROP INDEX thoughts_execution;
DROP INDEX tool_calls_execution;
