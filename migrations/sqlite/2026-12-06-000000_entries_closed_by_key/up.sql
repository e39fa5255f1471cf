-- One b-tree fewer per save (SQLite only): `entries_current` goes. A save closed the current
-- revision of each entry it replaced through that index (`line_id`, `part`, `position` where
-- `to_seq` is null), and every new revision went into it; now the save closes each revision by
-- the table's key (`line_id`, `from_seq`, `part`, `position`), the line's tip knowing where
-- each current revision starts (caf-sql, `checkpoint/entry_since.rs`). SQLite's saves run one
-- at a time (`BEGIN IMMEDIATE`), and a save closes exactly the revisions it expects (it fails,
-- and is rolled back, when one of them is not current), so a position keeps one current
-- revision without the unique index standing guard. PostgreSQL keeps the index: its save
-- closes revisions by position (`append_pg.rs`).
DROP INDEX entries_current;
