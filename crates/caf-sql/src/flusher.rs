//! The background flusher of a hybrid store: about once a second, if the store wrote files
//! since, it syncs their file system and forgets their `unflushed_files` rows (see
//! [`crate::unflushed`]). Saves never wait for it; dropping the store runs a last flush. After
//! each save it also makes a few empty files for the next saves to write into, so that no save
//! pays for creating one.

/// How many spare files the flusher keeps ready.
const SPARES: usize = 4;

use crate::unflushed::{forget_flushed, sync_file_system};
use crate::{SqlError, SqlStore};
use caf_core::store::Fs;
use caf_core::FileStore;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the flusher syncs, at most, by default.
pub(crate) const PERIOD: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct State {
    /// The newest row of a file this writer has put in place and not yet flushed.
    written: Option<i64>,
    /// How many rows this writer has numbered.
    numbered: i64,
    /// The first row of each reservation whose change is not on the file system yet: a flush
    /// must not forget it, nor any row after it (rows are forgotten up to a number).
    pending: std::collections::BTreeSet<i64>,
    stop: bool,
    /// A save happened since the spare files were last made.
    saved: bool,
    /// Why the last flush failed (its rows stay; the files are checked after a power loss).
    failed: Option<caf_core::Error>,
    /// Rows of saves whose commit's outcome is unknown (the connection was lost while
    /// committing): not forgotten, so that after a crash the next open still writes the file
    /// of one that went through.
    held: std::collections::BTreeSet<i64>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that the files up to row `upto` are in place and not flushed (again, after a
    /// flush that failed: the next one covers them).
    fn not_flushed(&self, upto: i64) {
        self.lock().note_written(upto);
    }

    /// See [`Flusher::reserve`].
    fn reserve(&self, count: usize) -> Reserved<'_> {
        let mut st = self.lock();
        let first = st.numbered + 1;
        st.numbered += i64::try_from(count.max(1)).unwrap_or(i64::MAX);
        let last = st.numbered;
        st.pending.insert(first);
        Reserved {
            shared: self,
            first,
            last,
        }
    }
}

impl State {
    /// Notes that the files up to row `upto` are in place, not flushed.
    fn note_written(&mut self, upto: i64) {
        self.written = Some(self.written.map_or(upto, |w| w.max(upto)));
    }

    /// The rows a flush now may forget, up to which (`None`: none), taking them from
    /// `written`: those in place, below every row still pending and every row held.
    fn take_flushable(&mut self) -> Option<i64> {
        let written = self.written?;
        let first_kept = [self.pending.first().copied(), self.held.first().copied()]
            .into_iter()
            .flatten()
            .min();
        let upto = first_kept.map_or(written, |first| written.min(first - 1));
        if upto == written {
            self.written = None;
        }
        (upto > 0).then_some(upto)
    }
}

/// Rows numbered for one save or delete ([`Flusher::reserve`]) whose change is not on the file
/// system yet. Dropped without [`Reserved::done`], it is released (the change failed).
#[derive(Debug)]
pub(crate) struct Reserved<'a> {
    shared: &'a Shared,
    /// The first row.
    pub first: i64,
    /// The last row.
    pub last: i64,
}

impl Reserved<'_> {
    /// The change is on the file system (unflushed): its rows may go at the next flush.
    pub fn done(self) {
        let mut st = self.shared.lock();
        st.note_written(self.last);
        st.saved = true;
        drop(st);
        self.shared.wake.notify_one();
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.shared.lock().pending.remove(&self.first);
    }
}

/// What the flusher needs to flush: the directory, the database, and whose rows to forget.
#[derive(Debug)]
pub(crate) struct Target<F: Fs> {
    /// The files (the flusher also makes spare files for the next saves).
    pub files: Arc<FileStore<F>>,
    pub sql: Arc<SqlStore>,
    pub writer: i64,
    /// How often, at most, to sync.
    pub period: Duration,
}

impl<F: Fs> Clone for Target<F> {
    fn clone(&self) -> Self {
        Self {
            files: Arc::clone(&self.files),
            sql: Arc::clone(&self.sql),
            writer: self.writer,
            period: self.period,
        }
    }
}

impl<F: Fs> Target<F> {
    /// Syncs the file system, then forgets the rows up to `upto`.
    fn flush(&self, upto: i64) -> caf_core::Result<()> {
        sync_file_system(self.files.fs(), self.files.root())?;
        self.sql
            .with_conn(|c| forget_flushed(c, self.writer, upto))
            .map(|_| ())
            .map_err(|e| SqlError::query(self.sql.backend(), "forgetting flushed files")(e).into())
    }
}

/// A running flusher thread.
#[derive(Debug)]
pub(crate) struct Flusher<F: Fs> {
    shared: Arc<Shared>,
    target: Target<F>,
    thread: Option<JoinHandle<()>>,
}

impl<F: Fs> Flusher<F> {
    /// Starts the thread.
    pub fn start(target: Target<F>) -> Self {
        let shared = Arc::new(Shared::default());
        let thread = {
            let (shared, target) = (Arc::clone(&shared), target.clone());
            std::thread::Builder::new()
                .name("caf-flusher".into())
                .spawn(move || run(&shared, &target))
                .ok()
        };
        Self {
            shared,
            target,
            thread,
        }
    }

    /// Numbers `count` rows (at least one) for a save or a delete about to record them in its
    /// transaction: until the change is on the file system ([`Reserved::done`]) or has failed
    /// (dropped), no flush forgets them or any later row, so that a flush cannot forget the
    /// record of a file another thread has committed and not yet put in place.
    pub fn reserve(&self, count: usize) -> Reserved<'_> {
        self.shared.reserve(count)
    }

    /// Keeps the row `seq` (a save whose commit's outcome is unknown) until [`Flusher::release`].
    pub fn hold(&self, seq: i64) {
        self.shared.lock().held.insert(seq);
    }

    /// Lets the held rows be forgotten: the store has settled their saves.
    pub fn release(&self) {
        let mut st = self.shared.lock();
        if !st.held.is_empty() {
            st.held.clear();
            drop(st);
            self.shared.wake.notify_one();
        }
    }

    /// Flushes now, on the caller's thread; also reports a background flush that failed since
    /// the last call.
    pub fn flush_now(&self) -> caf_core::Result<()> {
        let (upto, failed) = {
            let mut st = self.shared.lock();
            (st.take_flushable(), st.failed.take())
        };
        if let Some(upto) = upto {
            if let Err(e) = self.target.flush(upto) {
                self.shared.not_flushed(upto);
                return Err(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Stops the thread without a last flush.
    #[cfg(feature = "test-support")]
    pub fn abandon(&mut self) {
        self.forget_written();
        self.stop();
    }

    /// Forgets the files written since the last flush, so that no later flush forgets their
    /// records (a power cut's view, for tests).
    #[cfg(feature = "test-support")]
    pub fn forget_written(&self) {
        self.shared.lock().written = None;
    }

    /// Stops the thread after a last flush.
    pub fn stop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl<F: Fs> Drop for Flusher<F> {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run<F: Fs>(shared: &Shared, target: &Target<F>) {
    let mut last = Instant::now();
    loop {
        // Spare files for the next saves; a failure only means saves create their own.
        let _ = target.files.make_spares(SPARES);
        let (upto, stop) = {
            let mut st = shared.lock();
            loop {
                if st.stop {
                    break (st.take_flushable(), true);
                }
                if st.saved {
                    // A save used a spare file: make another first.
                    st.saved = false;
                    break (None, false);
                }
                if st.written.is_some() {
                    let wait = target.period.saturating_sub(last.elapsed());
                    if wait.is_zero() {
                        match st.take_flushable() {
                            Some(upto) => break (Some(upto), false),
                            // Every row is behind one still pending: a period more.
                            None => {
                                last = Instant::now();
                                continue;
                            }
                        }
                    }
                    st = shared
                        .wake
                        .wait_timeout(st, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                } else {
                    st = shared.wake.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            }
        };
        if let Some(upto) = upto {
            if let Err(e) = target.flush(upto) {
                if !stop {
                    shared.not_flushed(upto);
                }
                shared.lock().failed = Some(e);
            }
            last = Instant::now();
        }
        if stop {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_forgets_only_rows_below_every_pending_one() {
        let mut st = State::default();
        assert_eq!(st.take_flushable(), None, "nothing written");
        st.written = Some(5);
        st.pending.insert(3);
        assert_eq!(st.take_flushable(), Some(2), "row 3 is not in place yet");
        assert_eq!(st.written, Some(5), "rows 3 to 5 wait for the next flush");
        st.pending.clear();
        assert_eq!(st.take_flushable(), Some(5));
        assert_eq!(st.written, None);
        st.written = Some(2);
        st.pending.insert(1);
        assert_eq!(st.take_flushable(), None, "row 1, the first, is pending");
    }

    #[test]
    fn a_reservation_is_pending_until_done_or_dropped() {
        let shared = Shared::default();
        let a = shared.reserve(1);
        let b = shared.reserve(3);
        assert_eq!((a.first, a.last, b.first, b.last), (1, 1, 2, 4));
        b.done();
        assert_eq!(shared.lock().take_flushable(), None, "row 1 is pending");
        drop(a); // its save failed
        assert_eq!(shared.lock().take_flushable(), Some(4));
        assert_eq!(shared.lock().take_flushable(), None, "taken");
    }
}
