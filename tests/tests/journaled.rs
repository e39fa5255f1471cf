//! A journaled hybrid store ([`caf_sql::JournaledStore`]): a save is durable after one append to
//! the store's journal; its file and rows are written after it returns.
//!
//! A crash is simulated as it leaves things: the store is abandoned (its writer drops what it
//! had not written, its journal is not emptied); then what the crash may also have lost is
//! taken away — the newest checkpoints' rows and files (a database log not yet flushed), a
//! file left torn in place. Opening the store again must bring back every acknowledged save,
//! byte for byte, from the journal.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::format::encode;
use caf_core::{Checkpoint, CheckpointStore, FileStore, LoadSource};
use caf_sql::{Access, HybridStore, JournaledStore, Location, SqlStore, Store};
use sql_common::runs::agent_run;
use std::path::Path;

fn hybrid(dir: &Path) -> HybridStore {
    let url = format!("sqlite://{}", dir.join("caf.db").display());
    HybridStore::new(
        FileStore::open(dir.join("files")).unwrap(),
        SqlStore::open(&url).unwrap(),
    )
    .unwrap()
}

fn journaled(dir: &Path) -> JournaledStore {
    JournaledStore::open(hybrid(dir)).unwrap()
}

/// What a power cut leaves of the writer's marks (`journal_slots`): the commits after the last
/// flush of the log are lost, and the marks with them. `applied`: the mark every slot keeps
/// (how many of its records survived in the database), `None` for none.
fn lose_marks(db: &Path, applied: Option<u64>) {
    use diesel::connection::SimpleConnection;
    use diesel::Connection;
    let mut conn = diesel::SqliteConnection::establish(&db.display().to_string()).unwrap();
    let sql = match applied {
        Some(n) => format!("UPDATE journal_slots SET applied = {n}"),
        None => "DELETE FROM journal_slots".into(),
    };
    conn.batch_execute(&sql).unwrap();
}

/// Saves `run` into a journaled store in `dir`, which then crashes: its writer has written
/// everything, its journal is not emptied.
fn save_and_crash(dir: &Path, run: &[Checkpoint]) {
    let store = journaled(dir);
    for c in run {
        store.save(c).unwrap();
    }
    store.settled_hybrid();
    store.abandon();
}

/// What the power cut also took: the rows and files of `lost` (a log not yet flushed), and the
/// marks after `mark` (see [`lose_marks`]).
fn lose(dir: &Path, lost: &[Checkpoint], mark: Option<u64>) {
    let h = hybrid(dir);
    for c in lost {
        assert!(h.delete(&c.id).unwrap(), "{}", c.id);
    }
    drop(h);
    lose_marks(&dir.join("caf.db"), mark);
}

/// Every checkpoint loads equal from its own file, which holds exactly its encoding, and the
/// database holds each with that file's checksum.
fn assert_all_there(store: &JournaledStore, run: &[Checkpoint]) {
    let checksums = store.hybrid().sql().checksums().unwrap();
    for c in run {
        let (loaded, source) = store.load_with_source(&c.id).unwrap();
        assert_eq!(&loaded, c, "{}", c.id);
        assert!(
            matches!(source, LoadSource::Primary),
            "{}: {source:?}",
            c.id
        );
        let bytes = std::fs::read(store.hybrid().files().path_of(&c.id)).unwrap();
        assert_eq!(bytes, encode(c).unwrap(), "{}", c.id);
        let stated = caf_core::store::stated_integrity(&bytes).unwrap();
        assert_eq!(checksums.get(&c.id), Some(&stated), "{}", c.id);
    }
    assert_eq!(checksums.len(), run.len());
}

#[test]
fn saves_are_read_back_at_once_and_a_clean_close_leaves_nothing_to_apply() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(2, 20);
    {
        let store = journaled(dir.path());
        for c in &run {
            store.save(c).unwrap();
            // Read straight after its save: the writer's work is waited for.
            assert_eq!(&store.load(&c.id).unwrap(), c);
        }
        assert_all_there(&store, &run);
    }
    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 0, "a clean close empties the journal");
    assert_all_there(&store, &run);
}

/// The crash: the writer never wrote the last `lost` saves' rows and files, and the file of
/// one of them was left torn in place.
#[test]
fn after_a_crash_the_journal_brings_back_every_acknowledged_save() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(2, 15);
    let lost = 6;
    save_and_crash(dir.path(), &run);
    let kept = run.len() - lost;
    lose(dir.path(), &run[kept..], Some(kept as u64));
    let torn = &run[run.len() - 2];
    let path = FileStore::open(dir.path().join("files"))
        .unwrap()
        .path_of(&torn.id);
    let bytes = encode(torn).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();

    // The saves lost were journaled as revisions of their execution's save before.
    let kinds = record_kinds(&dir.path().join("files/.caf/journal/slot-0"));
    assert_eq!(kinds.len(), run.len());
    let whole = kinds.iter().filter(|k| *k == b"cafr").count();
    assert_eq!(whole, 2, "each execution's first save whole: {kinds:?}");
    assert!(
        kinds[kinds.len() - lost..].iter().all(|k| k == b"cafv"),
        "{kinds:?}"
    );

    let store = journaled(dir.path());
    assert_eq!(store.replayed(), lost);
    assert_all_there(&store, &run);
    drop(store);
    assert_eq!(journaled(dir.path()).replayed(), 0);
}

/// The kind of each record in a journal slot (`cafr` a save's text, `cafv` a revision, `cafd`
/// a text delta): records start at 4 KiB, each a 32-byte header (its magic, then its payload's
/// length) and the payload, at multiples of 8; the first header of the wrong magic ends them.
fn record_kinds(slot: &Path) -> Vec<[u8; 4]> {
    let (records, _) = walk(&std::fs::read(slot).unwrap());
    records.into_iter().map(|(_, kind)| kind).collect()
}

/// Where each record of a slot's bytes starts, with its kind (see [`record_kinds`]), and where
/// the next one would start.
fn walk(journal: &[u8]) -> (Vec<(usize, [u8; 4])>, usize) {
    let mut at = 4096;
    let mut records = Vec::new();
    while at + 32 <= journal.len() {
        let kind: [u8; 4] = journal[at..at + 4].try_into().unwrap();
        if ![b"cafr", b"cafv", b"cafd"].contains(&&kind) {
            break;
        }
        records.push((at, kind));
        let len = u32::from_le_bytes(journal[at + 4..at + 8].try_into().unwrap());
        at = (at + 32 + len as usize).next_multiple_of(8);
    }
    (records, at)
}

/// A store in `dir` that saved one execution of `steps` steps and crashed, having lost all but
/// the first `kept` saves' rows and files: the checkpoints, its journal slot's path and bytes.
fn crashed(
    dir: &Path,
    steps: usize,
    kept: usize,
) -> (Vec<Checkpoint>, std::path::PathBuf, Vec<u8>) {
    let run = agent_run(1, steps);
    save_and_crash(dir, &run);
    lose(dir, &run[kept..], Some(kept as u64));
    let slot = dir.join("files/.caf/journal/slot-0");
    let journal = std::fs::read(&slot).unwrap();
    (run, slot, journal)
}

/// A revision its save withdrew (its checkpoint could not be encoded), left in the slot by a
/// crash before the withdrawal's flush, was never acknowledged: opening leaves it out and
/// applies every record before it.
#[test]
fn a_last_revision_that_cannot_be_encoded_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let (run, slot, mut journal) = crashed(dir.path(), 6, 3);
    // A revision of the last record: a checkpoint of a format version caf cannot write.
    let (records, at) = walk(&journal);
    let n = records.len();
    assert_eq!(n, run.len());
    let mut bad = run[5].clone();
    bad.version = "0.9.0".into();
    let json = serde_json::json!({
        "base_id": run[5].id,
        "thoughts_kept": 0,
        "calls_kept": 0,
        "checkpoint": bad,
    });
    let mut payload = ((n - 1) as u64).to_le_bytes().to_vec();
    payload.extend_from_slice(&serde_json::to_vec(&json).unwrap());
    let mut head = [0u8; 32];
    head[..4].copy_from_slice(b"cafv");
    head[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    head[8..16].copy_from_slice(&journal[8..16]);
    head[16..24].copy_from_slice(&(n as u64).to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&head[..24]);
    crc.update(&payload);
    head[24..28].copy_from_slice(&crc.finalize().to_le_bytes());
    journal[at..at + 32].copy_from_slice(&head);
    journal[at + 32..at + 32 + payload.len()].copy_from_slice(&payload);
    std::fs::write(&slot, &journal).unwrap();
    assert_eq!(
        record_kinds(&slot).len(),
        n + 1,
        "the revision reads as a record"
    );

    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 3);
    assert_all_there(&store, &run);
}

/// A record cut off by the power loss was never acknowledged: it is not applied, and every
/// record before it is.
#[test]
fn a_torn_last_record_is_not_applied_and_those_before_it_are() {
    let dir = tempfile::tempdir().unwrap();
    let (run, slot, mut journal) = crashed(dir.path(), 8, 4);
    // Tear the last record (see `walk`).
    let (records, end) = walk(&journal);
    let (at, _) = records[run.len() - 1];
    let middle = at + 32 + (end - at - 32) / 2;
    journal[middle] ^= 0xff;
    std::fs::write(&slot, &journal).unwrap();

    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 3);
    assert_all_there(&store, &run[..run.len() - 1]);
    assert!(store.load(&run[run.len() - 1].id).is_err());
}

/// A deleted checkpoint does not come back from the journal after a crash.
#[test]
fn a_delete_empties_the_journal_first() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(1, 5);
    let store = journaled(dir.path());
    for c in &run {
        store.save(c).unwrap();
    }
    assert!(store.delete(&run[4].id).unwrap());
    store.save(&run[4].clone()).unwrap();
    assert!(store.delete(&run[4].id).unwrap());
    store.abandon();
    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 0);
    assert_all_there(&store, &run[..4]);
    assert!(store.load(&run[4].id).is_err());
}

/// Two stores on one directory (two processes) each hold a slot of their own; the slots of
/// both are applied by the next store opened there.
#[test]
fn stores_sharing_a_directory_journal_in_slots_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(2, 6);
    let (first, second) = run.split_at(6);
    let a = journaled(dir.path());
    let b = journaled(dir.path());
    for (x, y) in first.iter().zip(second) {
        a.save(x).unwrap();
        b.save(y).unwrap();
    }
    a.flush().unwrap();
    b.flush().unwrap();
    a.abandon();
    b.abandon();
    {
        let h = hybrid(dir.path());
        h.delete(&first[5].id).unwrap();
        h.delete(&second[5].id).unwrap();
    }
    lose_marks(&dir.path().join("caf.db"), Some(5));
    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 2);
    assert_all_there(&store, &run);
}

/// A store opened by [`Location`] after a crash — to read, or to write without a journal of
/// its own (a one-shot `caf` command) — applies the journal of the store that is gone first.
#[test]
fn any_open_after_a_crash_applies_the_journal_of_the_store_that_is_gone() {
    for access in [Access::Read, Access::Update] {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::new(dir.path(), None, false);
        let run = agent_run(1, 6);
        let Ok(Store::Journaled(store)) = location.open_journaled(Access::CreateWithDatabase)
        else {
            panic!("not a journaled store");
        };
        for c in &run {
            store.save(c).unwrap();
        }
        store.flush().unwrap();
        store.abandon();
        // The crash lost the newest rows and files.
        {
            let url = format!("sqlite://{}", location.default_db_path().display());
            let h = HybridStore::new(
                FileStore::open(dir.path()).unwrap(),
                SqlStore::open(&url).unwrap(),
            )
            .unwrap();
            for c in &run[3..] {
                h.delete(&c.id).unwrap();
            }
        }
        lose_marks(&location.default_db_path(), None);
        let store = location.open(access).unwrap();
        assert_eq!(
            store.list(&Default::default()).unwrap().len(),
            run.len(),
            "{access:?}"
        );
        for c in &run {
            assert_eq!(&store.load(&c.id).unwrap(), c, "{access:?}");
        }
        drop(store);
        let store = location.open(Access::Update).unwrap();
        assert_eq!(store.sql().unwrap().checksums().unwrap().len(), run.len());
    }
}

/// The writer marks how far it has written its slot, in the database: after a crash, a
/// checkpoint another store deleted or saved anew since is not undone from the journal.
#[test]
fn what_another_store_deleted_or_saved_anew_is_not_undone_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(1, 5);
    let store = journaled(dir.path());
    for c in &run {
        store.save(c).unwrap();
    }
    store.flush().unwrap();
    // Another process: a one-shot `caf delete`, and a new version of another checkpoint.
    let mut anew = run[3].clone();
    anew.metadata.description = Some("saved anew by another store".into());
    {
        let h = hybrid(dir.path());
        assert!(h.delete(&run[4].id).unwrap());
        h.save(&anew).unwrap();
    }
    // The journaled store is killed with all five saves still in its slot.
    store.abandon();
    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 0);
    assert!(
        store.load(&run[4].id).is_err(),
        "a deleted checkpoint came back"
    );
    assert_eq!(store.load(&run[3].id).unwrap(), anew);
    assert_all_there(&store, &[&run[..3], &[anew]].concat());
}

/// A save whose rows (and mark) were committed but whose file was not put in place before
/// the process was killed (an overwrite: the old file is still there) gets its file from the
/// database when the store opens again.
#[test]
fn a_committed_save_whose_file_is_not_in_place_is_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(1, 3);
    let mut anew = run[2].clone();
    anew.metadata.description = Some("the second version".into());
    save_and_crash(dir.path(), &[&run[..], &[anew.clone()]].concat());
    // The kill: the new version's rows and mark are in, its file is still the old one.
    let path = FileStore::open(dir.path().join("files"))
        .unwrap()
        .path_of(&anew.id);
    std::fs::write(&path, encode(&run[2]).unwrap()).unwrap();
    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 0, "the mark counts it written");
    assert_eq!(store.hybrid().recovery().rewritten, vec![anew.id.clone()]);
    assert_all_there(&store, &[&run[..2], &[anew]].concat());
}

/// Saves made while the writer waits for its turn (here: another connection holds the
/// database's write lock) queue up, and the writer then saves them together, in one transaction: each
/// one's rows are exactly its checkpoint (two executions' lines, interleaved, continued within
/// the batch), every file is in place, and the mark counts them all; a crash after that leaves
/// nothing to apply.
#[test]
fn saves_queued_behind_another_writer_are_written_together_whole() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(2, 12);
    let (a, b) = run.split_at(12);
    let interleaved: Vec<Checkpoint> = a
        .iter()
        .zip(b)
        .flat_map(|(x, y)| [x.clone(), y.clone()])
        .collect();
    let store = journaled(dir.path());
    let other = WriteLock::take(&dir.path().join("caf.db"));
    for c in &interleaved {
        store.save(c).unwrap();
    }
    other.release();
    let sql = store.settled_hybrid().sql();
    // The saves the writer took before it waited (the first, usually), then the rest.
    let transactions = sql.write_transactions();
    assert!(
        (1..=2).contains(&transactions),
        "{transactions} transactions"
    );
    for c in &interleaved {
        assert_eq!(&sql.load(&c.id).unwrap(), c, "{}", c.id);
    }
    assert_all_there(&store, &interleaved);
    let marks = marks(&dir.path().join("caf.db"));
    assert_eq!(
        marks,
        vec![interleaved.len() as i64],
        "the mark after the last"
    );
    store.abandon();
    let store = journaled(dir.path());
    assert_eq!(store.replayed(), 0, "the mark counts every save written");
    assert_all_there(&store, &interleaved);
}

/// A batch whose third file cannot be put in place (a directory stands at its name) leaves
/// the journal's mark before the batch: the next call saves every one of them again, that
/// one included once its place is free; none of the acknowledged saves is lost.
#[test]
fn a_batch_that_fails_halfway_is_written_again_whole_by_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let run = agent_run(1, 8);
    let store = journaled(dir.path());
    let blocked = store.hybrid().files().path_of(&run[3].id);
    std::fs::create_dir(&blocked).unwrap();
    let other = WriteLock::take(&dir.path().join("caf.db"));
    for c in &run {
        store.save(c).unwrap();
    }
    other.release();
    // The writer wrote the saves it took before it waited (the first, usually), then failed
    // on the batch of the rest: none of that batch is in the database, and the files it put
    // in place before the third's failed were taken out again.
    let sql = store.settled_hybrid().sql();
    let mark = marks(&dir.path().join("caf.db"))
        .first()
        .copied()
        .unwrap_or(0);
    assert!(mark <= 3, "the mark {mark} is past the failed save");
    assert_eq!(sql.write_transactions(), u64::from(mark > 0));
    let files = store.hybrid().files();
    for (n, c) in run.iter().enumerate() {
        let in_db = sql.load(&c.id).is_ok();
        let file = files.path_of(&c.id);
        let in_files = file.is_file();
        let written = (n as i64) < mark;
        assert_eq!(
            (in_db, in_files),
            (written, written),
            "save {n}, mark {mark}"
        );
    }
    std::fs::remove_dir(&blocked).unwrap();
    // The next call writes them again from the journal.
    assert_eq!(&store.load(&run[3].id).unwrap(), &run[3]);
    assert_all_there(&store, &run);
}

/// The database's write lock, held by another connection (its transaction open) until
/// released: the store's writer waits for its turn meanwhile.
struct WriteLock(diesel::SqliteConnection);

impl WriteLock {
    fn take(db: &Path) -> Self {
        use diesel::connection::SimpleConnection;
        use diesel::Connection;
        let mut conn = diesel::SqliteConnection::establish(&db.display().to_string()).unwrap();
        conn.batch_execute("BEGIN IMMEDIATE").unwrap();
        Self(conn)
    }

    fn release(mut self) {
        diesel::connection::SimpleConnection::batch_execute(&mut self.0, "COMMIT").unwrap();
    }
}

/// The writers' marks (`journal_slots.applied`).
fn marks(db: &Path) -> Vec<i64> {
    use diesel::sql_types::BigInt;
    use diesel::{Connection, QueryableByName, RunQueryDsl};
    #[derive(QueryableByName)]
    struct Mark {
        #[diesel(sql_type = BigInt)]
        applied: i64,
    }
    let mut conn = diesel::SqliteConnection::establish(&db.display().to_string()).unwrap();
    diesel::sql_query("SELECT applied FROM journal_slots")
        .load::<Mark>(&mut conn)
        .unwrap()
        .into_iter()
        .map(|m| m.applied)
        .collect()
}
