ALTER TABLE entries DROP CONSTRAINT entries_pkey;
ALTER TABLE entries ADD CONSTRAINT entries_pkey PRIMARY KEY (line_id, part, position, from_seq);
CREATE INDEX checkpoints_parent ON checkpoints (parent_id);
