-- Checkpoint files a hybrid store has written but not yet flushed to disk. A hybrid save
-- commits its row here with the checkpoint (the commit is the save's one flush), then puts the
-- file in place without flushing it; a background flusher deletes the rows once the file
-- system has been synced. After a power loss (a new boot), opening the store checks the files
-- of the rows left by the old boot and writes any that is missing or torn again from the
-- database. The table stays small (rows live about a second), so it has no other index: one
-- page per save.
CREATE TABLE unflushed_files (
    writer BIGINT NOT NULL,
    n BIGINT NOT NULL,
    store_id TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    PRIMARY KEY (writer, n)
);
