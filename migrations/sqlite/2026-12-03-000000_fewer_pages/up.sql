-- Fewer pages per save. A save writes about one page per b-tree it changes (each is a frame of
-- the write-ahead log at the commit), so this migration takes b-trees and scattered writes out
-- of the save, and keeps every query's index (measured on the agent-run workload: see
-- docs/benchmarks.md). Rows are copied as they are.
--
-- - `entries`: its key becomes (line_id, from_seq, part, position), the same columns in another
--   order: the revisions one save writes are next to each other in the key's b-tree, instead of
--   one place per changed position. Loads read a line's entries by line and `from_seq`, and
--   closing uses `entries_current`, as before.
-- - `checkpoint_labels` and `unflushed_files` become WITHOUT ROWID: their rows are small and
--   their key is the table's own b-tree, instead of a rowid table plus a second b-tree for the
--   key. Nothing reads their rowid. (The revision tables stay rowid tables: their rows are
--   large — a tool call's result, a thought's content — and a WITHOUT ROWID b-tree keeps rows
--   in its inner pages and spills rows above about 1000 bytes to overflow pages: measured, a
--   save then wrote more pages, not fewer.)
-- - `checkpoints_parent` goes: no query of caf filters on `parent_id` (lineage walks from a
--   checkpoint to its parent by `id`, the key).
-- - The listing indexes of `checkpoints` go from (…, timestamp DESC, id DESC) to ascending
--   order: a new checkpoint, the newest, then lands at the end of its range (appended: a full
--   page is left full and a new one started) instead of at its start (where pages split in
--   halves). Listings newest first read the same index backwards, with no sort.

ALTER TABLE entries RENAME TO entries_before;
CREATE TABLE entries (
    line_id BIGINT NOT NULL REFERENCES lines (id),
    part TEXT NOT NULL CHECK (part IN ('history', 'messages', 'memory', 'state', 'variables', 'results', 'pending_steps')),
    position BIGINT NOT NULL,
    from_seq BIGINT NOT NULL,
    to_seq BIGINT,
    execution_id TEXT NOT NULL,
    first_checkpoint_id TEXT NOT NULL,
    key TEXT,
    payload TEXT NOT NULL,
    PRIMARY KEY (line_id, from_seq, part, position)
);
INSERT INTO entries (line_id, part, position, from_seq, to_seq, execution_id,
    first_checkpoint_id, key, payload)
SELECT line_id, part, position, from_seq, to_seq, execution_id,
    first_checkpoint_id, key, payload
FROM entries_before;
DROP TABLE entries_before;
CREATE UNIQUE INDEX entries_current ON entries (line_id, part, position) WHERE to_seq IS NULL;

ALTER TABLE checkpoint_labels RENAME TO checkpoint_labels_before;
CREATE TABLE checkpoint_labels (
    checkpoint_id TEXT NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    PRIMARY KEY (checkpoint_id, label)
) WITHOUT ROWID;
INSERT INTO checkpoint_labels (checkpoint_id, label)
SELECT checkpoint_id, label FROM checkpoint_labels_before;
DROP TABLE checkpoint_labels_before;
CREATE INDEX checkpoint_labels_label ON checkpoint_labels (label, checkpoint_id);

ALTER TABLE unflushed_files RENAME TO unflushed_files_before;
CREATE TABLE unflushed_files (
    writer BIGINT NOT NULL,
    n BIGINT NOT NULL,
    store_id TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    PRIMARY KEY (writer, n)
) WITHOUT ROWID;
INSERT INTO unflushed_files (writer, n, store_id, boot_id, checkpoint_id)
SELECT writer, n, store_id, boot_id, checkpoint_id FROM unflushed_files_before;
DROP TABLE unflushed_files_before;

DROP INDEX checkpoints_parent;

DROP INDEX checkpoints_execution_time;
CREATE INDEX checkpoints_execution_time ON checkpoints (execution_id, timestamp, id);
DROP INDEX checkpoints_time;
CREATE INDEX checkpoints_time ON checkpoints (timestamp, id);
DROP INDEX checkpoints_agent;
CREATE INDEX checkpoints_agent ON checkpoints (agent_id, timestamp, id);
DROP INDEX checkpoints_reason;
CREATE INDEX checkpoints_reason ON checkpoints (reason, timestamp, id);
