-- Two indexes fewer per save: statistics and deleting an execution reach its items through its
-- lines (`lines_execution`, then the items' key, which starts with `line_id`), so no query of
-- caf reads `thoughts_execution` or `tool_calls_execution` any more. The `…_current` unique
-- indexes stay on PostgreSQL: a save finds the current revisions to close with
-- `position = ANY (…)` on them under a generic plan (`append_pg.rs`), and they refuse a second
-- current revision of a position. (SQLite drops those too: see its migration of this name.)
DROP INDEX thoughts_execution;
DROP INDEX tool_calls_execution;
