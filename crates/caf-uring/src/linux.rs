//! [`DirectAppender`] on Linux: one io_uring, one `O_DIRECT` file.

use crate::{Waited, PAGE};
use io_uring::{opcode, types, IoUring};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// One page, aligned as `O_DIRECT` asks.
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; PAGE]);

const ZEROS: Page = Page([0; PAGE]);

/// The pages an appender keeps between appends (a journal record is a few KB).
const KEPT_PAGES: usize = 16;

/// Appends to a file written in full beforehand (a journal slot), each durable when
/// [`DirectAppender::append_then`] returns, the caller's own work run while the disk writes and
/// flushes. See the crate's documentation.
pub struct DirectAppender {
    ring: IoUring,
    /// The file, opened for direct reads and writes.
    file: File,
    /// The pages of the append under way (the kernel reads them until its completion).
    pages: Vec<Page>,
    /// The last page written and its number (its offset over [`PAGE`]), as this appender wrote
    /// it: what the next append keeps of it, when it starts there.
    tail: Option<(u64, Box<Page>)>,
    /// A write was handed to the kernel and its completion could not be waited for: `pages`
    /// may still be read by the kernel, so they are never written again nor freed.
    stuck: bool,
    /// The file was written by other means since the page cache was last emptied of it.
    cached: bool,
}

impl std::fmt::Debug for DirectAppender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectAppender")
            .field("tail", &self.tail.as_ref().map(|(n, _)| n))
            .field("stuck", &self.stuck)
            .finish_non_exhaustive()
    }
}

impl DirectAppender {
    /// An appender for `path`, which must exist. Fails where io_uring or `O_DIRECT` is not to
    /// be had (the kernel's, the file system's, or a sandbox's refusal), having read the file's
    /// first page directly to make sure.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)?;
        let mut first = Box::new(ZEROS);
        file.read_exact_at(&mut first.0, 0)?;
        let ring = IoUring::new(4)?;
        Ok(Self {
            ring,
            file,
            pages: Vec::new(),
            tail: None,
            stuck: false,
            cached: true,
        })
    }

    /// Whether a write's completion could not be waited for: it may still land, so nothing may
    /// be written over its pages by other means (this appender refuses every append).
    pub fn is_stuck(&self) -> bool {
        self.stuck
    }

    /// Forgets the last page written: the file was written since by other means, so the next
    /// append reads its first page back from the disk.
    pub fn forget(&mut self) {
        self.tail = None;
        self.cached = true;
    }

    /// Drops the file's pages from the page cache, once it was written by other means (and
    /// flushed: only clean pages go). A direct write over a page the cache holds cannot be
    /// issued from the submitting thread: io_uring hands it to a worker thread, whose waking
    /// costs what this crate saves (measured: 365 appends of 500 so, a journal slot being made
    /// of zeros written through the cache).
    fn uncache(&mut self) {
        if std::mem::take(&mut self.cached) {
            // Advice: where it is not taken, writes go through io_uring's worker, as durable.
            let _ = rustix::fs::fadvise(&self.file, 0, None, rustix::fs::Advice::DontNeed);
        }
    }

    /// Writes `parts`, one after another, at byte `at` of the file, and makes them durable;
    /// runs `meanwhile` while the disk writes and flushes them, then waits for the disk.
    ///
    /// The pages written are whole: the bytes of the first before `at` are kept (as this
    /// appender last wrote them, or as read back from the disk); the rest of the last, after
    /// the parts, is written as zeros. The file must already hold those pages.
    ///
    /// `meanwhile` is run only once the write is under way: an error before that (reading the
    /// first page back, handing the write to the kernel) returns before it runs. An error the
    /// disk reports comes after it. Should `meanwhile` panic, the disk is waited for before the
    /// panic goes on.
    pub fn append_then(
        &mut self,
        at: u64,
        parts: &[&[u8]],
        meanwhile: impl FnOnce(),
    ) -> io::Result<Waited> {
        if self.stuck {
            return Err(io::Error::other(
                "an earlier direct write's completion was lost",
            ));
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let page = PAGE as u64;
        let first = at / page;
        let skip = usize::try_from(at % page).unwrap_or(0);
        let count = (skip + len).div_ceil(PAGE).max(1);
        let bytes = u32::try_from(count * PAGE)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "append too large"))?;
        self.uncache();
        let tail = self.tail.take();
        self.pages.clear();
        self.pages.resize(count, ZEROS);
        if skip > 0 {
            match tail {
                Some((n, kept)) if n == first => self.pages[0] = *kept,
                _ => self
                    .file
                    .read_exact_at(&mut self.pages[0].0, first * page)?,
            }
            // What followed there goes: the rest is the append's, then zeros.
            self.pages[0].0[skip..].fill(0);
        }
        let mut offset = skip;
        for part in parts {
            copy_into(&mut self.pages, offset, part);
            offset += part.len();
        }
        let write = opcode::Write::new(
            types::Fd(self.file.as_raw_fd()),
            self.pages.as_ptr().cast::<u8>(),
            bytes,
        )
        .offset(first * page)
        .rw_flags(libc::RWF_DSYNC)
        .build();
        // SAFETY: the entry points into `self.pages`, which stay as they are (neither written,
        // moved nor freed) until the write's completion is reaped: below, or by `Reap`'s drop
        // if `meanwhile` panics, or never (`stuck`: then never touched again, and leaked on
        // drop).
        unsafe { self.ring.submission().push(&write) }
            .map_err(|_| io::Error::other("the ring's submission queue is full"))?;
        if let Err(e) = submit(&self.ring) {
            // Not handed to the kernel; dropped from the queue so that no later submission
            // sends it.
            self.reset_ring()?;
            return Err(e);
        }
        let mut reap = Reap {
            ring: &mut self.ring,
            stuck: &mut self.stuck,
            done: None,
        };
        meanwhile();
        let waited = if reap.ready() {
            Waited::No
        } else {
            Waited::ForTheDisk
        };
        let result = reap.wait()?;
        if result < 0 {
            return Err(io::Error::from_raw_os_error(-result));
        }
        if result != i32::try_from(bytes).unwrap_or(i32::MAX) {
            return Err(io::Error::other(format!(
                "a direct write of {bytes} bytes wrote {result}"
            )));
        }
        self.tail = self
            .pages
            .last()
            .map(|last| (first + count as u64 - 1, Box::new(*last)));
        // A large record's pages are not kept for the small ones after it.
        self.pages.shrink_to(KEPT_PAGES);
        Ok(waited)
    }

    /// A new ring in place of one whose submission queue may hold an entry never submitted.
    fn reset_ring(&mut self) -> io::Result<()> {
        match IoUring::new(4) {
            Ok(ring) => {
                self.ring = ring;
                Ok(())
            }
            Err(e) => {
                self.stuck = true;
                Err(e)
            }
        }
    }
}

impl Drop for DirectAppender {
    fn drop(&mut self) {
        if self.stuck {
            // The kernel may still read these pages: they outlive the appender.
            std::mem::forget(std::mem::take(&mut self.pages));
        }
    }
}

/// Copies `bytes` into `pages`, seen as one run of bytes, from `offset`.
fn copy_into(pages: &mut [Page], mut offset: usize, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let (n, within) = (offset / PAGE, offset % PAGE);
        let take = (PAGE - within).min(bytes.len());
        pages[n].0[within..within + take].copy_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        offset += take;
    }
}

/// Submits what the ring's queue holds, again if a signal interrupts.
fn submit(ring: &IoUring) -> io::Result<()> {
    loop {
        match ring.submit() {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The one write in flight: its completion, waited for before the pages it reads may change.
struct Reap<'a> {
    ring: &'a mut IoUring,
    stuck: &'a mut bool,
    done: Option<i32>,
}

impl Reap<'_> {
    /// Whether the completion has come (taken if so). The kernel may post it only when this
    /// thread next enters it, so "not yet" can be late: [`Waited`] is a hint.
    fn ready(&mut self) -> bool {
        if self.done.is_none() {
            self.done = self.ring.completion().next().map(|c| c.result());
        }
        self.done.is_some()
    }

    /// The write's result (a byte count, or a negated `errno`), once it has come.
    fn wait(&mut self) -> io::Result<i32> {
        loop {
            if self.ready() {
                return Ok(self.done.unwrap_or_default());
            }
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                // A signal, or the kernel short of memory for a moment: wait again.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                    ) => {}
                Err(e) => {
                    *self.stuck = true;
                    return Err(e);
                }
            }
        }
    }
}

impl Drop for Reap<'_> {
    fn drop(&mut self) {
        if self.done.is_none() && !*self.stuck {
            let _ = self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file of `pages` pages, each filled with its own byte.
    fn file_of(dir: &Path, pages: usize) -> std::path::PathBuf {
        let path = dir.join("slot");
        let mut f = File::create(&path).unwrap();
        for n in 0..pages {
            f.write_all(&[n as u8 + 1; PAGE]).unwrap();
        }
        f.sync_all().unwrap();
        path
    }

    /// A file of `pages` pages (see [`file_of`]) in a new directory and an appender for it, or
    /// `None` (said) where this machine cannot append directly.
    fn appender(pages: usize) -> Option<(tempfile::TempDir, std::path::PathBuf, DirectAppender)> {
        let dir = tempfile::tempdir().unwrap();
        let path = file_of(dir.path(), pages);
        match DirectAppender::open(&path) {
            Ok(a) => Some((dir, path, a)),
            Err(e) => {
                eprintln!("SKIPPED: no direct appends here ({e})");
                None
            }
        }
    }

    #[test]
    fn appends_keep_the_bytes_before_them_and_zero_the_rest_of_their_last_page() {
        let Some((_dir, path, mut a)) = appender(4) else {
            return;
        };
        let mut ran = 0;
        // Read back from the disk: the first page's first 100 bytes stay.
        a.append_then(100, &[b"head", &[7u8; 5000]], || ran += 1)
            .unwrap();
        // From the page this appender wrote last (the second).
        a.append_then(5104, &[b"next"], || ran += 1).unwrap();
        assert_eq!(ran, 2);
        let got = std::fs::read(&path).unwrap();
        let mut want = vec![1u8; 100];
        want.extend_from_slice(b"head");
        want.extend_from_slice(&[7u8; 5000]);
        want.extend_from_slice(b"next");
        want.resize(2 * PAGE, 0);
        want.extend_from_slice(&[3u8; PAGE]);
        want.extend_from_slice(&[4u8; PAGE]);
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the file's bytes differ from those appended");
    }

    #[test]
    fn after_forget_the_first_page_is_read_back_as_the_disk_holds_it() {
        let Some((_dir, path, mut a)) = appender(2) else {
            return;
        };
        a.append_then(8, &[b"one"], || {}).unwrap();
        // Written by other means (buffered, as a slot's header is).
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(b"XY", 0).unwrap();
        f.sync_data().unwrap();
        a.forget();
        a.append_then(11, &[b"two"], || {}).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(&got[..16], b"XY\x01\x01\x01\x01\x01\x01onetwo\0\0");
    }

    #[test]
    fn what_meanwhile_does_runs_before_the_append_returns_and_a_panic_in_it_waits_for_the_disk() {
        let Some((_dir, path, mut a)) = appender(2) else {
            return;
        };
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.append_then(0, &[b"abc"], || panic!("work that fails"))
        }));
        assert!(panicked.is_err());
        // The appender goes on: the write was reaped.
        let waited = a.append_then(3, &[b"def"], || {}).unwrap();
        assert!(matches!(waited, Waited::ForTheDisk | Waited::No));
        let got = std::fs::read(&path).unwrap();
        assert_eq!(&got[..8], b"abcdef\0\0");
    }

    #[test]
    fn a_write_past_the_file_is_an_error_and_the_appender_goes_on() {
        let Some((_dir, path, mut a)) = appender(1) else {
            return;
        };
        // Reading back the page it starts in fails: the file ends before it.
        let mut ran = false;
        assert!(a
            .append_then(PAGE as u64 + 10, &[b"x"], || ran = true)
            .is_err());
        assert!(!ran, "not run when nothing was written");
        a.append_then(0, &[b"ok"], || {}).unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[..3], b"ok\0");
    }
}
