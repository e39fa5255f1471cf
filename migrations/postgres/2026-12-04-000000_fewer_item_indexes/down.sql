-- Back to the indexes of the migrations before this one.
CREATE INDEX thoughts_execution ON thoughts (execution_id, id);
CREATE INDEX tool_calls_execution ON tool_calls (execution_id, id);
