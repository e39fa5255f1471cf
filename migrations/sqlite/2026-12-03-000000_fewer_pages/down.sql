-- Back to the schema of the migrations before this one, rows copied as they are.

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
    PRIMARY KEY (line_id, part, position, from_seq)
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
);
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
);
INSERT INTO unflushed_files (writer, n, store_id, boot_id, checkpoint_id)
SELECT writer, n, store_id, boot_id, checkpoint_id FROM unflushed_files_before;
DROP TABLE unflushed_files_before;

CREATE INDEX checkpoints_parent ON checkpoints (parent_id);
DROP INDEX checkpoints_execution_time;
CREATE INDEX checkpoints_execution_time ON checkpoints (execution_id, timestamp DESC, id DESC);
DROP INDEX checkpoints_time;
CREATE INDEX checkpoints_time ON checkpoints (timestamp DESC, id DESC);
DROP INDEX checkpoints_agent;
CREATE INDEX checkpoints_agent ON checkpoints (agent_id, timestamp DESC, id DESC);
DROP INDEX checkpoints_reason;
CREATE INDEX checkpoints_reason ON checkpoints (reason, timestamp DESC, id DESC);
