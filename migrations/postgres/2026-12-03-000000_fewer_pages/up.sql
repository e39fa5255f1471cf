-- Fewer pages per save (as SQLite's migration of the same name, less what PostgreSQL has no
-- equivalent of: WITHOUT ROWID).
--
-- - `entries`: its key becomes (line_id, from_seq, part, position), the same columns in another
--   order: the revisions one save writes are next to each other in the key's index, instead of
--   one place per changed position.
-- - `checkpoints_parent` goes: no query of caf filters on `parent_id` (lineage walks from a
--   checkpoint to its parent by `id`, the key), and every save wrote it.
-- - The listing indexes of `checkpoints` go from (…, timestamp DESC, id DESC) to ascending
--   order: a new checkpoint, the newest, then lands at the end of its range (PostgreSQL's
--   rightmost-page fast path and uneven splits there) instead of at its start. Listings newest
--   first read the same index backwards.
ALTER TABLE entries DROP CONSTRAINT entries_pkey;
ALTER TABLE entries ADD CONSTRAINT entries_pkey PRIMARY KEY (line_id, from_seq, part, position);
DROP INDEX checkpoints_parent;
DROP INDEX checkpoints_execution_time;
CREATE INDEX checkpoints_execution_time ON checkpoints (execution_id, timestamp, id);
DROP INDEX checkpoints_time;
CREATE INDEX checkpoints_time ON checkpoints (timestamp, id);
DROP INDEX checkpoints_agent;
CREATE INDEX checkpoints_agent ON checkpoints (agent_id, timestamp, id);
DROP INDEX checkpoints_reason;
CREATE INDEX checkpoints_reason ON checkpoints (reason, timestamp, id);
