//! Power loss below the file system: a store saves, deletes and flushes through caf's test
//! double of the file system ([`caf_core::store::TestFs`]), which records every operation that
//! changes the disk (create, write at an offset, rename, unlink, `fdatasync`, a
//! directory's `fsync`, `syncfs`) with the inode it touched. From that record, disk images are
//! rebuilt as a power loss may leave them, cut at every point of the record: what a sync
//! covered is on the disk, everything else is kept, dropped or torn at random (the model is in
//! `caf_tests::images`). Then each image is opened as caf opens a store after a reboot, and:
//!
//! - every save that had returned before the cut loads, from its own file, equal;
//! - every delete that had returned stays deleted;
//! - every checkpoint file is whole (exactly what caf encoded for its id);
//! - the index lists exactly the files, and (hybrid) the database agrees with the files
//!   (`caf_sql::verify` is clean) and keeps no record of an unflushed file.
//!
//! Hybrid stores (SQLite): the database is a separate device, durable at each commit (SQLite
//! syncs its own files; they do not go through the double). After every operation whose
//! commits changed it (`PRAGMA data_version`), it is copied (`VACUUM INTO`); an image cut just
//! before record `p` gets the database as it was just before `p`, or just after `p - 1` (a
//! commit in between may not have finished). The reboot is faked as in `power_loss.rs`: the
//! records of unflushed files and the boot marker are moved to an earlier boot.
//!
//! Files-only stores flush each file and its directory before a save returns.
//!
//! Journaled stores ([`caf_sql::JournaledStore`], slots small enough to fill several times):
//! the journal's slot goes through the double too; their database is durable only where the
//! store flushes SQLite's log (it marks the record each time, through a test hook), so an image
//! cut before record `p` gets any copy of the database from the last such mark up to `p` (a
//! power loss keeps a prefix of SQLite's log). Every save of the run is journaled (none is
//! larger than a slot, which the test checks).
//!
//! `CAF_POWER_IMAGES_SEEDS=N` builds N random images per cut instead of 2 (the long variant;
//! `CAF_POWER_IMAGES_SEED` changes where the seeds start).

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::format::encode;
use caf_core::store::{Hook, LoadSource, Op, OpKind, Record, TestFs};
use caf_core::{Checkpoint, CheckpointId, CheckpointStore, FileStore, ListFilter};
use caf_sql::{HybridOptions, HybridStore, JournalOptions, JournaledStore, Recovery, SqlStore};
use caf_tests::images::{build, Keep};
use diesel::connection::SimpleConnection;
use diesel::{Connection, QueryableByName, RunQueryDsl, SqliteConnection};
use sql_common::runs::agent_run;
use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

const EARLIER_BOOT: &str = "00000000-0000-0000-0000-000000000000";

/// A scratch directory: a RAM disk when there is one (the syncs of SQLite cost nothing there).
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

/// How many random images per cut, and the first seed.
fn seeds() -> (u64, u64) {
    let n = std::env::var("CAF_POWER_IMAGES_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let first = std::env::var("CAF_POWER_IMAGES_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    (n, first)
}

/// What happened, as the test's marks in the record say.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Saved(usize),
    Deleting(usize),
    Deleted(usize),
    Other,
}

fn event(op: &Op) -> Option<Event> {
    let Op::Mark(note) = op else { return None };
    let (what, i) = note.split_once(' ').unwrap_or((note, ""));
    Some(match what {
        "saved" => Event::Saved(i.parse().unwrap()),
        "deleting" => Event::Deleting(i.parse().unwrap()),
        "deleted" => Event::Deleted(i.parse().unwrap()),
        _ => Event::Other,
    })
}

/// A recorded run: what was saved, the record, and (hybrid) the database's copies.
struct Recorded {
    _base_dir: tempfile::TempDir,
    base: PathBuf,
    run: Vec<Checkpoint>,
    encoded: HashMap<CheckpointId, Vec<u8>>,
    records: Vec<Record>,
    /// `N.db`: the database after its N-th change (hybrid).
    snapshots: Option<tempfile::TempDir>,
}

impl Recorded {
    fn new(
        base_dir: tempfile::TempDir,
        run: Vec<Checkpoint>,
        records: Vec<Record>,
        snapshots: Option<tempfile::TempDir>,
    ) -> Self {
        Self {
            base: base_dir.path().to_path_buf(),
            _base_dir: base_dir,
            encoded: encoded(&run),
            run,
            records,
            snapshots,
        }
    }

    fn store_dir(base: &Path) -> PathBuf {
        base.join("checkpoints")
    }

    /// The checkpoints saved and not deleted, and those deleted, by the marks before `at` (a
    /// checkpoint being deleted at the cut is in neither).
    fn acknowledged(&self, at: usize) -> (Vec<usize>, Vec<usize>) {
        let mut saved = Vec::new();
        let mut deleted = Vec::new();
        for r in &self.records[..at] {
            match event(&r.op) {
                Some(Event::Saved(i)) => saved.push(i),
                Some(Event::Deleting(i)) => saved.retain(|s| *s != i),
                Some(Event::Deleted(i)) => deleted.push(i),
                _ => {}
            }
        }
        (saved, deleted)
    }
}

/// What the workload does: saves `run` one by one; deletes and flushes (hybrid) in between.
fn workload(
    store: &dyn CheckpointStore,
    fs: &TestFs,
    run: &[Checkpoint],
    flush: &dyn Fn() -> caf_core::Result<()>,
) {
    for (i, c) in run.iter().enumerate() {
        store.save(c).unwrap();
        fs.mark(format!("saved {i}"));
        // A flushed checkpoint, then one still unflushed, deleted.
        for (at, gone) in [(5, 2), (9, 8)] {
            if i == at {
                fs.mark(format!("deleting {gone}"));
                assert!(store.delete(&run[gone].id).unwrap());
                fs.mark(format!("deleted {gone}"));
            }
        }
        if i % 4 == 3 {
            flush().unwrap();
            fs.mark("flushed");
        }
    }
    fs.mark("end");
}

fn encoded(run: &[Checkpoint]) -> HashMap<CheckpointId, Vec<u8>> {
    run.iter()
        .map(|c| (c.id.clone(), encode(c).unwrap()))
        .collect()
}

#[derive(QueryableByName)]
struct DataVersion {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    data_version: i64,
}

/// A hook that copies the database into `dir` whenever it changed (on the test's thread only:
/// the flusher thread's operations get the copy made last), and returns the copy's number.
fn snapshotting(db: &Path, dir: &Path) -> Hook {
    let mut conn = SqliteConnection::establish(&db.display().to_string()).unwrap();
    let dir = dir.to_path_buf();
    let thread = std::thread::current().id();
    let mut version = None;
    let mut made = 0u64;
    Box::new(move || {
        if std::thread::current().id() != thread {
            return made.saturating_sub(1);
        }
        let now = diesel::sql_query("PRAGMA data_version")
            .get_result::<DataVersion>(&mut conn)
            .unwrap()
            .data_version;
        if version != Some(now) {
            version = Some(now);
            let to = dir.join(format!("{made}.db"));
            conn.batch_execute(&format!("VACUUM INTO '{}'", to.display()))
                .unwrap();
            made += 1;
        }
        made - 1
    })
}

/// A hybrid store on a recording file system, with its database snapshotted at every record
/// (the database is a device of its own: see the module docs).
struct HybridRecording {
    base_dir: tempfile::TempDir,
    /// Holds the database; it must outlive the store.
    _db_dir: tempfile::TempDir,
    snapshots: tempfile::TempDir,
    fs: TestFs,
    store: HybridStore<TestFs>,
}

impl HybridRecording {
    fn start() -> Self {
        let base_dir = scratch();
        let db_dir = scratch();
        let db = db_dir.path().join("caf.db");
        let url = format!("sqlite://{}", db.display());
        drop(SqlStore::open(&url).unwrap()); // created and migrated before the record starts
        let snapshots = scratch();
        let fs = TestFs::new();
        fs.record(Some(snapshotting(&db, snapshots.path())));
        let files = FileStore::open_with_fs(
            fs.clone(),
            Recorded::store_dir(base_dir.path()),
            Default::default(),
        )
        .unwrap();
        let store = HybridStore::with_options(
            files,
            SqlStore::open(&url).unwrap(),
            HybridOptions {
                // The workload flushes; the background flusher only makes spare files.
                flush_every: Duration::from_secs(3600),
            },
        )
        .unwrap();
        Self {
            base_dir,
            _db_dir: db_dir,
            snapshots,
            fs,
            store,
        }
    }

    /// The power goes (no last flush): what was recorded while `run` was saved.
    fn finish(self, run: Vec<Checkpoint>) -> Recorded {
        self.store.abandon();
        Recorded::new(self.base_dir, run, self.fs.records(), Some(self.snapshots))
    }
}

fn record_hybrid(steps: usize) -> Recorded {
    let rec = HybridRecording::start();
    let run = agent_run(1, steps);
    workload(&rec.store, &rec.fs, &run, &|| rec.store.flush());
    rec.finish(run)
}

/// A save held between its database commit and its rename while another save and a flush go
/// by (two threads on one store), then let go: the flush must not forget the record of the
/// held save's file, which is not on the file system yet.
fn record_hybrid_concurrent() -> Recorded {
    let rec = HybridRecording::start();
    let (store, fs) = (&rec.store, &rec.fs);
    let run = agent_run(1, 3);
    store.save(&run[0]).unwrap();
    fs.mark("saved 0");
    let held = fs.pause(OpKind::Rename, &format!("{}.json", run[1].id));
    std::thread::scope(|scope| {
        let saving = scope.spawn(|| {
            store.save(&run[1]).unwrap();
            fs.mark("saved 1");
        });
        held.wait_paused();
        store.save(&run[2]).unwrap();
        fs.mark("saved 2");
        store.flush().unwrap();
        fs.mark("flushed");
        held.resume();
        saving.join().unwrap();
    });
    fs.mark("end");
    rec.finish(run)
}

/// The slot size of the journaled stores here: a run of 14 steps fills it several times.
const SLOT_BYTES: u64 = 64 << 10;

/// The mark a journaled store's database makes in the record after each flush of its log.
const LOG_FLUSHED: &str = "log flushed";

/// The workload on a journaled store (slots of [`SLOT_BYTES`]); the power goes at the end,
/// the journal not emptied.
fn record_journaled(steps: usize) -> Recorded {
    let HybridRecording {
        base_dir,
        _db_dir,
        snapshots,
        fs,
        store,
    } = HybridRecording::start();
    let run = agent_run(1, steps);
    for c in &run {
        // A record: its bytes behind a 32-byte header, after the slot's 4 KiB header.
        let len = encode(c).unwrap().len() as u64;
        assert!(
            len + 4096 + 32 <= SLOT_BYTES,
            "every save is journaled: {len} bytes"
        );
    }
    let marks = fs.clone();
    store.sql().on_log_flush(move || marks.mark(LOG_FLUSHED));
    let store = JournaledStore::open_with(
        store,
        JournalOptions {
            slot_bytes: SLOT_BYTES,
            // The test file system sees every write: records go through it, then are flushed.
            ..JournalOptions::default()
        },
    )
    .unwrap();
    workload(&store, &fs, &run, &|| store.flush());
    store.abandon();
    let rec = Recorded::new(base_dir, run, fs.records(), Some(snapshots));
    let flushes = durable_points(&rec.records).len();
    assert!(flushes > 3, "the log was flushed {flushes} times");
    // Most saves were journaled as revisions of the one before (a record's header starts
    // with its kind): the images cut them short and replay them.
    let revisions = rec
        .records
        .iter()
        .filter(|r| matches!(&r.op, Op::Write { bytes, .. } if bytes.starts_with(b"cafv")))
        .count();
    assert!(
        revisions > steps / 2,
        "{revisions} revisions in {steps} saves"
    );
    rec
}

/// The records at which a journaled store's database is durable: the store's marks of each
/// flush of SQLite's log (see [`record_journaled`]), each made right after the flush.
fn durable_points(records: &[Record]) -> Vec<usize> {
    records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(&r.op, Op::Mark(note) if note == LOG_FLUSHED))
        .map(|(i, _)| i)
        .collect()
}

/// The images of a journaled store's record: as [`images`], with the database copies a cut
/// may find: from the one at the last durable point before the cut to the one at the cut.
fn journaled_images(rec: &Recorded) -> Vec<(usize, Keep, u64)> {
    let (n, first) = seeds();
    let tag = |i: usize| rec.records.get(i).map_or(0, |r| r.tag);
    let last = rec.records.len();
    let durable = durable_points(&rec.records);
    let mut out = Vec::new();
    for p in 0..=last {
        let newest = tag(p.min(last - 1));
        let oldest = durable
            .iter()
            .take_while(|&&d| d < p)
            .last()
            .map_or(0, |&d| tag(d));
        let mut dbs = vec![newest];
        if oldest != newest {
            dbs.push(oldest);
        }
        for &db in &dbs {
            out.push((p, Keep::All, db));
            out.push((p, Keep::None, db));
        }
        out.push((p, Keep::NamesOnly, oldest));
        for s in 0..n {
            let seed = first + (p as u64) * 1000 + s;
            let db = oldest + seed % (newest - oldest + 1);
            out.push((p, Keep::Random(seed), db));
        }
    }
    out
}

fn record_files(steps: usize) -> Recorded {
    let base_dir = scratch();
    let fs = TestFs::new();
    fs.record(None);
    let run = agent_run(1, steps);
    let store = FileStore::open_with_fs(
        fs.clone(),
        Recorded::store_dir(base_dir.path()),
        Default::default(),
    )
    .unwrap();
    workload(&store, &fs, &run, &|| Ok(()));
    let records = fs.records();
    drop(store);
    Recorded::new(base_dir, run, records, None)
}

/// The cuts and, for each, the images to build: every point of the record; all kept, none
/// kept, names but no data kept, and random images; for a hybrid store, the database just
/// before `p` and just after `p - 1` when they differ.
fn images(rec: &Recorded) -> Vec<(usize, Keep, u64)> {
    let (n, first) = seeds();
    let tag = |i: usize| rec.records.get(i).map_or(0, |r| r.tag);
    let last = rec.records.len();
    let mut out = Vec::new();
    for p in 0..=last {
        let after = tag(p.min(last - 1));
        let before = tag(p.saturating_sub(1));
        let mut dbs = vec![after];
        if before != after {
            dbs.push(before);
        }
        for &db in &dbs {
            out.push((p, Keep::All, db));
            out.push((p, Keep::None, db));
        }
        out.push((p, Keep::NamesOnly, after));
        for s in 0..n {
            let seed = first + (p as u64) * 1000 + s;
            out.push((
                p,
                Keep::Random(seed),
                dbs[(seed % dbs.len() as u64) as usize],
            ));
        }
    }
    out
}

/// The checks of the module docs on the store opened from an image; `Err` says what is wrong.
fn check_image(
    rec: &Recorded,
    at: usize,
    store: &dyn CheckpointStore,
    dir: &Path,
) -> Result<(), String> {
    let (saved, deleted) = rec.acknowledged(at);
    for &i in &saved {
        let c = &rec.run[i];
        match store.load_with_source(&c.id) {
            Ok((back, LoadSource::Primary)) if &back == c => {}
            Ok((_, LoadSource::Primary)) => return Err(format!("save {i} loads otherwise")),
            Ok((_, source)) => return Err(format!("save {i} loads from {source:?}")),
            Err(e) => return Err(format!("save {i} was lost: {e}")),
        }
    }
    for &i in &deleted {
        if dir.join(format!("{}.json", rec.run[i].id)).exists() {
            return Err(format!("deleted {i} came back"));
        }
    }
    let on_disk = caf_tests::json_file_ids(dir);
    for id in &on_disk {
        let bytes = std::fs::read(dir.join(format!("{id}.json"))).unwrap();
        let expected = rec.encoded.get(&CheckpointId::new(id).unwrap());
        if expected != Some(&bytes) {
            return Err(format!("{id}.json is torn ({} bytes)", bytes.len()));
        }
    }
    let listed: BTreeSet<String> = store
        .list(&ListFilter::default())
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    if listed != on_disk {
        return Err(format!("lists {listed:?}, the files are {on_disk:?}"));
    }
    Ok(())
}

/// The database of an image: the copy the cut asks for, after a reboot.
fn rebooted_database(rec: &Recorded, tag: u64, to: &Path) -> String {
    let snapshots = rec.snapshots.as_ref().unwrap();
    std::fs::copy(snapshots.path().join(format!("{tag}.db")), to).unwrap();
    let mut conn = SqliteConnection::establish(&to.display().to_string()).unwrap();
    conn.batch_execute(&format!(
        "UPDATE unflushed_files SET boot_id = '{EARLIER_BOOT}'"
    ))
    .unwrap();
    format!("sqlite://{}", to.display())
}

/// Moves the boot markers an image holds to an earlier boot.
fn reboot_markers(dir: &Path) {
    let markers = dir.join(".caf").join("unflushed");
    let Ok(entries) = std::fs::read_dir(&markers) else {
        return;
    };
    for e in entries {
        let e = e.unwrap();
        std::fs::rename(e.path(), markers.join(EARLIER_BOOT)).unwrap();
    }
}

fn open_hybrid_image(
    rec: &Recorded,
    at: usize,
    db_tag: u64,
    image: &Path,
) -> Result<Recovery, String> {
    let dir = Recorded::store_dir(image);
    reboot_markers(&dir);
    let url = rebooted_database(rec, db_tag, &image.join("caf.db"));
    let files = FileStore::open_with_fs(TestFs::new(), &dir, Default::default())
        .map_err(|e| format!("opening the files: {e}"))?;
    let sql = SqlStore::open(&url).map_err(|e| format!("opening the database: {e}"))?;
    let store = HybridStore::new(files, sql).map_err(|e| format!("opening: {e}"))?;
    if !store.recovery().failed.is_empty() {
        return Err(format!("recovery failed: {:?}", store.recovery().failed));
    }
    check_image(rec, at, &store, &dir)?;
    let report = caf_sql::verify::verify(&dir, Some(store.sql())).map_err(|e| e.to_string())?;
    if !report.is_clean() {
        return Err(format!("verify: {:?}", report.problems));
    }
    let rows = store.sql().table_counts().unwrap().unflushed_files;
    if rows != 0 {
        return Err(format!("{rows} records of unflushed files left"));
    }
    Ok(store.recovery().clone())
}

/// Opens an image of a journaled store as a journaled store opens after a reboot (the journal's
/// saves applied); `replayed` counts the saves it applied.
fn open_journaled_image(
    rec: &Recorded,
    at: usize,
    db_tag: u64,
    image: &Path,
    replayed: &Cell<usize>,
) -> Result<Recovery, String> {
    let dir = Recorded::store_dir(image);
    reboot_markers(&dir);
    let db = image.join("caf.db");
    let url = rebooted_database(rec, db_tag, &db);
    let files = FileStore::open_with_fs(TestFs::new(), &dir, Default::default())
        .map_err(|e| format!("opening the files: {e}"))?;
    let sql = SqlStore::open(&url).map_err(|e| format!("opening the database: {e}"))?;
    let hybrid = HybridStore::new(files, sql).map_err(|e| format!("opening: {e}"))?;
    if !hybrid.recovery().failed.is_empty() {
        return Err(format!("recovery failed: {:?}", hybrid.recovery().failed));
    }
    let recovery = hybrid.recovery().clone();
    let options = JournalOptions {
        slot_bytes: SLOT_BYTES,
        ..JournalOptions::default()
    };
    let store = JournaledStore::open_with(hybrid, options)
        .map_err(|e| format!("opening the journal: {e}"))?;
    replayed.set(replayed.get() + store.replayed());
    check_image(rec, at, &store, &dir)?;
    let report = caf_sql::verify::verify(&dir, Some(store.settled_hybrid().sql()))
        .map_err(|e| e.to_string())?;
    if !report.is_clean() {
        return Err(format!("verify: {:?}", report.problems));
    }
    drop(store);
    let mut conn = SqliteConnection::establish(&db.display().to_string()).unwrap();
    let left = diesel::sql_query(format!(
        "SELECT COUNT(*) AS data_version FROM unflushed_files WHERE boot_id = '{EARLIER_BOOT}'"
    ))
    .get_result::<DataVersion>(&mut conn)
    .unwrap()
    .data_version;
    if left != 0 {
        return Err(format!(
            "{left} records of unflushed files of the earlier boot left"
        ));
    }
    Ok(recovery)
}

fn open_files_image(rec: &Recorded, at: usize, image: &Path) -> Result<Recovery, String> {
    let dir = Recorded::store_dir(image);
    let store = FileStore::open_with_fs(TestFs::new(), &dir, Default::default())
        .map_err(|e| format!("opening: {e}"))?;
    if !store.problems().is_empty() {
        return Err(format!("problems: {:?}", store.problems()));
    }
    check_image(rec, at, &store, &dir)?;
    let report = caf_sql::verify::verify(&dir, None).map_err(|e| e.to_string())?;
    if !report.is_clean() {
        return Err(format!("verify: {:?}", report.problems));
    }
    Ok(Recovery::default())
}

/// What the images of one record came to.
#[derive(Debug, Default)]
struct Checked {
    images: usize,
    /// Images whose opening wrote files again from the database.
    rewritten: usize,
    /// Images whose opening removed a torn file of a deleted checkpoint.
    removed: usize,
    /// Images whose opening put a half-deleted checkpoint back into the database.
    restored_rows: usize,
}

/// Builds and checks every image; panics with the failures (the first few in full).
fn check_every_image(
    rec: &Recorded,
    open: impl Fn(&Recorded, usize, u64, &Path) -> Result<Recovery, String>,
) -> Checked {
    check_images(rec, images(rec), open)
}

/// [`check_every_image`] on the given images.
fn check_images(
    rec: &Recorded,
    images: Vec<(usize, Keep, u64)>,
    open: impl Fn(&Recorded, usize, u64, &Path) -> Result<Recovery, String>,
) -> Checked {
    let mut failures = Vec::new();
    let mut checked = Checked {
        images: images.len(),
        ..Checked::default()
    };
    for &(at, keep, db) in &images {
        let image = scratch();
        let built = build(&rec.records, at, keep, &rec.base, image.path());
        match open(rec, at, db, image.path()) {
            Ok(recovery) => {
                checked.rewritten += usize::from(!recovery.rewritten.is_empty());
                checked.removed += usize::from(!recovery.removed.is_empty());
                checked.restored_rows += usize::from(!recovery.restored_rows.is_empty());
            }
            Err(why) => {
                let near: Vec<String> = rec.records
                    [at.saturating_sub(4)..(at + 1).min(rec.records.len())]
                    .iter()
                    .map(|r| format!("{:?}", r.op).chars().take(160).collect())
                    .collect();
                let of = rec.records.len();
                failures.push(format!(
                    "cut before record {at} of {of}, {keep:?}, database copy {db}, {built:?}: \
                     {why}\n    records around the cut: {near:#?}"
                ));
            }
        }
    }
    let shown: Vec<String> = failures.iter().take(5).cloned().collect();
    assert!(
        failures.is_empty(),
        "{} of {} images fail:\n{}",
        failures.len(),
        images.len(),
        shown.join("\n")
    );
    checked
}

#[test]
fn a_hybrid_store_after_power_loss_at_any_point_keeps_every_acknowledged_save_whole() {
    let rec = record_hybrid(14);
    let checked = check_every_image(&rec, open_hybrid_image);
    eprintln!(
        "hybrid: {} records, {} images: {checked:?}",
        rec.records.len(),
        checked.images
    );
    // The images reach every kind of repair (names kept without their data tear the newest
    // files; a cut inside each delete leaves its file whole, or torn).
    assert!(checked.rewritten > 0 && checked.removed > 0 && checked.restored_rows > 0);
}

#[test]
fn a_files_only_store_after_power_loss_at_any_point_keeps_every_acknowledged_save_whole() {
    let rec = record_files(14);
    let checked = check_every_image(&rec, |rec, at, _db, image| open_files_image(rec, at, image));
    eprintln!(
        "files-only: {} records, {} images: {checked:?}",
        rec.records.len(),
        checked.images
    );
}

#[test]
fn a_flush_keeps_the_record_of_a_save_another_thread_has_not_put_in_place_yet() {
    let rec = record_hybrid_concurrent();
    let checked = check_every_image(&rec, open_hybrid_image);
    eprintln!(
        "hybrid, two threads: {} records, {} images: {checked:?}",
        rec.records.len(),
        checked.images
    );
}

#[test]
fn a_journaled_store_after_power_loss_at_any_point_keeps_every_acknowledged_save_whole() {
    let rec = record_journaled(14);
    let replayed = Cell::new(0);
    let checked = check_images(&rec, journaled_images(&rec), |rec, at, db, image| {
        open_journaled_image(rec, at, db, image, &replayed)
    });
    eprintln!(
        "journaled: {} records, {} images, {} saves applied from the journal: {checked:?}",
        rec.records.len(),
        checked.images,
        replayed.get()
    );
    // The images reach the journal's replay (a database that lost saves the journal holds)
    // and the hybrid store's own repairs.
    assert!(replayed.get() > 0 && checked.rewritten > 0);
}
