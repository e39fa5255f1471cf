DROP TABLE entries;
DROP TABLE steps;
DROP TABLE tool_calls;
DROP TABLE thoughts;
DROP TABLE checkpoint_labels;
DROP TABLE checkpoints;
DROP TABLE lines;
DROP TABLE executions;
