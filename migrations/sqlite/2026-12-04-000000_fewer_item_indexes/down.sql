-- Back to the indexes of the migrations before this one.
CREATE INDEX thoughts_execution ON thoughts (execution_id, id);
CREATE UNIQUE INDEX thoughts_current ON thoughts (line_id, position) WHERE to_seq IS NULL;
CREATE INDEX tool_calls_execution ON tool_calls (execution_id, id);
CREATE UNIQUE INDEX tool_calls_current ON tool_calls (line_id, position) WHERE to_seq IS NULL;
CREATE UNIQUE INDEX steps_current ON steps (line_id, position) WHERE to_seq IS NULL;
