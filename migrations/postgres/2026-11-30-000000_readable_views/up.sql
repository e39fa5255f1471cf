-- Read-only views for people who query caf's database (`caf sql`), see docs/sql.md. Times read
-- as `timestamptz` (exact to the microsecond); the exact BIGINT microseconds stay in the `*_us`
-- columns. Items (thoughts, tool calls) are their current revision in each line: the tables
-- keep every revision. The tables are unchanged.

CREATE VIEW executions_v AS
SELECT
    id,
    agent_id,
    task,
    status,
    TIMESTAMPTZ 'epoch' + started_at * INTERVAL '1 microsecond' AS started_at,
    TIMESTAMPTZ 'epoch' + completed_at * INTERVAL '1 microsecond' AS completed_at,
    last_checkpoint_id,
    TIMESTAMPTZ 'epoch' + last_checkpoint_at * INTERVAL '1 microsecond' AS last_checkpoint_at,
    started_at AS started_at_us,
    completed_at AS completed_at_us,
    last_checkpoint_at AS last_checkpoint_at_us
FROM executions;

CREATE VIEW checkpoints_v AS
SELECT
    id,
    parent_id,
    execution_id,
    agent_id,
    TIMESTAMPTZ 'epoch' + "timestamp" * INTERVAL '1 microsecond' AS "timestamp",
    "timestamp" AS timestamp_us,
    step_number,
    reason,
    name,
    labels,
    tokens_used,
    duration_ms,
    thought_count AS thoughts,
    call_count AS tool_calls,
    step_count AS completed_steps,
    version,
    bytes,
    integrity
FROM checkpoints;

CREATE VIEW thoughts_v AS
SELECT
    execution_id,
    id,
    type,
    content,
    confidence,
    parent_id,
    TIMESTAMPTZ 'epoch' + created_at * INTERVAL '1 microsecond' AS created_at,
    created_at AS created_at_us,
    first_checkpoint_id
FROM thoughts
WHERE to_seq IS NULL;

CREATE VIEW tool_calls_v AS
SELECT
    execution_id,
    id,
    tool_id,
    status,
    success,
    error,
    args,
    result,
    TIMESTAMPTZ 'epoch' + started_at * INTERVAL '1 microsecond' AS started_at,
    TIMESTAMPTZ 'epoch' + completed_at * INTERVAL '1 microsecond' AS completed_at,
    (completed_at - started_at) / 1000 AS duration_ms,
    started_at AS started_at_us,
    completed_at AS completed_at_us,
    first_checkpoint_id
FROM tool_calls
WHERE to_seq IS NULL;
