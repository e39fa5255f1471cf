//! The journal of a hybrid store in the `journal` durability mode: each save's one flush.
//!
//! A **slot** is a file under `DIR/.caf/journal/` that one store at a time holds, locked. Its
//! first 4 KiB are a header (a generation number, drawn anew each time the slot is emptied);
//! then come **records**, one per save, behind a 32-byte header holding their length, the
//! generation, the record's number and a CRC-32 of all that. A record is of one of three
//! [`Kind`]s: a save's encoded bytes (the checksum not yet computed, see
//! [`caf_core::format::Unsealed`]); a **revision**, the number of the execution's record before
//! and what changed since (its own format and meaning: [`crate::journal_revision`]); or a text
//! **delta**, the number of an earlier record and how the text differs from its text
//! ([`crate::journal_delta`]: what the journal wrote before revisions, still read). A slot is
//! written in full with zeros when it is made, so that appending a record changes no metadata
//! and its `fdatasync` writes the record alone, as SQLite's reused write-ahead log does. Where
//! the system allows, the store's own slot writes its records straight to the disk instead
//! ([`Slot::write_directly`], crate `caf-uring`), durable in one `O_DIRECT` write with
//! `RWF_DSYNC`.
//!
//! A delta's or a revision's CRC-32 covers its magic as well (a whole record's, as before,
//! does not).
//!
//! Reading a slot back keeps the records of its generation numbered 0, 1, 2… up to the first
//! one that is missing, torn or of an older generation: exactly the saves appended since the
//! slot was last emptied, an append cut off by a power loss excepted. Each delta is rebuilt
//! against the text of the record it names, which comes before it; a delta that does not
//! rebuild exactly its text (its own CRC-32) makes reading the slot fail, and nothing in it is
//! applied or emptied. Revisions are read back as they are, for the store to apply. The texts
//! and revisions a slot's records stand for add up to at most four times its size: reading one
//! back holds no more than that.

use caf_core::store::{write_all, write_zeros, Fs};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How many bytes a slot holds by default (header included). A save whose record does not fit
/// in an emptied slot is saved without the journal.
pub const DEFAULT_SLOT_BYTES: u64 = 16 << 20;
/// The least a slot holds: its header and a record.
pub(crate) const MIN_SLOT_BYTES: u64 = 2 * HEADER;
/// The most a slot holds (a larger file is read up to this).
pub(crate) const MAX_SLOT_BYTES: u64 = 1 << 30;

/// The largest record: what a checkpoint file may weigh by default (a larger save is saved
/// without the journal; a larger record read back ends the slot).
fn max_record() -> u64 {
    caf_core::format::Limits::default().max_bytes
}
/// Where records start.
const HEADER: u64 = 4096;
const MAGIC: &[u8; 8] = b"cafjrnl1";
const RECORD_MAGIC: &[u8; 4] = b"cafr";
/// The magic of a record that is a text delta against an earlier one.
const DELTA_MAGIC: &[u8; 4] = b"cafd";
/// The magic of a record that is a revision of an earlier one.
const REVISION_MAGIC: &[u8; 4] = b"cafv";

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A save's text.
    Text,
    /// The number of an earlier record (u64), then how this text differs from its text.
    Delta,
    /// A revision of an earlier record ([`crate::journal_revision`]).
    Revision,
}

impl Kind {
    fn magic(self) -> &'static [u8; 4] {
        match self {
            Kind::Text => RECORD_MAGIC,
            Kind::Delta => DELTA_MAGIC,
            Kind::Revision => REVISION_MAGIC,
        }
    }

    fn of(magic: &[u8]) -> Option<Self> {
        [Kind::Text, Kind::Delta, Kind::Revision]
            .into_iter()
            .find(|k| k.magic() == magic)
    }

    /// Where the record's CRC-32 starts in its header: a delta's and a revision's cover their
    /// magic too, so that a record whose magic is torn (an older record's left on disk, where
    /// a header straddles two pages) is never read as another kind; a text's does not (as
    /// before deltas: the slots written then still read).
    fn covered(self) -> usize {
        match self {
            Kind::Text => 4,
            Kind::Delta | Kind::Revision => 0,
        }
    }
}

/// A record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    /// A save's text (a delta's rebuilt).
    Text(Vec<u8>),
    /// A revision, as written ([`crate::journal_revision`]).
    Revision(Vec<u8>),
}

/// The texts (deltas rebuilt) and revisions of a slot's records read back add up to at most
/// this many times its size (deltas, written before revisions, stood for far more text than
/// their bytes).
const TEXT_PER_SLOT_BYTE: u64 = 4;
/// A record's header: magic, length, generation, number, CRC-32, padding.
const RECORD: u64 = 32;

/// The journal of the store whose files are in `root`.
pub(crate) fn dir(root: &Path) -> PathBuf {
    root.join(".caf").join("journal")
}

/// A slot this store holds (its lock is released when it is dropped). Its writes, flushes and
/// the making of its file go through `F` (reading it changes nothing on disk).
#[derive(Debug)]
pub(crate) struct Slot<F: Fs> {
    fs: F,
    file: File,
    path: PathBuf,
    /// Its size: records end before it.
    size: u64,
    generation: u64,
    /// The number of the next record.
    next: u64,
    /// Where the next record goes.
    at: u64,
    /// Emptying it failed: the header on disk may state another generation than the records
    /// would carry, so nothing is appended until it is emptied.
    broken: bool,
    /// Counts the times its records were dropped (emptied, or read anew): a record number is
    /// that of one record only within an epoch.
    epoch: u64,
    /// Where the last record appended starts, while it may be withdrawn.
    last: Option<u64>,
    /// Writes records straight to the disk, the caller's work done during the flush (see
    /// [`Slot::write_directly`]).
    direct: Option<caf_uring::DirectAppender>,
    /// Whether the last append's caller waited for the disk after its own work (see
    /// [`Slot::append_then`]).
    waited: bool,
}

/// The slots a store took when it opened.
pub(crate) struct Taken<F: Fs> {
    /// The slot its saves go to (when one was to be made).
    pub(crate) ours: Option<Slot<F>>,
    /// The slots of stores that are gone (other than `ours`), to be emptied once their
    /// records are applied.
    pub(crate) others: Vec<Slot<F>>,
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
    pub(crate) records: Vec<(u64, Record)>,
}

impl<F: Fs> Slot<F> {
    /// Locks every slot in `dir` that no live store holds, reading their records; the first
    /// one becomes this store's, or a new slot of `size` bytes is made when every slot is held.
    /// This store's slot, if smaller, grows to `size` (its records kept).
    pub(crate) fn take_all(fs: &F, dir: &Path, size: u64) -> io::Result<Taken<F>> {
        fs.create_dir_all(dir)?;
        Self::take_left(fs, dir, Some(size))
    }

    /// Locks every slot in `dir` that no live store holds, reading their records (none when
    /// there is no journal). With `make` (a size), the first becomes `ours` (a new one when
    /// every slot is held); otherwise all are `others`.
    pub(crate) fn take_left(fs: &F, dir: &Path, make: Option<u64>) -> io::Result<Taken<F>> {
        if make.is_none() && !dir.is_dir() {
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
        let mut taken: Vec<Self> = Vec::new();
        let mut records = Vec::new();
        for n in &numbers {
            if let Some(mut slot) = Self::lock(fs, dir, *n, None)? {
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
        if make.is_some() && taken.is_empty() {
            let mut n = numbers.last().map_or(0, |n| n + 1);
            loop {
                if let Some(slot) = Self::lock(fs, dir, n, make)? {
                    taken.push(slot);
                    break;
                }
                n += 1;
            }
        }
        let ours = match make {
            Some(size) => {
                let mut ours = taken.remove(0);
                ours.grow(size, false)?;
                Some(ours)
            }
            None => None,
        };
        Ok(Taken {
            ours,
            others: taken,
            records,
        })
    }

    /// The slot in `file`, of `size` bytes, before its header is read.
    fn of(fs: &F, file: File, path: PathBuf, size: u64) -> Self {
        Self {
            fs: fs.clone(),
            file,
            path,
            size,
            generation: 0,
            next: 0,
            at: HEADER,
            broken: false,
            epoch: 0,
            last: None,
            direct: None,
            waited: true,
        }
    }

    /// Has later appends write their records straight to the disk (`O_DIRECT`, `RWF_DSYNC`,
    /// through io_uring: [`caf_uring`]), where the file system and the kernel allow it and `fs`
    /// is the real one: the flush then needs no thread of its own, and the caller works while
    /// the disk writes (see [`Slot::append_then`]). Whether they will.
    pub(crate) fn write_directly(&mut self) -> bool {
        if self.direct.is_none() && self.fs.direct_appends() {
            self.direct = caf_uring::DirectAppender::open(&self.path).ok();
        }
        self.direct.is_some()
    }

    /// Whether the next append runs its `meanwhile` while the disk writes and flushes the
    /// record (written directly), rather than just before the flush.
    pub(crate) fn overlaps(&self) -> bool {
        self.direct.is_some()
    }

    /// Whether the last append's caller waited for the disk after `meanwhile` (always, unless
    /// written directly and `meanwhile` outlasted the disk): whether its time was the disk's.
    pub(crate) fn waited_for_the_disk(&self) -> bool {
        self.waited
    }

    /// The slot's file is written by other means than the direct appender: it reads back what
    /// it needs next time.
    fn written_aside(&mut self) {
        if let Some(direct) = &mut self.direct {
            direct.forget();
        }
    }

    /// Writes `bytes` at `at` through the file system, not flushed ([`Slot::written_aside`]).
    fn write_aside(&mut self, at: u64, bytes: &[u8]) -> io::Result<()> {
        self.written_aside();
        self.file.seek(SeekFrom::Start(at))?;
        write_all(&self.fs, &self.file, &self.path, bytes)
    }

    /// Whether a slot in `dir` that no live store holds has records (saves to apply); creates
    /// nothing.
    pub(crate) fn any_left(fs: &F, dir: &Path) -> bool {
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
            let len = file.metadata().map_or(0, |m| m.len());
            let mut slot = Self::of(fs, file, e.path(), len);
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

    /// Slot `n` of `dir`, locked, or `None` when another store holds it, or removed it
    /// meanwhile. With `create` (a size), a new slot of that size, or `None` when another store
    /// made it first.
    fn lock(fs: &F, dir: &Path, n: u64, create: Option<u64>) -> io::Result<Option<Self>> {
        let path = dir.join(format!("slot-{n}"));
        let file = match fs.open_in_place(&path, create.is_some()) {
            Ok(f) => f,
            Err(e) if create.is_some() && e.kind() == io::ErrorKind::AlreadyExists => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        if !names(&path, &file) {
            // Removed (a store that could not write it out) while this one waited for it.
            return Ok(None);
        }
        let len = file.metadata()?.len();
        let mut slot = Self::of(fs, file, path, len.min(MAX_SLOT_BYTES));
        if let Some(size) = create {
            slot.grow(size, true)?;
            fs.sync_dir(dir)?;
            if let Some(parent) = dir.parent() {
                fs.sync_dir(parent)?;
            }
        }
        Ok(Some(slot))
    }

    /// Writes zeros from the slot's end up to `size` bytes (within the limits), its records
    /// kept; then an empty generation if its header is not whole (made anew, or its maker
    /// stopped before: nothing in it counts); and flushes it. If that fails, a slot this store
    /// `made` is removed (it takes none: a full disk) and the error returned; another one keeps
    /// its size, if its header is whole.
    fn grow(&mut self, size: u64, made: bool) -> io::Result<()> {
        // Whole pages: a direct append never reaches past the file's end.
        let size = size
            .clamp(MIN_SLOT_BYTES, MAX_SLOT_BYTES)
            .next_multiple_of(HEADER);
        let whole = self.size >= MIN_SLOT_BYTES && self.generation_read().is_some();
        if whole && self.size >= size {
            return Ok(());
        }
        let grown = self.write_zeros(size).and_then(|()| {
            if !whole {
                self.empty_header()?;
            }
            self.fs.sync_data(&self.file, &self.path)
        });
        match grown {
            Ok(()) => {
                self.size = size;
                Ok(())
            }
            Err(e) if made => {
                let _ = self.fs.remove_file(&self.path);
                Err(e)
            }
            Err(_) if whole => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Writes zeros from the file's end up to `size` bytes, a page at a time
    /// ([`caf_core::store::write_zeros`]).
    fn write_zeros(&mut self, size: u64) -> io::Result<()> {
        self.written_aside();
        let at = self.file.seek(SeekFrom::End(0))?;
        write_zeros(&self.fs, &self.file, &self.path, at, size)
    }

    /// Draws a new generation and writes it in the header (not flushed).
    fn empty_header(&mut self) -> io::Result<()> {
        self.generation = fastrand::u64(1..);
        let mut header = [0u8; 20];
        header[..8].copy_from_slice(MAGIC);
        header[8..16].copy_from_slice(&self.generation.to_le_bytes());
        let crc = crc32fast::hash(&header[..16]);
        header[16..].copy_from_slice(&crc.to_le_bytes());
        self.write_aside(0, &header)?;
        self.next = 0;
        self.last = None;
        self.at = HEADER;
        self.epoch += 1;
        Ok(())
    }

    /// Empties the slot: its records no longer count once this returns. Only for records
    /// whose saves are on disk elsewhere.
    pub(crate) fn empty(&mut self) -> io::Result<()> {
        // Its record numbers no longer name what they named, even if emptying fails (the slot
        // is then emptied before the next append).
        self.epoch += 1;
        self.broken = true;
        self.empty_header()?;
        self.fs.sync_data(&self.file, &self.path)?;
        self.broken = false;
        Ok(())
    }

    /// The slot's generation's records, in order, deltas rebuilt; the slot then appends after
    /// them. An error if a delta does not rebuild its text.
    pub(crate) fn read(&mut self) -> io::Result<Vec<Record>> {
        self.next = 0;
        self.last = None;
        self.at = HEADER;
        self.epoch += 1;
        if self.generation_read().is_none() {
            // Never written in full, or cut off while being emptied: nothing in it counts.
            self.empty()?;
            return Ok(Vec::new());
        }
        let mut records: Vec<Record> = Vec::new();
        // The bytes of text and revisions they stand for.
        let mut texts = 0;
        while let Some((kind, payload)) = self.read_record()? {
            let number = records.len();
            let record = match kind {
                Kind::Text => Record::Text(payload),
                Kind::Revision => Record::Revision(payload),
                Kind::Delta => {
                    let bad = |why: String| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("journal record {number} cannot be rebuilt: {why}"),
                        )
                    };
                    let (head, ops) = payload
                        .split_at_checked(8)
                        .ok_or_else(|| bad("cut short".into()))?;
                    let base = u64::from_le_bytes(head.try_into().unwrap_or_default());
                    let base = match usize::try_from(base).ok().and_then(|b| records.get(b)) {
                        Some(Record::Text(text)) => text,
                        _ => {
                            return Err(bad(format!(
                                "its base, record {base}, is not a text before it"
                            )))
                        }
                    };
                    Record::Text(
                        crate::journal_delta::apply(base, ops, max_record())
                            .map_err(|e| bad(e.to_string()))?,
                    )
                }
            };
            texts += match &record {
                Record::Text(t) | Record::Revision(t) => t.len() as u64,
            };
            if texts > self.size.saturating_mul(TEXT_PER_SLOT_BYTE) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "journal record {number}: the records' texts exceed {TEXT_PER_SLOT_BYTE} \
                         times the slot's size"
                    ),
                ));
            }
            records.push(record);
        }
        Ok(records)
    }

    /// The record at the end of those read so far, if it is whole and the next one: its kind
    /// and payload.
    fn read_record(&mut self) -> io::Result<Option<(Kind, Vec<u8>)>> {
        if self.at + RECORD > self.size {
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
        let Some(kind) = Kind::of(&head[..4]) else {
            return Ok(None);
        };
        if word(8) != self.generation
            || word(16) != self.next
            || len > max_record()
            || self.at + RECORD + len > self.size
        {
            return Ok(None);
        }
        let mut payload = vec![0u8; len as usize];
        self.file.read_exact(&mut payload)?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&head[kind.covered()..24]);
        hasher.update(&payload);
        if hasher.finalize() != crc {
            return Ok(None);
        }
        self.advance(len);
        Ok(Some((kind, payload)))
    }

    fn advance(&mut self, len: u64) {
        self.at = (self.at + RECORD + len).next_multiple_of(8);
        self.next += 1;
    }

    /// Appends `text` as the next record and flushes it: its number, or `None` (nothing
    /// written) when the slot has no room for it.
    #[cfg(test)]
    pub(crate) fn append(&mut self, text: &[u8]) -> io::Result<Option<u64>> {
        self.append_then(Kind::Text, text, || {})
    }

    /// Appends `payload`, a record of `kind`, as the next record and flushes it: its number,
    /// or `None` (nothing written) when the slot has no room for it.
    ///
    /// `meanwhile` runs once the record is written, before its flush: to hand work to another
    /// thread, which then runs while the disk flushes. It is not run when there is no room
    /// (nothing written) or the write fails. A slot that [`Slot::overlaps`] runs it while the
    /// disk writes and flushes the record, then waits for the disk: the caller may do the work
    /// itself. Should a direct write fail, the record is written again as any other (and so
    /// are the slot's later records), `meanwhile` not run twice.
    pub(crate) fn append_then(
        &mut self,
        kind: Kind,
        payload: &[u8],
        meanwhile: impl FnOnce(),
    ) -> io::Result<Option<u64>> {
        if self.broken {
            // Its emptying failed; what it held was on disk elsewhere then, and nothing was
            // appended since.
            self.empty()?;
        }
        let len = payload.len() as u64;
        if len > max_record() || self.at + RECORD + len > self.size {
            return Ok(None);
        }
        let head = self.head(kind, payload);
        let mut meanwhile = Some(meanwhile);
        let mut run = || {
            if let Some(m) = meanwhile.take() {
                m();
            }
        };
        if let Some(direct) = &mut self.direct {
            match direct.append_then(self.at, &[&head, payload], &mut run) {
                Ok(waited) => {
                    self.waited = waited == caf_uring::Waited::ForTheDisk;
                    return Ok(Some(self.appended(len)));
                }
                // A write that may still land: nothing goes over its pages another way.
                Err(e) if direct.is_stuck() => return Err(e),
                // Written as any other record, below; so are the next ones.
                Err(_) => self.direct = None,
            }
        }
        self.waited = true;
        self.file.seek(SeekFrom::Start(self.at))?;
        if payload.len() <= 64 << 10 {
            // Small: in one write.
            let mut record = Vec::with_capacity(RECORD as usize + payload.len());
            record.extend_from_slice(&head);
            record.extend_from_slice(payload);
            write_all(&self.fs, &self.file, &self.path, &record)?;
        } else {
            write_all(&self.fs, &self.file, &self.path, &head)?;
            write_all(&self.fs, &self.file, &self.path, payload)?;
        }
        run();
        self.fs.sync_data(&self.file, &self.path)?;
        Ok(Some(self.appended(len)))
    }

    /// Counts the record of `len` bytes just appended: its number.
    fn appended(&mut self, len: u64) -> u64 {
        let number = self.next;
        self.last = Some(self.at);
        self.advance(len);
        number
    }

    /// Withdraws the last record appended, `number` (an error if another was appended since):
    /// its header is overwritten with zeros and flushed, so that the slot ends before it, as if
    /// it had never been appended (for a save that failed once it was journaled). The next
    /// record takes its number and place even if that fails, so that no later record ever
    /// lies behind a header zeroed.
    pub(crate) fn withdraw_last(&mut self, number: u64) -> io::Result<()> {
        let at = match self.last {
            Some(at) if number + 1 == self.next => at,
            _ => {
                return Err(io::Error::other(format!(
                    "journal record {number} is not the last appended: not withdrawn"
                )))
            }
        };
        self.at = at;
        self.next = number;
        self.last = None;
        self.write_aside(at, &[0u8; RECORD as usize])?;
        self.fs.sync_data(&self.file, &self.path)
    }

    /// The header of the next record, of `kind`, holding `payload`.
    fn head(&self, kind: Kind, payload: &[u8]) -> [u8; RECORD as usize] {
        let mut head = [0u8; RECORD as usize];
        head[..4].copy_from_slice(kind.magic());
        head[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        head[8..16].copy_from_slice(&self.generation.to_le_bytes());
        head[16..24].copy_from_slice(&self.next.to_le_bytes());
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&head[kind.covered()..24]);
        hasher.update(payload);
        head[24..28].copy_from_slice(&hasher.finalize().to_le_bytes());
        head
    }

    /// How many times its records were dropped: a record number names one record only within
    /// an epoch.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
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

/// Whether `path` still names `file` (not removed, nor replaced, since it was opened).
#[cfg(unix)]
fn names(path: &Path, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn names(path: &Path, _file: &File) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use caf_core::store::RealFs;
    use std::fs::OpenOptions;
    use std::io::Write;

    /// The slots of `dir`, as a store opening with slots of the default size takes them.
    fn take(dir: &Path) -> Taken<RealFs> {
        Slot::take_all(&RealFs, dir, DEFAULT_SLOT_BYTES).unwrap()
    }

    fn record(n: u8) -> Vec<u8> {
        vec![n; 1000 + usize::from(n)]
    }

    /// A slot asked for a size that is not whole pages has whole pages: records near its end
    /// are still written directly (within the file, at page granularity), and read back.
    #[test]
    fn a_slot_is_whole_pages_and_its_last_page_takes_direct_appends() {
        let dir = tempfile::tempdir().unwrap();
        let mut taken = Slot::take_all(&RealFs, dir.path(), 3 * HEADER + 100).unwrap();
        let slot = taken.ours.as_mut().unwrap();
        assert_eq!(std::fs::metadata(slot.path()).unwrap().len(), 4 * HEADER);
        let direct = slot.write_directly();
        // Two records, the second ending in the last page.
        let first = vec![1u8; 2 * HEADER as usize];
        let second = vec![2u8; HEADER as usize - 200];
        assert_eq!(slot.append(&first).unwrap(), Some(0));
        assert_eq!(slot.append(&second).unwrap(), Some(1));
        assert_eq!(slot.overlaps(), direct, "no direct write failed");
        drop(taken);
        assert_eq!(records(&take(dir.path())), vec![first, second]);
    }

    /// Every record taken, in order (a revision's payload as it is).
    fn records(t: &Taken<RealFs>) -> Vec<Vec<u8>> {
        t.records
            .iter()
            .flat_map(|h| {
                h.records.iter().map(|(_, r)| match r {
                    Record::Text(t) | Record::Revision(t) => t.clone(),
                })
            })
            .collect()
    }

    #[test]
    fn records_come_back_in_order_until_the_slot_is_emptied() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut t = take(dir.path());
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
        let mut t = take(dir.path());
        assert_eq!(records(&t), vec![record(0), record(1), record(2)]);
        // Appends go after the records read back, which still count.
        assert_eq!(
            t.ours.as_mut().unwrap().append(&record(3)).unwrap(),
            Some(3)
        );
        drop(t);
        let mut t = take(dir.path());
        assert_eq!(records(&t).len(), 4);
        t.ours.as_mut().unwrap().empty().unwrap();
        assert_eq!(
            t.ours.as_mut().unwrap().append(&record(9)).unwrap(),
            Some(0)
        );
        drop(t);
        // After emptying, the old records (further on in the file) no longer count.
        let t = take(dir.path());
        assert_eq!(records(&t), vec![record(9)]);
    }

    #[test]
    fn work_given_to_an_append_runs_once_its_record_is_written_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = take(dir.path());
        let ours = t.ours.as_mut().unwrap();
        let path = ours.path().to_path_buf();
        let payload = record(5);
        let mut seen = Vec::new();
        let number = ours
            .append_then(Kind::Text, &payload, || {
                seen.push(std::fs::read(&path).unwrap())
            })
            .unwrap();
        assert_eq!(number, Some(0));
        assert_eq!(seen.len(), 1, "run once");
        let at = (HEADER + RECORD) as usize;
        assert_eq!(
            &seen[0][at..at + payload.len()],
            &payload[..],
            "the record was in the file when the work ran"
        );
        // No room: nothing written, and the work is not run.
        let big = vec![7u8; (DEFAULT_SLOT_BYTES - HEADER - 2 * RECORD) as usize];
        let mut ran = false;
        let no_room = ours.append_then(Kind::Text, &big, || ran = true);
        assert_eq!(no_room.unwrap(), None);
        assert!(!ran);
        drop(t);
        assert_eq!(records(&take(dir.path())), vec![payload]);
    }

    #[test]
    fn a_torn_record_ends_the_slot() {
        let dir = tempfile::tempdir().unwrap();
        let path = {
            let mut t = take(dir.path());
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
        let t = take(dir.path());
        assert_eq!(records(&t), vec![record(0)]);
    }

    #[test]
    fn a_held_slot_is_not_taken_and_a_full_one_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = take(dir.path());
        first.ours.as_mut().unwrap().append(&record(1)).unwrap();
        let second = take(dir.path());
        assert_ne!(
            first.ours.as_ref().unwrap().path(),
            second.ours.as_ref().unwrap().path()
        );
        assert!(
            second.records.is_empty(),
            "a live store's records are its own"
        );
        let big = vec![7u8; (DEFAULT_SLOT_BYTES - HEADER - RECORD) as usize];
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
        let t = take(dir.path());
        assert_eq!(t.others.len(), 1);
        assert!(records(&t).contains(&record(1)));
        drop(t);
        // Without making one, every slot left is taken, none is ours.
        let left = Slot::take_left(&RealFs, dir.path(), None).unwrap();
        assert!(left.ours.is_none());
        assert_eq!(left.others.len(), 2);
    }

    #[test]
    fn a_smaller_slot_grows_with_its_records_and_a_torn_one_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        // Room for three records of ~1 KB after the header.
        let small = MIN_SLOT_BYTES;
        let path = {
            let mut t = Slot::take_all(&RealFs, dir.path(), small).unwrap();
            let ours = t.ours.as_mut().unwrap();
            assert_eq!(std::fs::metadata(ours.path()).unwrap().len(), small);
            for n in 1..=3 {
                assert!(ours.append(&record(n)).unwrap().is_some());
            }
            assert!(
                ours.append(&record(4)).unwrap().is_none(),
                "the slot is full at its own size"
            );
            ours.path().to_path_buf()
        };
        // A store that wants larger slots reads the records, and grows the slot around them:
        // appends go on after them.
        let mut t = take(dir.path());
        assert_eq!(records(&t), vec![record(1), record(2), record(3)]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), DEFAULT_SLOT_BYTES);
        assert_eq!(
            t.ours.as_mut().unwrap().append(&record(4)).unwrap(),
            Some(3)
        );
        drop(t);
        assert_eq!(records(&take(dir.path())).len(), 4);
        // A slot whose maker stopped before its header (zeros, cut short) counts for nothing,
        // and is written out to the size wanted.
        std::fs::write(&path, vec![0u8; 5000]).unwrap();
        let t = take(dir.path());
        assert!(t.records.is_empty());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), DEFAULT_SLOT_BYTES);
    }

    #[test]
    fn a_record_larger_than_a_checkpoint_may_be_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let size = max_record() + 2 * HEADER;
        let mut t = Slot::take_all(&RealFs, dir.path(), size).unwrap();
        let ours = t.ours.as_mut().unwrap();
        let big = vec![1u8; (max_record() + 1) as usize];
        assert!(ours.append(&big).unwrap().is_none());
        assert!(ours.append(&record(1)).unwrap().is_some());
    }

    /// A text like a checkpoint's after `step` steps: lines, growing by a few each step.
    fn text(exec: &str, step: usize) -> Vec<u8> {
        let mut t =
            format!("{{\n  \"execution\": \"{exec}\",\n  \"step\": {step},\n  \"items\": [\n");
        for k in 0..step * 3 {
            t.push_str(&format!(
                "    \"{exec} item {k}: something said at length, once\",\n"
            ));
        }
        t.push_str("  ]\n}\n");
        t.into_bytes()
    }

    /// The magic of each record in the slot at `path` (the first `n`).
    fn magics(path: &Path, n: usize) -> Vec<[u8; 4]> {
        let bytes = std::fs::read(path).unwrap();
        let mut at = HEADER as usize;
        (0..n)
            .map(|_| {
                let magic: [u8; 4] = bytes[at..at + 4].try_into().unwrap();
                let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
                at = (at + RECORD as usize + len).next_multiple_of(8);
                magic
            })
            .collect()
    }

    /// Appends `text` of execution `key` as the journal wrote it before revisions: a delta
    /// against the key's last text, if `bases` holds it, and whole otherwise.
    fn append_as_before(
        ours: &mut Slot<RealFs>,
        bases: &mut std::collections::HashMap<String, (u64, Vec<u8>)>,
        key: &str,
        text: &[u8],
    ) -> u64 {
        let delta = bases.get(key).map(|(number, base)| {
            let ops = crate::journal_delta::encode(base, text);
            [number.to_le_bytes().as_slice(), &ops].concat()
        });
        let n = match &delta {
            Some(payload) => ours.append_then(Kind::Delta, payload, || {}),
            None => ours.append(text),
        };
        let n = n.unwrap().unwrap();
        bases.insert(key.to_owned(), (n, text.to_vec()));
        n
    }

    #[test]
    fn text_deltas_written_before_revisions_are_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut written = Vec::new();
        let path = {
            let mut t = take(dir.path());
            let ours = t.ours.as_mut().unwrap();
            let mut bases = std::collections::HashMap::new();
            for step in 10..=40 {
                for exec in ["a", "b"] {
                    let text = text(exec, step);
                    let n = append_as_before(ours, &mut bases, exec, &text);
                    assert_eq!(n, written.len() as u64);
                    written.push(text);
                }
            }
            ours.path().to_path_buf()
        };
        let kinds = magics(&path, 6);
        assert_eq!(&kinds[..2], &[*RECORD_MAGIC, *RECORD_MAGIC]);
        assert!(kinds[2..].iter().all(|m| m == DELTA_MAGIC));
        assert_eq!(
            records(&take(dir.path())),
            written,
            "every text rebuilt, byte for byte"
        );
    }

    /// The slot made in `dir`, holding the texts of execution `a` at `steps` (the first whole,
    /// the others deltas): its path.
    fn saved_steps(dir: &Path, steps: std::ops::RangeInclusive<usize>) -> PathBuf {
        let mut t = take(dir);
        let ours = t.ours.as_mut().unwrap();
        let mut bases = std::collections::HashMap::new();
        for step in steps {
            append_as_before(ours, &mut bases, "a", &text("a", step));
        }
        ours.path().to_path_buf()
    }

    #[test]
    fn a_delta_that_names_no_earlier_record_fails_the_read_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = saved_steps(dir.path(), 10..=12);
        // Record 1 names record 7 as its base, its CRC-32 made right again.
        let mut bytes = std::fs::read(&path).unwrap();
        let first = u32::from_le_bytes(bytes[HEADER as usize + 4..][..4].try_into().unwrap());
        let at = (HEADER + RECORD + u64::from(first)).next_multiple_of(8) as usize;
        assert_eq!(&bytes[at..at + 4], DELTA_MAGIC);
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        let payload = at + RECORD as usize;
        bytes[payload..payload + 8].copy_from_slice(&7u64.to_le_bytes());
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&bytes[at..at + 24]);
        hasher.update(&bytes[payload..payload + len]);
        bytes[at + 24..at + 28].copy_from_slice(&hasher.finalize().to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let e = Slot::take_all(&RealFs, dir.path(), DEFAULT_SLOT_BYTES)
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(
            e.to_string().contains("record 1") && e.to_string().contains("record 7"),
            "{e}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "the slot is left as it was"
        );
    }

    #[test]
    fn a_slot_that_stands_for_more_than_four_times_its_size_in_text_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Slot::take_all(&RealFs, dir.path(), MIN_SLOT_BYTES).unwrap();
        let ours = t.ours.as_mut().unwrap();
        let text = vec![b'x'; 3000];
        assert_eq!(ours.append(&text).unwrap(), Some(0));
        // Deltas of a few bytes, each standing for 3000 bytes of text.
        let delta = crate::journal_delta::encode(&text, &text);
        let payload = [0u64.to_le_bytes().as_slice(), &delta].concat();
        let mut n = 1;
        while ours
            .append_then(Kind::Delta, &payload, || {})
            .unwrap()
            .is_some()
        {
            n += 1;
        }
        assert!(n * 3000 > 4 * MIN_SLOT_BYTES, "only {n} records");
        let path = ours.path().to_path_buf();
        drop(t);
        let before = std::fs::read(&path).unwrap();
        let e = Slot::take_all(&RealFs, dir.path(), MIN_SLOT_BYTES)
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("exceed 4 times"), "{e}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "the slot is left as it was"
        );
    }

    #[test]
    fn a_record_whose_magic_is_of_the_other_kind_ends_the_slot() {
        // A power cut can leave an older record's magic where a header straddles two pages:
        // the record then ends the slot (it was never acknowledged), it is not misread.
        for (torn, into) in [
            (1usize, *RECORD_MAGIC),
            (0, *DELTA_MAGIC),
            (0, *REVISION_MAGIC),
            (1, *REVISION_MAGIC),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = saved_steps(dir.path(), 10..=13);
            let mut bytes = std::fs::read(&path).unwrap();
            let mut at = HEADER as usize;
            for _ in 0..torn {
                let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
                at = (at + RECORD as usize + len as usize).next_multiple_of(8);
            }
            assert_ne!(bytes[at..at + 4], into);
            bytes[at..at + 4].copy_from_slice(&into);
            std::fs::write(&path, &bytes).unwrap();
            let expected: Vec<_> = (10..10 + torn).map(|s| text("a", s)).collect();
            assert_eq!(records(&take(dir.path())), expected, "torn record {torn}");
        }
    }

    #[test]
    fn only_the_last_record_is_withdrawn_and_the_next_takes_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = take(dir.path());
        let ours = t.ours.as_mut().unwrap();
        for n in 1..=3 {
            ours.append(&record(n)).unwrap();
        }
        assert!(ours.withdraw_last(1).is_err(), "not the last record");
        ours.withdraw_last(2).unwrap();
        assert!(ours.withdraw_last(2).is_err(), "withdrawn already");
        drop(t);
        // Flushed: the slot ends before it, and the next append takes its number and place.
        let mut t = take(dir.path());
        assert_eq!(records(&t), vec![record(1), record(2)]);
        assert_eq!(
            t.ours.as_mut().unwrap().append(&record(4)).unwrap(),
            Some(2)
        );
        drop(t);
        assert_eq!(
            records(&take(dir.path())),
            vec![record(1), record(2), record(4)]
        );
    }

    /// The slots of `dir` taken through a file system whose operations can be made to fail.
    fn faulty(dir: &Path) -> (caf_core::store::TestFs, Taken<caf_core::store::TestFs>) {
        let fs = caf_core::store::TestFs::new();
        let t = Slot::take_all(&fs, dir, DEFAULT_SLOT_BYTES).unwrap();
        (fs, t)
    }

    #[test]
    fn a_withdrawal_whose_flush_fails_still_leaves_no_record_behind_its_zeroed_header() {
        use caf_core::store::Fault;
        let dir = tempfile::tempdir().unwrap();
        let (fs, mut t) = faulty(dir.path());
        let ours = t.ours.as_mut().unwrap();
        for n in 1..=2 {
            ours.append(&record(n)).unwrap();
        }
        // The zeros are written, their flush fails.
        fs.arm(2, Fault::Eio, false);
        assert!(ours.withdraw_last(1).is_err());
        assert!(fs.disarm().is_some());
        // The next record takes the withdrawn one's place: it is read back, not hidden.
        assert_eq!(ours.append(&record(3)).unwrap(), Some(1));
        drop(t);
        assert_eq!(records(&take(dir.path())), vec![record(1), record(3)]);
    }

    #[test]
    fn an_emptying_that_fails_still_ends_the_epoch_and_the_next_append_empties() {
        use caf_core::store::Fault;
        let dir = tempfile::tempdir().unwrap();
        let (fs, mut t) = faulty(dir.path());
        let ours = t.ours.as_mut().unwrap();
        ours.append(&record(1)).unwrap();
        let epoch = ours.epoch();
        // The new header's write fails.
        fs.arm(1, Fault::Eio, false);
        assert!(ours.empty().is_err());
        assert!(fs.disarm().is_some());
        assert_ne!(
            ours.epoch(),
            epoch,
            "a base kept before names nothing after it"
        );
        // The next append empties the slot first: it is record 0 of a new generation.
        assert_eq!(ours.append(&record(2)).unwrap(), Some(0));
        drop(t);
        assert_eq!(records(&take(dir.path())), vec![record(2)]);
    }

    #[test]
    fn an_append_that_fails_leaves_the_records_before_it() {
        use caf_core::store::Fault;
        // Each operation of an append in turn (its write, its flush) fails once; the next
        // appends go on, numbered after the last that succeeded, and the slot reads back
        // exactly the records whose appends succeeded.
        for nth in 1..=2 {
            let dir = tempfile::tempdir().unwrap();
            let (fs, mut t) = faulty(dir.path());
            let ours = t.ours.as_mut().unwrap();
            let mut kept = Vec::new();
            for step in 10..=16 {
                if step == 13 {
                    fs.arm(nth, Fault::Eio, false);
                }
                let text = text("a", step);
                if let Ok(Some(n)) = ours.append(&text) {
                    assert_eq!(n, kept.len() as u64);
                    kept.push(text);
                }
                if step == 13 {
                    assert!(fs.disarm().is_some(), "operation {nth} failed");
                }
            }
            assert_eq!(
                kept.len(),
                6,
                "only the armed append failed (operation {nth})"
            );
            drop(t);
            assert_eq!(records(&take(dir.path())), kept, "operation {nth}");
        }
    }
}
