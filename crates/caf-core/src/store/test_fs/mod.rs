//! [`TestFs`]: the test double of the store's file-system seam ([`super::Fs`]), for tests only
//! (feature `test-support`). It works on the real file system, and
//!
//! - fails the *n*-th operation made on one thread with `EIO`, `ENOSPC` or `EACCES`, or writes
//!   only half of the *n*-th write ([`TestFs::arm`]): SQLite's "I/O error at every point";
//! - records every operation that changes the file system, with the inode it touched and the
//!   bytes it wrote ([`TestFs::record`], [`TestFs::records`]), so that a test can rebuild what a
//!   disk may hold after a power loss at any point (the way dm-log-writes replays a log).
//!
//! It never really flushes: a sync only counts, and is recorded. What a power loss keeps is the
//! test's decision, made from the record.

mod ops;
mod pause;

pub use ops::{Fault, Fired, Hook, Op, OpKind, Record};
pub use pause::Pause;

use super::fs::{Fs, RealFs};
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;

struct Armed {
    nth: u64,
    fault: Fault,
    persistent: bool,
    thread: ThreadId,
    counted: u64,
}

#[derive(Default)]
struct State {
    armed: Option<Armed>,
    fired: Option<Fired>,
    recording: bool,
    hook: Option<Hook>,
    log: Vec<Record>,
}

/// The test double of the file-system seam (see the module docs). Clones share their state.
#[derive(Clone, Default)]
pub struct TestFs {
    state: Arc<Mutex<State>>,
    pause: Arc<Mutex<Option<Pause>>>,
}

impl std::fmt::Debug for TestFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestFs").finish_non_exhaustive()
    }
}

impl super::fs::sealed::Sealed for TestFs {}

/// What to do with one operation: go on (with the log entry's tag) or fail it.
enum Verdict {
    Go(u64),
    Fail(Fault),
}

impl TestFs {
    /// A double that does what the real file system does (and never flushes).
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails the `nth` operation (from 1) made from now on by the calling thread with `fault`
    /// (for [`Fault::ShortWrite`], the `nth` write); with `persistent`, every operation of that
    /// thread after it too (a short write is never persistent). Operations of other threads
    /// are not counted, except those made for it ([`crate::store::working_for`]).
    pub fn arm(&self, nth: u64, fault: Fault, persistent: bool) {
        let mut st = self.lock();
        st.armed = Some(Armed {
            nth,
            fault,
            persistent: persistent && fault != Fault::ShortWrite,
            thread: std::thread::current().id(),
            counted: 0,
        });
        st.fired = None;
    }

    /// Stops failing; returns the first operation that was failed since [`TestFs::arm`].
    pub fn disarm(&self) -> Option<Fired> {
        let mut st = self.lock();
        st.armed = None;
        st.fired.take()
    }

    /// Starts recording every operation that changes the file system, calling `hook` (if any)
    /// before each one.
    pub fn record(&self, hook: Option<Hook>) {
        let mut st = self.lock();
        st.recording = true;
        st.hook = hook;
        st.log.clear();
    }

    /// Stops recording and returns the record.
    pub fn records(&self) -> Vec<Record> {
        let mut st = self.lock();
        st.recording = false;
        st.hook = None;
        std::mem::take(&mut st.log)
    }

    /// Holds the next operation of `kind` on a file named `name` (in any directory) until
    /// [`Pause::resume`]; only one pause at a time.
    pub fn pause(&self, kind: OpKind, name: &str) -> Pause {
        let pause = Pause::new(kind, name);
        *self.pause.lock().unwrap_or_else(|p| p.into_inner()) = Some(pause.clone());
        pause
    }

    /// Adds a note of the test's own to the record (a save returned, a delete returned).
    pub fn mark(&self, note: impl Into<String>) {
        let mut st = self.lock();
        if st.recording {
            let tag = st.hook.as_mut().map_or(0, |h| h());
            st.log.push(Record {
                op: Op::Mark(note.into()),
                tag,
            });
        }
    }

    /// Decides the fate of one operation (counting it if armed for this thread).
    fn verdict(st: &mut State, kind: OpKind, path: &Path) -> Verdict {
        if let Some(a) = st.armed.as_mut() {
            let counts = a.thread == super::fs::acting_thread()
                && (a.fault != Fault::ShortWrite || kind == OpKind::Write);
            if counts {
                a.counted += 1;
                let hit = a.counted == a.nth || (a.persistent && a.counted > a.nth);
                if hit {
                    let fault = a.fault;
                    if st.fired.is_none() {
                        st.fired = Some(Fired {
                            op: kind,
                            path: path.to_path_buf(),
                            fault,
                        });
                    }
                    return Verdict::Fail(fault);
                }
            }
        }
        let tag = match (st.recording, st.hook.as_mut()) {
            (true, Some(h)) => h(),
            _ => 0,
        };
        Verdict::Go(tag)
    }

    /// Runs one operation: fails it if armed to, else does it and records what it changed.
    fn op<T>(
        &self,
        kind: OpKind,
        path: &Path,
        run: impl FnOnce(Option<Fault>) -> io::Result<(T, Vec<Op>)>,
    ) -> io::Result<T> {
        let pause = self.pause.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if pause.is_some_and(|p| p.hold(kind, path)) {
            *self.pause.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
        let mut st = self.lock();
        let tag = match Self::verdict(&mut st, kind, path) {
            Verdict::Fail(Fault::ShortWrite) => {
                let (out, ops) = run(Some(Fault::ShortWrite))?;
                Self::log(&mut st, ops, 0);
                return Ok(out);
            }
            Verdict::Fail(fault) => return Err(fault.error()),
            Verdict::Go(tag) => tag,
        };
        let (out, ops) = run(None)?;
        Self::log(&mut st, ops, tag);
        Ok(out)
    }

    fn log(st: &mut State, ops: Vec<Op>, tag: u64) {
        if st.recording {
            st.log.extend(ops.into_iter().map(|op| Record { op, tag }));
        }
    }
}

#[cfg(unix)]
fn ino(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn ino(_meta: &std::fs::Metadata) -> u64 {
    0
}

/// The record of `file` having been made at `path`, if it was (`made`).
fn created(file: &File, path: &Path, made: bool) -> io::Result<Vec<Op>> {
    if !made {
        return Ok(Vec::new());
    }
    let meta = file.metadata()?;
    Ok(vec![Op::Create {
        path: path.to_path_buf(),
        ino: ino(&meta),
        mtime_ns: super::index::mtime_ns(&meta),
    }])
}

impl Fs for TestFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.op(OpKind::CreateDir, dir, |_| {
            let missing: Vec<&Path> = dir
                .ancestors()
                .take_while(|a| !a.as_os_str().is_empty() && !a.is_dir())
                .collect();
            let mut ops = Vec::new();
            for d in missing.into_iter().rev() {
                match std::fs::create_dir(d) {
                    Ok(()) => ops.push(Op::Mkdir {
                        path: d.to_path_buf(),
                    }),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(((), ops))
        })
    }

    fn create_new(&self, path: &Path) -> io::Result<File> {
        self.op(OpKind::CreateNew, path, |_| {
            let file = RealFs.create_new(path)?;
            let meta = file.metadata()?;
            let op = Op::Create {
                path: path.to_path_buf(),
                ino: ino(&meta),
                mtime_ns: super::index::mtime_ns(&meta),
            };
            Ok((file, vec![op]))
        })
    }

    fn open_spare(&self, path: &Path) -> io::Result<File> {
        // Opening changes nothing on disk: no record.
        self.op(OpKind::OpenSpare, path, |_| {
            Ok((RealFs.open_spare(path)?, vec![]))
        })
    }

    fn open_append(&self, path: &Path) -> io::Result<File> {
        self.op(OpKind::OpenAppend, path, |_| {
            let existed = std::fs::symlink_metadata(path).is_ok();
            let file = RealFs.open_append(path)?;
            let ops = created(&file, path, !existed)?;
            Ok((file, ops))
        })
    }

    fn open_in_place(&self, path: &Path, create: bool) -> io::Result<File> {
        self.op(OpKind::OpenInPlace, path, |_| {
            let file = RealFs.open_in_place(path, create)?;
            let ops = created(&file, path, create)?;
            Ok((file, ops))
        })
    }

    fn open_read(&self, path: &Path) -> io::Result<File> {
        self.op(OpKind::OpenRead, path, |_| {
            Ok((File::open(path)?, Vec::new()))
        })
    }

    fn write(&self, file: &File, path: &Path, buf: &[u8]) -> io::Result<usize> {
        self.op(OpKind::Write, path, |fault| {
            let len = match fault {
                Some(Fault::ShortWrite) => buf.len().div_ceil(2),
                _ => buf.len(),
            };
            let mut f = file;
            let n = f.write(&buf[..len])?;
            // After a write (appending or not), the position is just past what it wrote.
            let end = f.stream_position()?;
            let meta = file.metadata()?;
            let op = Op::Write {
                ino: ino(&meta),
                offset: end - n as u64,
                bytes: buf[..n].to_vec(),
                mtime_ns: super::index::mtime_ns(&meta),
            };
            Ok((n, vec![op]))
        })
    }

    fn read(&self, file: &File, path: &Path, buf: &mut [u8]) -> io::Result<usize> {
        self.op(OpKind::Read, path, |_| {
            let mut f = file;
            Ok((f.read(buf)?, Vec::new()))
        })
    }

    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()> {
        self.op(OpKind::SyncData, path, |_| {
            let op = Op::SyncFile {
                ino: ino(&file.metadata()?),
            };
            Ok(((), vec![op]))
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.op(OpKind::Rename, to, |_| {
            let moved = ino(&std::fs::symlink_metadata(from)?);
            std::fs::rename(from, to)?;
            let op = Op::Rename {
                from: from.to_path_buf(),
                to: to.to_path_buf(),
                ino: moved,
            };
            Ok(((), vec![op]))
        })
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.op(OpKind::HardLink, to, |_| {
            let linked = ino(&std::fs::symlink_metadata(from)?);
            std::fs::hard_link(from, to)?;
            let op = Op::Link {
                to: to.to_path_buf(),
                ino: linked,
            };
            Ok(((), vec![op]))
        })
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.op(OpKind::RemoveFile, path, |_| {
            std::fs::remove_file(path)?;
            let op = Op::Unlink {
                path: path.to_path_buf(),
            };
            Ok(((), vec![op]))
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.op(OpKind::SyncDir, dir, |_| {
            File::open(dir)?; // as the real one, it needs the directory to be there
            let op = Op::SyncDir {
                path: dir.to_path_buf(),
            };
            Ok(((), vec![op]))
        })
    }

    fn sync_fs(&self, dir: &Path) -> io::Result<()> {
        self.op(OpKind::SyncFs, dir, |_| {
            File::open(dir)?;
            Ok(((), vec![Op::SyncFs]))
        })
    }
}
