//! The physical floor of a durable save.

use super::stats::micros;
use crate::Failure;
use caf_core::store::{write_zeros, RealFs};
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::Instant;

/// The physical floor of a durable save: the checkpoint's bytes appended to a file whose blocks
/// are already written and flushed (so that `fdatasync` has no metadata to write), then one
/// `fdatasync` — SQLite's WAL with `synchronous = FULL` pays that per commit. Like a WAL, the
/// file is reused from its start when an append would not fit.
pub(super) struct AppendFloor {
    file: std::fs::File,
    path: PathBuf,
    len: u64,
    at: u64,
}

impl AppendFloor {
    /// At least this much is preallocated (SQLite's WAL restarts after about 4 MB).
    const MIN: u64 = 16 << 20;

    pub(super) fn open(path: PathBuf) -> Result<Self, Failure> {
        Self::open_sized(path, Self::MIN)
    }

    /// [`AppendFloor::open`] preallocating `len` bytes (at most [`Self::MIN`] are needed:
    /// the file is reused from its start past that).
    pub(super) fn open_sized(path: PathBuf, len: u64) -> Result<Self, Failure> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Failure::msg(format!("{}: {e}", path.display())))?;
        let mut floor = Self {
            file,
            path,
            len: 0,
            at: 0,
        };
        floor.grow(len.clamp(1, Self::MIN))?;
        Ok(floor)
    }

    fn fail(&self, e: std::io::Error) -> Failure {
        Failure::msg(format!("{}: {e}", self.path.display()))
    }

    /// Writes zeros up to `len` bytes and flushes them (not timed), a page at a time, as the
    /// journal's slot is made ([`caf_core::store::write_zeros`]).
    fn grow(&mut self, len: u64) -> Result<(), Failure> {
        self.file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| write_zeros(&RealFs, &self.file, &self.path, self.len, len))
            .and_then(|()| self.file.sync_all())
            .map_err(|e| self.fail(e))?;
        self.len = self.len.max(len);
        Ok(())
    }

    /// Appends `bytes` and flushes them: the microseconds that took.
    pub(super) fn append(&mut self, bytes: &[u8]) -> Result<f64, Failure> {
        let n = bytes.len() as u64;
        if n > self.len {
            self.grow(n.next_power_of_two())?;
        }
        if self.at + n > self.len {
            self.at = 0;
        }
        let t = Instant::now();
        self.file
            .seek(SeekFrom::Start(self.at))
            .and_then(|_| self.file.write_all(bytes))
            .and_then(|()| self.file.sync_data())
            .map_err(|e| self.fail(e))?;
        let us = micros(t);
        self.at += n;
        Ok(us)
    }
}

/// What each writer of [`concurrent_appends`] does besides its appends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FloorKind {
    /// Nothing: one append and its `fdatasync` per checkpoint.
    Appends,
    /// Also writes each checkpoint's bytes to a file of its own, as caf's modes with files do.
    Files,
    /// Also computes each file's checksum first, as the format requires of every file (the
    /// SHA-256 of its text; caf leaves out the `integrity` line, ~80 bytes, hashed here too).
    Checksummed,
}

impl FloorKind {
    /// Every kind, in the order they are measured.
    pub(super) const ALL: [FloorKind; 3] = [Self::Appends, Self::Files, Self::Checksummed];

    /// Whether its writers write files.
    pub(super) fn files(self) -> bool {
        self != Self::Appends
    }

    /// Whether its writers compute each file's checksum.
    pub(super) fn checksums(self) -> bool {
        self == Self::Checksummed
    }

    /// What its writers do besides appending, as the progress line says it.
    pub(super) fn doing(self) -> &'static str {
        match self {
            Self::Appends => "",
            Self::Files => ", and written to files",
            Self::Checksummed => ", checksummed and written to files",
        }
    }

    /// Its name in the table of figures, and in the table of ratios.
    pub(super) fn names(self) -> (&'static str, &'static str) {
        match self {
            Self::Appends => ("floor: appends, one fdatasync each", "floor (no store)"),
            Self::Files => ("floor: appends and files", "floor with files (no store)"),
            Self::Checksummed => (
                "floor: appends, checksummed files",
                "floor with checksummed files (no store)",
            ),
        }
    }
}

/// A floor's kind in JSON: the flags `with_files` and `with_checksums`, beside the floor's
/// figures ([`super::concurrent::ConcurrentFloor`] flattens it).
impl serde::Serialize for FloorKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut flags = s.serialize_struct("FloorKind", 2)?;
        flags.serialize_field("with_files", &self.files())?;
        flags.serialize_field("with_checksums", &self.checksums())?;
        flags.end()
    }
}

/// The physical floor of `writers` agents saving at once: each appends every one of
/// `checkpoints` (the bytes of one execution's saves, in order) to a preallocated file of its own,
/// with one `fdatasync` per append, all starting together. With files ([`FloorKind`]), each
/// writer then also writes each checkpoint's bytes to a file of its own, as caf's modes with files
/// do: a new temporary file in one directory shared by all writers, renamed to its name there, not
/// flushed (the append made the save durable); checksummed, it hashes them first. Returns the
/// seconds from the start until the last writer is done, and the CPU time this process spent
/// meanwhile. Threads of this process: an append, its flush and a file's creation are system
/// calls, so processes would add nothing but their start.
pub(super) fn concurrent_appends(
    dir: &std::path::Path,
    writers: u32,
    checkpoints: &[Vec<u8>],
    kind: FloorKind,
) -> Result<(f64, f64), Failure> {
    let files_dir = dir.join("files");
    if kind.files() {
        std::fs::create_dir(&files_dir)
            .map_err(|e| Failure::msg(format!("{}: {e}", files_dir.display())))?;
    }
    let mut appends = (0..writers)
        .map(|w| {
            let len = checkpoints.iter().map(|c| c.len() as u64).sum();
            AppendFloor::open_sized(dir.join(format!("append-{w}.bin")), len)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let start = std::sync::Barrier::new(appends.len() + 1);
    std::thread::scope(|scope| {
        let running: Vec<_> = appends
            .iter_mut()
            .enumerate()
            .map(|(w, file)| {
                let (start, files_dir) = (&start, &files_dir);
                scope.spawn(move || {
                    start.wait();
                    checkpoints.iter().enumerate().try_for_each(|(k, bytes)| {
                        file.append(bytes)?;
                        if kind.checksums() {
                            std::hint::black_box(caf_core::format::integrity::digest(&[bytes]));
                        }
                        if kind.files() {
                            write_renamed(files_dir, &format!("{w}-{k}"), bytes)?;
                        }
                        Ok::<(), Failure>(())
                    })
                })
            })
            .collect();
        let cpu = super::concurrent::process_cpu_s();
        start.wait();
        let t = Instant::now();
        for r in running {
            r.join()
                .map_err(|_| Failure::msg("bench: a floor writer stopped short"))??;
        }
        let seconds = t.elapsed().as_secs_f64();
        Ok((seconds, super::concurrent::process_cpu_s() - cpu))
    })
}

/// Writes `bytes` to a new temporary file in `dir` and renames it to `<name>.json` there, without
/// flushing either: what a save that is durable by its journal does for its file.
fn write_renamed(dir: &std::path::Path, name: &str, bytes: &[u8]) -> Result<(), Failure> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let fail = |e: std::io::Error| Failure::msg(format!("{}: {e}", tmp.display()));
    std::fs::File::create_new(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(fail)?;
    std::fs::rename(&tmp, dir.join(format!("{name}.json"))).map_err(fail)
}
