//! The file store's index: an append-only log of summaries in `DIR/.caf/index.jsonl`.
//!
//! The checkpoint files are the truth; the index is a cache that lets `list` and `latest` run
//! without opening a single checkpoint. Each save appends one line (`put`), each delete one line
//! (`del`), in a single `write` under a shared lock on `DIR/.caf/lock`. On open, the store
//! reconciles the log with the directory (new, changed and vanished files) and, if anything
//! differed, rewrites the log atomically under an exclusive lock. A torn last line (a writer
//! killed mid-append) is ignored and repaired by the next reconcile. Another process's appends
//! are picked up by reading the log's new tail before each listing; a writer's own appends count
//! as read when nothing else was appended before them, so they are not parsed again. In memory,
//! each execution's entries are kept in time order ([`Entries`]): `latest` and listing one
//! execution do not scan the whole store.
//!
//! The log also remembers, for a file that was indexed and later found damaged, the summary it
//! had while it was whole (a `bad` record): a restore can then still tell which execution the
//! damaged checkpoint belonged to, when it was taken and who its parent is, and fall back along
//! its lineage (see [`crate::CheckpointStore::damaged`]). caf versions that do not know `bad`
//! records skip them like a torn line.

use super::atomic::{write_atomic_in, AtomicWriteOptions};
use super::fs::{create_dir_durable, read_to_end, write_all, Fs};
use super::index_entries::Entries;
use super::CheckpointSummary;
use crate::error::{Error, Result};
use crate::id::CheckpointId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What the index records of one checkpoint file: its summary, plus what identifies the file
/// version it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The summary.
    pub summary: CheckpointSummary,
    /// The file's modification time (ns since the epoch) when indexed. An `i64` (good until
    /// 2262), not an `i128`: serde cannot read 128-bit integers inside the internally tagged
    /// records of the log, which made every `put` line unreadable.
    pub mtime_ns: i64,
    /// The integrity checksum the file states (`sha256:…`), when it is in the current format;
    /// `None` for a file in an older format, or one indexed by an older caf. A database that
    /// mirrors the files holds the same checksum for it, so the two can be compared without
    /// reading a checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    /// The digest of the file's bytes (`blake3:…`, see [`crate::format::file_digest`]) when caf
    /// wrote or validated them, in the current format; `None` for a file in an older format, or
    /// one indexed by a caf before the digest. A restore whose file hashes to it is reading the
    /// file this entry was made of, and needs no SHA-256 of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl Entry {
    /// Whether the file at `path` has the size and modification time recorded here: a store
    /// that opens trusts such an entry without reading the file.
    pub fn matches_file(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path)
            .is_ok_and(|m| m.len() == self.summary.bytes && mtime_ns(&m) == self.mtime_ns)
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Record {
    Put(Entry),
    Del {
        id: CheckpointId,
    },
    /// The file was found damaged; the entry is the last one it had while whole.
    Bad(Entry),
}

/// What a store's index log records, read as it is on disk: nothing is reconciled with the
/// directory, nothing is written (see [`read_index`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexSnapshot {
    /// The checkpoints the index lists.
    pub entries: HashMap<CheckpointId, Entry>,
    /// Files the index knows to be damaged, with the last entry each had while whole.
    pub damaged: HashMap<CheckpointId, Entry>,
}

/// How every record of the log begins (serde writes the tag first).
const RECORD_START: &[u8] = b"{\"op\":";

/// The record of one line of the log. A line that does not parse may be a torn append (a
/// writer killed, or a full disk) that the next append was glued to: the record that begins
/// last on the line is read instead.
fn parse_line(line: &[u8]) -> Option<Record> {
    if let Ok(r) = serde_json::from_slice::<Record>(line) {
        return Some(r);
    }
    let start = line
        .windows(RECORD_START.len())
        .rposition(|w| w == RECORD_START)
        .filter(|&at| at > 0)?;
    serde_json::from_slice::<Record>(&line[start..]).ok()
}

/// A map of entries by id that records of the log apply to: the [`IndexSnapshot`]'s plain
/// map, or the live index's [`Entries`].
trait EntryMap {
    fn insert(&mut self, id: CheckpointId, entry: Entry) -> Option<Entry>;
    fn remove(&mut self, id: &CheckpointId) -> Option<Entry>;
}

impl EntryMap for HashMap<CheckpointId, Entry> {
    fn insert(&mut self, id: CheckpointId, entry: Entry) -> Option<Entry> {
        HashMap::insert(self, id, entry)
    }
    fn remove(&mut self, id: &CheckpointId) -> Option<Entry> {
        HashMap::remove(self, id)
    }
}

impl EntryMap for Entries {
    fn insert(&mut self, id: CheckpointId, entry: Entry) -> Option<Entry> {
        Entries::insert(self, id, entry)
    }
    fn remove(&mut self, id: &CheckpointId) -> Option<Entry> {
        Entries::remove(self, id)
    }
}

/// Applies one line of the log to `entries` and `damaged`; a line that does not parse (a torn
/// last line) is ignored.
fn apply_line(
    entries: &mut impl EntryMap,
    damaged: &mut HashMap<CheckpointId, Entry>,
    line: &[u8],
) {
    match parse_line(line) {
        Some(Record::Put(e)) => {
            damaged.remove(&e.summary.id);
            entries.insert(e.summary.id.clone(), e);
        }
        Some(Record::Bad(e)) => {
            entries.remove(&e.summary.id);
            damaged.insert(e.summary.id.clone(), e);
        }
        Some(Record::Del { id }) => {
            entries.remove(&id);
            damaged.remove(&id);
        }
        None => {} // a torn line from a killed writer; reconcile repairs it
    }
}

/// Reads the index log of the store in `dir` (`DIR/.caf/index.jsonl`) as it is, without
/// reconciling it with the files or taking a lock; `None` if there is no index. For checking a
/// store (`verify`): opening a [`super::FileStore`] would bring the index up to date first.
pub fn read_index(dir: &Path) -> Result<Option<IndexSnapshot>> {
    let path = dir.join(".caf").join("index.jsonl");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let mut snapshot = IndexSnapshot::default();
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |e| e + 1);
    for line in bytes[..end].split(|&b| b == b'\n') {
        apply_line(&mut snapshot.entries, &mut snapshot.damaged, line);
    }
    Ok(Some(snapshot))
}

/// The modification time of a file in ns since the epoch (0 if unknown).
pub(crate) fn mtime_ns(meta: &Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(unix)]
fn identity(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(_meta: &Metadata) -> (u64, u64) {
    (0, 0)
}

/// An identity no file has: the log was replaced and has not been read since.
const NOT_READ: (u64, u64) = (u64::MAX, u64::MAX);

/// The persistent part of the index, when the store directory is writable.
struct Log {
    path: PathBuf,
    lock: File,
    file: File,
    identity: (u64, u64),
    /// How far the log has been read.
    offset: u64,
    /// Lines read (live and dead), to decide when to compact.
    lines: usize,
    /// Records that could not be appended (the disk was full): they go before the next
    /// append, or into the next compaction. Until then the directory holds files the log on
    /// disk does not list yet (which every open finds), never the other way round.
    pending: Vec<u8>,
}

/// The in-memory index, optionally backed by the log (written and read through `fs`).
pub(crate) struct Index<F: Fs> {
    pub entries: Entries,
    /// Files found damaged, with the last entry each had while whole (`bad` records).
    pub damaged: HashMap<CheckpointId, Entry>,
    log: Option<Log>,
    meta_dir: PathBuf,
    fs: F,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

impl<F: Fs> Index<F> {
    /// Opens (creating if needed) the index of the store whose metadata dir is `meta_dir`.
    /// If the directory cannot be written, the index lives in memory only.
    pub fn open(fs: F, meta_dir: &Path) -> Self {
        let log = Self::open_log(&fs, meta_dir).ok();
        let mut index = Self {
            entries: Entries::default(),
            damaged: HashMap::new(),
            log,
            meta_dir: meta_dir.to_path_buf(),
            fs,
        };
        // A log that cannot be read is treated as empty: reconcile rebuilds it.
        let _ = index.refresh();
        index
    }

    /// An index that is never written to disk.
    pub fn in_memory(fs: F, meta_dir: &Path) -> Self {
        Self {
            entries: Entries::default(),
            damaged: HashMap::new(),
            log: None,
            meta_dir: meta_dir.to_path_buf(),
            fs,
        }
    }

    fn open_log(fs: &F, meta_dir: &Path) -> Result<Log> {
        // `.caf/` made durably: a hybrid store keeps its store id and boot markers there.
        create_dir_durable(fs, meta_dir).map_err(io(meta_dir))?;
        fs.create_dir_all(&meta_dir.join("tmp"))
            .map_err(io(meta_dir))?;
        let ignore = meta_dir.join(".gitignore");
        if !ignore.exists() {
            // The index is a cache: keep it out of git.
            let _ = std::fs::write(&ignore, "*\n");
        }
        let lock_path = meta_dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        let path = meta_dir.join("index.jsonl");
        let file = Self::open_append(fs, &path)?;
        let identity = identity(&file.metadata().map_err(io(&path))?);
        Ok(Log {
            path,
            lock,
            file,
            identity,
            offset: 0,
            lines: 0,
            pending: Vec::new(),
        })
    }

    fn open_append(fs: &F, path: &Path) -> Result<File> {
        fs.open_append(path).map_err(io(path))
    }

    /// The staging directory for atomic writes, if the store has one.
    pub fn temp_dir(&self) -> Option<PathBuf> {
        self.log.as_ref().map(|_| self.meta_dir.join("tmp"))
    }

    /// Reads what other writers appended since the last read (or everything, if the log was
    /// replaced: then the records not yet appended are applied again on top).
    pub fn refresh(&mut self) -> Result<()> {
        if !self.read_log()? {
            return Ok(());
        }
        let pending = match &mut self.log {
            Some(log) if !log.pending.is_empty() => std::mem::take(&mut log.pending),
            _ => return Ok(()),
        };
        self.apply_lines(&pending);
        if let Some(log) = &mut self.log {
            log.pending = pending;
        }
        Ok(())
    }

    /// Reads the whole lines appended to the log since the last read; whether the log had been
    /// replaced (it is then read from its start, into an emptied index).
    fn read_log(&mut self) -> Result<bool> {
        let Some(log) = &mut self.log else {
            return Ok(false);
        };
        let meta = std::fs::metadata(&log.path).map_err(io(&log.path))?;
        let replaced = identity(&meta) != log.identity;
        if replaced {
            log.file = Self::open_append(&self.fs, &log.path)?;
            log.identity = identity(&log.file.metadata().map_err(io(&log.path))?);
            log.offset = 0;
            log.lines = 0;
            self.entries.clear();
            self.damaged.clear();
        }
        if meta.len() <= log.offset {
            return Ok(replaced);
        }
        let mut buf = Vec::new();
        (&log.file)
            .seek(SeekFrom::Start(log.offset))
            .map_err(io(&log.path))?;
        read_to_end(&self.fs, &log.file, &log.path, &mut buf, u64::MAX).map_err(io(&log.path))?;
        // Only whole lines: a writer may be half-way through one.
        if let Some(end) = buf.iter().rposition(|&b| b == b'\n') {
            log.offset += end as u64 + 1;
            let lines = self.apply_lines(&buf[..end]);
            if let Some(log) = &mut self.log {
                log.lines += lines;
            }
        }
        Ok(replaced)
    }

    /// Applies records, one per line, to the index in memory; how many lines there were.
    fn apply_lines(&mut self, lines: &[u8]) -> usize {
        let mut count = 0;
        for line in lines.split(|&b| b == b'\n') {
            count += 1;
            apply_line(&mut self.entries, &mut self.damaged, line);
        }
        count
    }

    /// Appends `records` to the log (after any still pending). The in-memory index already
    /// holds them; if the log cannot be written (a full disk), they stay pending for the next
    /// append or compaction, and a torn line the failed write left at the end of the log is cut
    /// off. The index is a cache of the files, which are already in place: a save or a delete
    /// does not fail because of it.
    fn append(&mut self, records: &[Record]) {
        let Some(log) = &mut self.log else {
            return;
        };
        let mut buf = std::mem::take(&mut log.pending);
        // Records that waited (a full disk) land after lines read since: the next refresh must
        // read the log back to agree with it.
        let only_these = buf.is_empty();
        for r in records {
            // Records are plain data and always serialize.
            let _ = serde_json::to_writer(&mut buf, r);
            buf.push(b'\n');
        }
        if log.lock.lock_shared().is_err() {
            log.pending = buf;
            return;
        }
        let result = (|| -> Result<()> {
            // The log may have been replaced by a compaction in another process.
            let now = std::fs::metadata(&log.path).map_err(io(&log.path))?;
            let replaced = identity(&now) != log.identity;
            if replaced {
                log.file = Self::open_append(&self.fs, &log.path)?;
                log.identity = identity(&log.file.metadata().map_err(io(&log.path))?);
                log.offset = 0;
            }
            write_all(&self.fs, &log.file, &log.path, &buf).map_err(io(&log.path))?;
            if replaced {
                // What memory holds of the old log may include entries the compaction dropped
                // (their `del` lines were never read): the next refresh reads the new log as a
                // replaced one, from an emptied index, and applies what is pending on top.
                log.identity = NOT_READ;
            }
            // Read up to its end before, and grown by exactly these lines since: no other
            // writer appended in between, so the next refresh need not read them back (they
            // are in memory already, in the log's order).
            if only_these && !replaced && now.len() == log.offset {
                // Only a shortcut: if the length cannot be read, the lines are read back.
                let after = log.file.metadata().map(|m| m.len());
                if after
                    .as_ref()
                    .is_ok_and(|&a| a == log.offset + buf.len() as u64)
                {
                    log.offset += buf.len() as u64;
                    log.lines += buf.iter().filter(|&&b| b == b'\n').count();
                }
            }
            Ok(())
        })();
        let _ = log.lock.unlock();
        if result.is_err() {
            log.pending = buf;
            // Under the exclusive lock no one else is half-way through an append.
            if log.lock.lock().is_ok() {
                let _ = cut_torn_tail(&log.path, log.offset);
                let _ = log.lock.unlock();
            }
        }
    }

    /// Records a saved file (see [`Index::append`] for a log that cannot be written).
    pub fn put(&mut self, entry: Entry) {
        let record = Record::Put(entry.clone());
        self.damaged.remove(&entry.summary.id);
        self.entries.insert(entry.summary.id.clone(), entry);
        self.append(&[record]);
    }

    /// Records deleted files (see [`Index::append`] for a log that cannot be written).
    pub fn delete(&mut self, ids: &[CheckpointId]) {
        for id in ids {
            self.entries.remove(id);
            self.damaged.remove(id);
        }
        let records: Vec<Record> = ids
            .iter()
            .map(|id| Record::Del { id: id.clone() })
            .collect();
        self.append(&records);
    }

    /// Whether the log holds many dead lines.
    pub fn wants_compaction(&self) -> bool {
        self.log
            .as_ref()
            .is_some_and(|l| l.lines > 2 * (self.entries.len() + self.damaged.len()) + 256)
    }

    /// Rewrites the log with exactly the current entries (after reading any lines appended by
    /// other writers), under an exclusive lock so that no append is lost.
    pub fn compact(&mut self) -> Result<()> {
        let Some(log) = &self.log else {
            return Ok(());
        };
        let lock = log.lock.try_clone().map_err(io(&log.path))?;
        lock.lock().map_err(io(&self.meta_dir))?;
        let result = self.refresh().and_then(|()| self.rewrite());
        let _ = lock.unlock();
        result
    }

    fn rewrite(&mut self) -> Result<()> {
        let Some(log) = &mut self.log else {
            return Ok(());
        };
        let mut entries: Vec<&Entry> = self.entries.values().collect();
        entries.sort_by(|a, b| CheckpointSummary::newest_first(&b.summary, &a.summary));
        let mut damaged: Vec<&Entry> = self.damaged.values().collect();
        damaged.sort_by(|a, b| CheckpointSummary::newest_first(&b.summary, &a.summary));
        let mut buf = Vec::new();
        let records = entries
            .into_iter()
            .map(|e| Record::Put(e.clone()))
            .chain(damaged.into_iter().map(|e| Record::Bad(e.clone())));
        for r in records {
            let _ = serde_json::to_writer(&mut buf, &r);
            buf.push(b'\n');
        }
        let tmp = self.meta_dir.join("tmp");
        write_atomic_in(
            &self.fs,
            &log.path,
            Some(&tmp),
            &buf,
            AtomicWriteOptions { durable: false },
        )?;
        log.file = Self::open_append(&self.fs, &log.path)?;
        log.identity = identity(&log.file.metadata().map_err(io(&log.path))?);
        log.offset = buf.len() as u64;
        log.lines = self.entries.len() + self.damaged.len();
        // Everything in memory is written, pending records included.
        log.pending.clear();
        Ok(())
    }
}

/// Cuts off the end of the log at `path` after its last whole line (not before `keep`, what
/// this process has read): the torn line a failed append left. Called under the exclusive lock.
fn cut_torn_tail(path: &Path, keep: u64) -> std::io::Result<()> {
    const WINDOW: u64 = 1 << 20;
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    let len = file.metadata()?.len();
    let from = len.saturating_sub(WINDOW).max(keep);
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(from))?;
    (&file).take(len - from).read_to_end(&mut tail)?;
    if tail.last().is_none_or(|&b| b == b'\n') {
        return Ok(());
    }
    let whole = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if whole == 0 && from > keep {
        return Ok(()); // a line longer than the window: leave it to a compaction
    }
    file.set_len(from + whole as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::format::{Checkpoint, CheckpointReason};
    use crate::id::ExecutionId;

    fn put_line(id: &str) -> Vec<u8> {
        serde_json::to_vec(&Record::Put(entry(id))).unwrap()
    }

    #[test]
    fn a_record_glued_to_a_torn_line_is_still_read() {
        let whole = put_line("ckpt_b");
        let mut glued = put_line("ckpt_a");
        glued.truncate(glued.len() / 2);
        glued.extend_from_slice(&whole);
        let mut snapshot = IndexSnapshot::default();
        apply_line(&mut snapshot.entries, &mut snapshot.damaged, &glued);
        let ids: Vec<&str> = snapshot.entries.keys().map(CheckpointId::as_str).collect();
        assert_eq!(ids, ["ckpt_b"]);
        apply_line(
            &mut snapshot.entries,
            &mut snapshot.damaged,
            &whole[..whole.len() - 3],
        );
        assert_eq!(snapshot.entries.len(), 1, "a torn line alone is skipped");
    }

    /// A record that could not be appended (the disk was full) is kept pending; when another
    /// process replaces the log meanwhile, the record still holds after reading the new log,
    /// whatever the new log holds: whole lines, or only the start of one.
    #[test]
    fn pending_records_outlive_a_replaced_log() {
        for new_log in [
            put_line("ckpt_z"),
            put_line("ckpt_z")[..30].to_vec(),
            Vec::new(),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let meta = dir.path().join(".caf");
            let fs = crate::store::TestFs::new();
            let mut index = Index::open(fs.clone(), &meta);
            fs.arm(1, crate::store::Fault::NoSpace, true);
            let c = Checkpoint::new(
                CheckpointId::new("ckpt_p").unwrap(),
                ExecutionId::new("exec_a").unwrap(),
                "agent",
                Timestamp::now(),
                CheckpointReason::Manual,
            );
            index.put(Entry {
                summary: CheckpointSummary::of(&c, 10),
                mtime_ns: 1,
                integrity: None,
                digest: None,
            });
            fs.disarm();
            // Another process compacts the log: a new file in its place.
            let log = meta.join("index.jsonl");
            let tmp = meta.join("index.new");
            let mut bytes = new_log.clone();
            if new_log.len() > 30 {
                bytes.push(b'\n');
            }
            std::fs::write(&tmp, &bytes).unwrap();
            std::fs::rename(&tmp, &log).unwrap();
            index.refresh().unwrap();
            assert!(
                index.entries.contains_key(&c.id),
                "the pending record is lost after a log of {} bytes",
                bytes.len()
            );
        }
    }

    #[test]
    fn a_torn_tail_is_cut_after_the_last_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.jsonl");
        let mut bytes = put_line("ckpt_a");
        bytes.push(b'\n');
        let whole = bytes.len() as u64;
        bytes.extend_from_slice(&put_line("ckpt_b")[..20]);
        std::fs::write(&path, &bytes).unwrap();
        cut_torn_tail(&path, 0).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
        cut_torn_tail(&path, 0).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole, "idempotent");
    }

    fn entry(id: &str) -> Entry {
        let c = Checkpoint::new(
            CheckpointId::new(id).unwrap(),
            ExecutionId::new("exec_a").unwrap(),
            "agent",
            Timestamp::now(),
            CheckpointReason::Manual,
        );
        Entry {
            summary: CheckpointSummary::of(&c, 10),
            mtime_ns: 1,
            integrity: None,
            digest: None,
        }
    }

    fn ids<F: Fs>(index: &Index<F>) -> Vec<&str> {
        let mut ids: Vec<&str> = index
            .entries
            .values()
            .map(|e| e.summary.id.as_str())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// A writer's own appends are not read back by its next refresh (they are in memory), so
    /// a process that saved many checkpoints does not parse its whole log again; what another
    /// writer appended in between still is, along with the appends that followed it.
    #[test]
    fn own_appends_are_not_read_back_but_others_are() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join(".caf");
        let mut a = Index::open(crate::store::RealFs, &meta);
        a.put(entry("ckpt_1"));
        a.put(entry("ckpt_2"));
        let log_len = std::fs::metadata(meta.join("index.jsonl")).unwrap().len();
        assert_eq!(
            a.log.as_ref().unwrap().offset,
            log_len,
            "own lines count as read"
        );
        assert_eq!(
            a.log.as_ref().unwrap().lines,
            2,
            "and count towards compaction"
        );

        let mut b = Index::open(crate::store::RealFs, &meta);
        assert_eq!(ids(&b), ["ckpt_1", "ckpt_2"]);
        b.put(entry("ckpt_3"));
        // `a` appends after `b`: it has not read `b`'s line, so it must not skip it.
        a.put(entry("ckpt_4"));
        assert_eq!(a.log.as_ref().unwrap().offset, log_len);
        a.refresh().unwrap();
        assert_eq!(ids(&a), ["ckpt_1", "ckpt_2", "ckpt_3", "ckpt_4"]);
        let log_len = std::fs::metadata(meta.join("index.jsonl")).unwrap().len();
        assert_eq!(a.log.as_ref().unwrap().offset, log_len);
        b.refresh().unwrap();
        assert_eq!(ids(&b), ["ckpt_1", "ckpt_2", "ckpt_3", "ckpt_4"]);
    }

    /// Lines that could not be appended (a full disk) wait, and go in with the next append,
    /// after lines of other writers read meanwhile: that append is read back, so that the index
    /// in memory says what the log says (here: the checkpoint another writer deleted after this
    /// one saved it is there, as the log has it).
    #[test]
    fn an_append_with_waiting_lines_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join(".caf");
        let fs = crate::store::TestFs::new();
        let mut a = Index::open(fs.clone(), &meta);
        fs.arm(1, crate::store::Fault::NoSpace, true);
        a.put(entry("ckpt_x"));
        assert!(fs.disarm().is_some(), "the append failed");
        let mut b = Index::open(crate::store::RealFs, &meta);
        b.delete(&[CheckpointId::new("ckpt_x").unwrap()]);
        a.refresh().unwrap();
        a.put(entry("ckpt_y"));
        a.refresh().unwrap();
        let on_disk = read_index(dir.path()).unwrap().unwrap();
        let mut logged: Vec<&str> = on_disk.entries.keys().map(CheckpointId::as_str).collect();
        logged.sort_unstable();
        assert_eq!(logged, ["ckpt_x", "ckpt_y"]);
        assert_eq!(ids(&a), logged);
    }

    /// Another process compacts the log after deleting a checkpoint this writer has in memory
    /// (the `del` line is gone with the compaction); this writer's next append goes into the
    /// new log, and its next refresh forgets the deleted checkpoint.
    #[test]
    fn an_append_into_a_log_compacted_meanwhile_forgets_what_the_compaction_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join(".caf");
        let mut a = Index::open(crate::store::RealFs, &meta);
        a.put(entry("ckpt_x"));
        a.put(entry("ckpt_y"));
        let mut b = Index::open(crate::store::RealFs, &meta);
        b.delete(&[CheckpointId::new("ckpt_x").unwrap()]);
        b.compact().unwrap();
        a.put(entry("ckpt_z"));
        a.refresh().unwrap();
        assert_eq!(ids(&a), ["ckpt_y", "ckpt_z"]);
        a.put(entry("ckpt_w"));
        a.refresh().unwrap();
        assert_eq!(ids(&a), ["ckpt_w", "ckpt_y", "ckpt_z"]);
        b.refresh().unwrap();
        assert_eq!(ids(&b), ["ckpt_w", "ckpt_y", "ckpt_z"]);
    }
}
