DROP TABLE unflushed_files;
