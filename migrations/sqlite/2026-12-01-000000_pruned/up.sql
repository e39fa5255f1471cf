-- Tombstones of pruned checkpoints: what lineage needs to bridge the gap a prune leaves
-- (the nearest kept ancestor, and how many were pruned in between). Written before the
-- checkpoints are deleted; never read to load a checkpoint.
CREATE TABLE pruned (
    id TEXT PRIMARY KEY NOT NULL,
    parent_id TEXT,
    execution_id TEXT NOT NULL,
    timestamp BIGINT NOT NULL,
    pruned_at BIGINT NOT NULL
);
