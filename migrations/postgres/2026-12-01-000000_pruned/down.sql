DROP TABLE pruned;
