-- Fewer pages per save (as SQLite's migration of the same name, less what PostgreSQL has no
-- equivalent of: WITHOUT ROWID).
--
-- - `entries`: its key becomes (line_id, from_seq, part, position), the same columns in another
--   order: the revisions one save writes are next to each other in the key's index, instead of
--   one place per changed position.
-- - `checkpoints_parent` goes: no query of caf filters on `parent_id` (lineage walks from a
--   checkpoint to its parent by `id`, the key), and every save wrote it.
ALTER TABLE entries DROP CONSTRAINT entries_pkey;
ALTER TABLE entries ADD CONSTRAINT entries_pkey PRIMARY KEY (line_id, from_seq, part, position);
DROP INDEX checkpoints_parent;
