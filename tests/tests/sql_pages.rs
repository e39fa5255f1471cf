//! How many pages a usual SQLite save writes: each page is a frame of the write-ahead log at
//! the commit, so the log grows by a frame (a 24-byte header and a 4096-byte page) for every
//! page the save changed. The save touches about one page per b-tree it writes (its tables and
//! their indexes), so this follows the schema (`migrations/sqlite`).

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::CheckpointStore;
use sql_common::runs::agent_run;
use sql_common::TempSql;

/// SQLite's log: a 32-byte header, then frames of a 24-byte header and a page.
const WAL_HEADER: u64 = 32;
const FRAME: u64 = 24 + 4096;

/// The usual save of the agent-run workload (a child of the tip the store wrote last: one
/// thought, one completed tool call, three variables and a tool result) writes at most 18.5
/// pages on average, measured over 20 saves after the 40th: 17.75 with the schema of
/// `…_entries_closed_by_key` (no `entries_current`); 18.75 with that of
/// `…_fewer_item_indexes` (no `…_current` and `…_execution` indexes of the items); 22.75 with
/// that of `…_fewer_pages`; 24.7 before it (`entries` keyed by position, `checkpoints_parent`;
/// the listing indexes in descending order cost pages only once the database is larger).
#[test]
fn a_usual_save_writes_few_pages() {
    let store = TempSql::sqlite();
    let run = agent_run(1, 60);
    let (warm, measured) = run.split_at(40);
    for c in warm {
        store.save(c).unwrap();
    }
    // Folds the log into the file and empties it (TRUNCATE): the saves below start a new one.
    store.database_bytes().unwrap();
    let wal = store.sqlite_path().unwrap().with_file_name("caf.db-wal");
    assert_eq!(std::fs::metadata(&wal).map_or(0, |m| m.len()), 0);
    for c in measured {
        store.save(c).unwrap();
    }
    let bytes = std::fs::metadata(&wal).unwrap().len();
    assert_eq!((bytes - WAL_HEADER) % FRAME, 0, "{bytes}");
    let frames = (bytes - WAL_HEADER) / FRAME;
    let per_save = frames as f64 / measured.len() as f64;
    assert!(
        per_save <= 18.5,
        "{per_save} pages per save ({frames} frames)"
    );
    assert!(per_save >= 5.0, "{per_save}: the log was not measured");
}
