//! The journal of a hybrid store in the `journal` durability mode: each save's one flush.
//!
//! A **slot** is a file under `DIR/.caf/journal/` that one store at a time holds, locked. Its
//! first 4 KiB are a header (a generation number, drawn anew each time the slot is emptied);
//! then come **records**, one per save: the save's encoded bytes (the checksum not yet
//! computed, see [`caf_core::format::Unsealed`]) behind a 32-byte header holding their length,
//! the generation, the record's number and a CRC-32 of all that. A slot is written in full
//! with zeros when it is made, so that appending a record changes no metadata and its
//! `fdatasync` writes the record alone, as SQLite's reused write-ahead log does.
//!
//! Reading a slot back keeps the records of its generation numbered 0, 1, 2… up to the first
//! one that is missing, torn or of an older generation: exactly the saves appended since the
//! slot was last emptied, an append cut off by a power loss excepted.

use caf_core::store::{Fs, RealFs};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// How many bytes a slot holds (header included). A save whose record does not fit in an
/// emptied slot is saved without the journal.
pub(crate) const SIZE: u64 = 16 << 20;
/// Where records start.
const HEADER: u64 = 4096;
const MAGIC: &[u8; 8] = b"cafjrnl1";
const RECORD_MAGIC: &[u8; 4] = b"cafr";
/// A record's header: magic, length, generation, number, CRC-32, padding.
const RECORD: u64 = 32;

/// The journal of the store whose files are in `root`.
pub(crate) fn dir(root: &Path) -> PathBuf {
    root.join(".caf").join("journal")
}

/// A slot this store holds (its lock is released when it is dropped).
#[derive(Debug)]
pub(crate) struct Slot {
    file: File,
    path: PathBuf,
    generation: u64,
    /// The number of the next record.
    next: u64,
    /// Where the next record goes.
    at: u64,
    /// Emptying it failed: the header on disk may state another generation than the records
    /// would carry, so nothing is appended until it is emptied.
    broken: bool,
}

/// The slots a store took when it opened.
pub(crate) struct Taken {
    /// The slot its saves go to (when one was to be made).
    pub(crate) ours: Option<Slot>,
    /// The slots of stores that are gone (other than `ours`), to be emptied once their
    /// records are applied.
    pub(crate) others: Vec<Slot>,
    /// The records every taken slot held (`ours` included), slot by slot, in order.
    pub(crate) records: Vec<Held>,
}

/// What one slot held when it was taken.
#[derive(Debug)]
pub(crate) struct Held {
    /// The slot's file name (`slot-N`).
    pub(crate) name: String,
    pub(crate) generation: u64,
    /// Each record with its number, in order.
    pub(crate) records: Vec<(u64, Vec<u8>)>,
}

impl Slot {
    /// Locks every slot in `dir` that no live store holds, reading their records; the first
    /// one becomes this store's, or a new slot is made when every slot is held.
    pub(crate) fn take_all(dir: &Path) -> io::Result<Taken> {
        std::fs::create_dir_all(dir)?;
        Self::take_left(dir, true)
    }

    /// Locks every slot in `dir` that no live store holds, reading their records (none when
    /// there is no journal). With `make`, the first becomes `ours` (a new one when every slot
    /// is held); otherwise all are `others`.
    pub(crate) fn take_left(dir: &Path, make: bool) -> io::Result<Taken> {
        if !make && !dir.is_dir() {
            return Ok(Taken {
                ours: None,
                others: Vec::new(),
                records: Vec::new(),
            });
        }
        let mut numbers: Vec<u64> = std::fs::read_dir(dir)?
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("slot-")?
                    .parse()
                    .ok()
            })
            .collect();
        numbers.sort_unstable();
        let mut taken: Vec<Slot> = Vec::new();
        let mut records = Vec::new();
        for n in &numbers {
            if let Some(mut slot) = Self::lock(dir, *n, false)? {
                let held = slot.read()?;
                if !held.is_empty() {
                    records.push(Held {
                        name: slot.name(),
                        generation: slot.generation,
                        records: held
                            .into_iter()
                            .enumerate()
                            .map(|(n, r)| (n as u64, r))
                            .collect(),
                    });
                }
                taken.push(slot);
            }
        }
        if make && taken.is_empty() {
            let mut n = numbers.last().map_or(0, |n| n + 1);
            loop {
                if let Some(slot) = Self::lock(dir, n, true)? {
                    taken.push(slot);
                    break;
                }
                n += 1;
            }
        }
        let ours = make.then(|| taken.remove(0));
        Ok(Taken {
            ours,
            others: taken,
            records,
        })
    }

    /// The slot in `file`, before its header is read.
    fn of(file: File, path: PathBuf) -> Self {
        Self {
            file,
            path,
            generation: 0,
            next: 0,
            at: HEADER,
            broken: false,
        }
    }

    /// Whether a slot in `dir` that no live store holds has records (saves to apply); creates
    /// nothing.
    pub(crate) fn any_left(dir: &Path) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.filter_map(|e| e.ok()).any(|e| {
            let is_slot = e
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("slot-"));
            let Ok(file) = File::open(e.path()) else {
                return false;
            };
            if !is_slot || file.try_lock_shared().is_err() {
                return false;
            }
            let mut slot = Self::of(file, e.path());
            slot.generation_read().is_some() && slot.read_record().ok().flatten().is_some()
        })
    }

    /// The generation the header states, if it is whole.
    fn generation_read(&mut self) -> Option<u64> {
        let mut header = [0u8; 20];
        self.file.seek(SeekFrom::Start(0)).ok()?;
        self.file.read_exact(&mut header).ok()?;
        let crc = u32::from_le_bytes(header[16..].try_into().ok()?);
        if &header[..8] != MAGIC || crc32fast::hash(&header[..16]) != crc {
            return None;
        }
        self.generation = u64::from_le_bytes(header[8..16].try_into().ok()?);
        Some(self.generation)
    }

    /// Slot `n` of `dir`, locked, or `None` when another store holds it (or, with `create`,
    /// when another store made it first).
    fn lock(dir: &Path, n: u64, create: bool) -> io::Result<Option<Self>> {
        let path = dir.join(format!("slot-{n}"));
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        if create {
            options.create_new(true);
        }
        let file = match options.open(&path) {
            Ok(f) => f,
            Err(e) if create && e.kind() == io::ErrorKind::AlreadyExists => return Ok(None),
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let mut slot = Self::of(file, path);
        if slot.file.metadata()?.len() < SIZE {
            // New, or its maker stopped before it was written in full: nothing in it counts.
            if let Err(e) = slot.fill() {
                // No room for it (a full disk): it takes none.
                let _ = std::fs::remove_file(&slot.path);
                return Err(e);
            }
            RealFs.sync_dir(dir)?;
            if let Some(parent) = dir.parent() {
                RealFs.sync_dir(parent)?;
            }
        }
        Ok(Some(slot))
    }

    /// Writes the slot in full with zeros and an empty generation, and flushes it.
    fn fill(&mut self) -> io::Result<()> {
        let zeros = vec![0u8; 1 << 20];
        self.file.seek(SeekFrom::Start(0))?;
        let mut written = 0;
        while written < SIZE {
            let n = (SIZE - written).min(zeros.len() as u64) as usize;
            self.file.write_all(&zeros[..n])?;
            written += n as u64;
        }
        self.empty_header()?;
        self.file.sync_all()
    }

    /// Draws a new generation and writes it in the header (not flushed).
    fn empty_header(&mut self) -> io::Result<()> {
        self.generation = fastrand::u64(1..);
        let mut header = [0u8; 20];
        header[..8].copy_from_slice(MAGIC);
        header[8..16].copy_from_slice(&self.generation.to_le_bytes());
        let crc = crc32fast::hash(&header[..16]);
        header[16..].copy_from_slice(&crc.to_le_bytes());
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(&header)?;
        self.next = 0;
        self.at = HEADER;
        Ok(())
    }

    /// Empties the slot: its records no longer count once this returns. Only for records
    /// whose saves are on disk elsewhere.
    pub(crate) fn empty(&mut self) -> io::Result<()> {
        self.broken = true;
        self.empty_header()?;
        self.file.sync_data()?;
        self.broken = false;
        Ok(())
    }

    /// The records of the slot's generation, in order; the slot then appends after them.
    pub(crate) fn read(&mut self) -> io::Result<Vec<Vec<u8>>> {
        self.next = 0;
        self.at = HEADER;
        if self.generation_read().is_none() {
            // Never written in full, or cut off while being emptied: nothing in it counts.
            self.empty()?;
            return Ok(Vec::new());
        }
        let mut records = Vec::new();
        while let Some(record) = self.read_record()? {
            records.push(record);
        }
        Ok(records)
    }

    /// The record at the end of those read so far, if it is whole and the next one.
    fn read_record(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.at + RECORD > SIZE {
            return Ok(None);
        }
        let mut head = [0u8; RECORD as usize];
        self.file.seek(SeekFrom::Start(self.at))?;
        self.file.read_exact(&mut head)?;
        let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap_or_default());
        let len = u64::from(u32::from_le_bytes(
            head[4..8].try_into().unwrap_or_default(),
        ));
        let crc = u32::from_le_bytes(head[24..28].try_into().unwrap_or_default());
        if &head[..4] != RECORD_MAGIC
            || word(8) != self.generation
            || word(16) != self.next
            || self.at + RECORD + len > SIZE
        {
            return Ok(None);
        }
        let mut payload = vec![0u8; len as usize];
        self.file.read_exact(&mut payload)?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&head[4..24]);
        hasher.update(&payload);
        if hasher.finalize() != crc {
            return Ok(None);
        }
        self.advance(len);
        Ok(Some(payload))
    }

    fn advance(&mut self, len: u64) {
        self.at = (self.at + RECORD + len).next_multiple_of(8);
        self.next += 1;
    }

    /// Appends `payload` as the next record and flushes it: its number, or `None` (nothing
    /// written) when the slot has no room for it.
    pub(crate) fn append(&mut self, payload: &[u8]) -> io::Result<Option<u64>> {
        if self.broken {
            // Its emptying failed; what it held was on disk elsewhere then, and nothing was
            // appended since.
            self.empty()?;
        }
        let len = payload.len() as u64;
        if self.at + RECORD + len > SIZE {
            return Ok(None);
        }
        let mut head = [0u8; RECORD as usize];
        head[..4].copy_from_slice(RECORD_MAGIC);
        head[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        head[8..16].copy_from_slice(&self.generation.to_le_bytes());
        head[16..24].copy_from_slice(&self.next.to_le_bytes());
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&head[4..24]);
        hasher.update(payload);
        head[24..28].copy_from_slice(&hasher.finalize().to_le_bytes());
        self.file.seek(SeekFrom::Start(self.at))?;
        self.file.write_all(&head)?;
        self.file.write_all(payload)?;
        self.file.sync_data()?;
        let number = self.next;
        self.advance(len);
        Ok(Some(number))
    }

    /// The slot's generation (drawn anew each time it is emptied).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The slot's file name (`slot-N`).
    pub(crate) fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Whether records were appended since the slot was last emptied (or its emptying
    /// failed, so that the file may still state records).
    pub(crate) fn holds_records(&self) -> bool {
        self.next > 0 || self.broken
    }

    /// The slot's file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u8) -> Vec<u8> {
        vec![n; 1000 + usize::from(n)]
    }

    /// Every record taken, in order.
    fn records(t: &Taken) -> Vec<Vec<u8>> {
        t.records
            .iter()
            .flat_map(|h| h.records.iter().map(|(_, r)| r.clone()))
            .collect()
    }

    #[test]
    fn records_come_back_in_order_until_the_slot_is_emptied() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut t = Slot::take_all(dir.path()).unwrap();
            assert!(t.records.is_empty() && t.others.is_empty());
            for n in 0..3 {
                assert!(t
                    .ours
                    .as_mut()
                    .unwrap()
                    .append(&record(n))
                    .unwrap()
                    .is_some());
            }
        }
        let mut t = Slot::take_all(dir.path()).unwrap();
        assert_eq!(records(&t), vec![record(0), record(1), record(2)]);
        // Appends go after the records read back, which still count.
        assert_eq!(
            t.ours.as_mut().unwrap().append(&record(3)).unwrap(),
            Some(3)
        );
        drop(t);
        let mut t = Slot::take_all(dir.path()).unwrap();
        assert_eq!(records(&t).len(), 4);
        t.ours.as_mut().unwrap().empty().unwrap();
        assert_eq!(
            t.ours.as_mut().unwrap().append(&record(9)).unwrap(),
            Some(0)
        );
        drop(t);
        // After emptying, the old records (further on in the file) no longer count.
        let t = Slot::take_all(dir.path()).unwrap();
        assert_eq!(records(&t), vec![record(9)]);
    }

    #[test]
    fn a_torn_record_ends_the_slot() {
        let dir = tempfile::tempdir().unwrap();
        let path = {
            let mut t = Slot::take_all(dir.path()).unwrap();
            for n in 0..3 {
                t.ours.as_mut().unwrap().append(&record(n)).unwrap();
            }
            t.ours.as_mut().unwrap().path().to_path_buf()
        };
        // Tear the middle record's payload, as a power loss during its write can.
        let second = HEADER + (RECORD + 1000).next_multiple_of(8) + RECORD + 500;
        let mut f = OpenOptions::new().write(true).open(&path).unwrap();
        f.seek(SeekFrom::Start(second)).unwrap();
        f.write_all(&[0u8; 8]).unwrap();
        drop(f);
        let t = Slot::take_all(dir.path()).unwrap();
        assert_eq!(records(&t), vec![record(0)]);
    }

    #[test]
    fn a_held_slot_is_not_taken_and_a_full_one_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = Slot::take_all(dir.path()).unwrap();
        first.ours.as_mut().unwrap().append(&record(1)).unwrap();
        let second = Slot::take_all(dir.path()).unwrap();
        assert_ne!(
            first.ours.as_ref().unwrap().path(),
            second.ours.as_ref().unwrap().path()
        );
        assert!(
            second.records.is_empty(),
            "a live store's records are its own"
        );
        let big = vec![7u8; (SIZE - HEADER - RECORD) as usize];
        let mut ours = second.ours.unwrap();
        assert!(
            ours.append(&big).unwrap().is_some(),
            "a record that fills the slot fits"
        );
        assert!(
            ours.append(&record(0)).unwrap().is_none(),
            "then nothing more does"
        );
        drop((first, ours));
        // Both gone: the next store takes both, with their records.
        let t = Slot::take_all(dir.path()).unwrap();
        assert_eq!(t.others.len(), 1);
        assert!(records(&t).contains(&record(1)));
        drop(t);
        // Without making one, every slot left is taken, none is ours.
        let left = Slot::take_left(dir.path(), false).unwrap();
        assert!(left.ours.is_none());
        assert_eq!(left.others.len(), 2);
    }
}
