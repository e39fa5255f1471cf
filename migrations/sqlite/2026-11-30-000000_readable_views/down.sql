DROP VIEW tool_calls_v;
DROP VIEW thoughts_v;
DROP VIEW checkpoints_v;
DROP VIEW executions_v;
