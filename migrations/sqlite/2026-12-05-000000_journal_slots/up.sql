-- How far the writer of a journaled store (files plus this database, each save first appended
-- to a journal slot: see JournaledStore) has written the records of its slot: those numbered
-- below `applied`, in the slot's `generation`, are in the database and their files in place.
-- Opening the store after a crash saves again only the records after them, so a checkpoint
-- deleted or saved anew since (by this store or another) is not undone. Written in the same
-- log as the rows, after them: it is never ahead of them after a power loss. One b-tree
-- (WITHOUT ROWID): the table holds a row per slot.
CREATE TABLE journal_slots (
    slot TEXT PRIMARY KEY NOT NULL,
    generation BIGINT NOT NULL,
    applied BIGINT NOT NULL
) WITHOUT ROWID;
