CREATE UNIQUE INDEX entries_current ON entries (line_id, part, position) WHERE to_seq IS NULL;
