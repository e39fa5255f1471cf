-- caf SQL layer, first schema (PostgreSQL). See migrations/README.md and the caf-sql crate docs.
-- Identifier columns use COLLATE "C" so that they sort byte-wise, as in Rust and SQLite.
-- Timestamps are BIGINT microseconds since the Unix epoch (UTC). JSON is stored as TEXT.

CREATE TABLE executions (
    id TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    agent_id TEXT COLLATE "C" NOT NULL,
    task TEXT COLLATE "C" NOT NULL DEFAULT '',
    started_at BIGINT NOT NULL,
    completed_at BIGINT,
    status TEXT COLLATE "C" NOT NULL CHECK (status IN ('running', 'paused', 'completed', 'failed')),
    last_checkpoint_id TEXT COLLATE "C",
    last_checkpoint_at BIGINT
);
CREATE INDEX executions_agent ON executions (agent_id);
CREATE INDEX executions_status ON executions (status);

-- A line is a run of checkpoints of one execution where each one's parent is the previous one
-- (its tip is the checkpoint with the highest `seq`). Items (thoughts, tool calls, completed
-- steps, entries) are stored per line as revisions visible from `from_seq` to just before
-- `to_seq`. A line whose tip was deleted is `sealed`: nothing continues it any more.
CREATE TABLE lines (
    id BIGINT PRIMARY KEY NOT NULL,
    execution_id TEXT COLLATE "C" NOT NULL REFERENCES executions (id),
    sealed BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX lines_execution ON lines (execution_id);

CREATE TABLE checkpoints (
    id TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    parent_id TEXT COLLATE "C",
    execution_id TEXT COLLATE "C" NOT NULL REFERENCES executions (id),
    agent_id TEXT COLLATE "C" NOT NULL,
    timestamp BIGINT NOT NULL,
    version TEXT COLLATE "C" NOT NULL,
    step_number BIGINT NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    tokens_used BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    name TEXT,
    labels TEXT NOT NULL,
    integrity TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    line_id BIGINT NOT NULL REFERENCES lines (id),
    seq BIGINT NOT NULL,
    thought_count BIGINT NOT NULL,
    call_count BIGINT NOT NULL,
    step_count BIGINT NOT NULL,
    exact TEXT,
    rest TEXT NOT NULL,
    UNIQUE (line_id, seq)
);
CREATE INDEX checkpoints_execution_time ON checkpoints (execution_id, timestamp DESC, id DESC);
CREATE INDEX checkpoints_time ON checkpoints (timestamp DESC, id DESC);
CREATE INDEX checkpoints_agent ON checkpoints (agent_id, timestamp DESC, id DESC);
CREATE INDEX checkpoints_reason ON checkpoints (reason, timestamp DESC, id DESC);
CREATE INDEX checkpoints_parent ON checkpoints (parent_id);

CREATE TABLE checkpoint_labels (
    checkpoint_id TEXT COLLATE "C" NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
    label TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (checkpoint_id, label)
);
CREATE INDEX checkpoint_labels_label ON checkpoint_labels (label, checkpoint_id);

CREATE TABLE thoughts (
    line_id BIGINT NOT NULL REFERENCES lines (id),
    position BIGINT NOT NULL,
    from_seq BIGINT NOT NULL,
    to_seq BIGINT,
    execution_id TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    first_checkpoint_id TEXT COLLATE "C" NOT NULL,
    type TEXT COLLATE "C" NOT NULL,
    content TEXT NOT NULL,
    confidence DOUBLE PRECISION,
    parent_id TEXT COLLATE "C",
    created_at BIGINT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (line_id, position, from_seq)
);
CREATE INDEX thoughts_execution ON thoughts (execution_id, id);
-- At most one current revision per position, found without scanning the older ones.
CREATE UNIQUE INDEX thoughts_current ON thoughts (line_id, position) WHERE to_seq IS NULL;

CREATE TABLE tool_calls (
    line_id BIGINT NOT NULL REFERENCES lines (id),
    position BIGINT NOT NULL,
    from_seq BIGINT NOT NULL,
    to_seq BIGINT,
    execution_id TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    first_checkpoint_id TEXT COLLATE "C" NOT NULL,
    tool_id TEXT COLLATE "C" NOT NULL,
    args TEXT NOT NULL,
    result TEXT,
    success BOOLEAN,
    error TEXT,
    status TEXT COLLATE "C" NOT NULL,
    started_at BIGINT,
    completed_at BIGINT,
    payload TEXT NOT NULL,
    PRIMARY KEY (line_id, position, from_seq)
);
CREATE INDEX tool_calls_execution ON tool_calls (execution_id, id);
CREATE INDEX tool_calls_tool ON tool_calls (tool_id, status);
CREATE UNIQUE INDEX tool_calls_current ON tool_calls (line_id, position) WHERE to_seq IS NULL;

CREATE TABLE steps (
    line_id BIGINT NOT NULL REFERENCES lines (id),
    position BIGINT NOT NULL,
    from_seq BIGINT NOT NULL,
    to_seq BIGINT,
    execution_id TEXT COLLATE "C" NOT NULL,
    first_checkpoint_id TEXT COLLATE "C" NOT NULL,
    name TEXT NOT NULL,
    completed_at BIGINT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (line_id, position, from_seq)
);
CREATE UNIQUE INDEX steps_current ON steps (line_id, position) WHERE to_seq IS NULL;

-- Revisions of the entries of the snapshot's lists and maps, by part: context `history`,
-- `messages`, `memory`, `state` and `variables`, tool-state `results`, and `pending_steps`
-- (stored from the end, so that completing the next step closes one row). Map entries are at
-- their position in key order; `key` is the map key (NULL for lists); `payload` is the exact
-- JSON of the value, or of `[key, value]` for maps.
CREATE TABLE entries (
    line_id BIGINT NOT NULL REFERENCES lines (id),
    part TEXT COLLATE "C" NOT NULL CHECK (part IN ('history', 'messages', 'memory', 'state', 'variables', 'results', 'pending_steps')),
    position BIGINT NOT NULL,
    from_seq BIGINT NOT NULL,
    to_seq BIGINT,
    execution_id TEXT COLLATE "C" NOT NULL,
    first_checkpoint_id TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C",
    payload TEXT NOT NULL,
    PRIMARY KEY (line_id, part, position, from_seq)
);
CREATE UNIQUE INDEX entries_current ON entries (line_id, part, position) WHERE to_seq IS NULL;
