//! The background flusher of a hybrid store: about once a second, if the store wrote files
//! since, it syncs their file system and forgets their `unflushed_files` rows (see
//! [`crate::unflushed`]). Saves never wait for it; dropping the store runs a last flush. After
//! each save it also makes a few empty files for the next saves to write into, so that no save
//! pays for creating one.

/// How many spare files the flusher keeps ready.
const SPARES: usize = 4;

use crate::unflushed::{forget_flushed, sync_file_system};
use crate::SqlStore;
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
    stop: bool,
    /// A save happened since the spare files were last made.
    saved: bool,
    /// Why the last flush failed (its rows stay; the files are checked after a power loss).
    failed: Option<String>,
    /// Rows of saves whose commit's outcome is unknown (the connection was lost while
    /// committing): not forgotten, so that after a crash the next open still writes the file
    /// of one that went through.
    held: std::collections::BTreeSet<i64>,
}

impl State {
    /// The newest row that may be forgotten once the file system is synced: up to the newest
    /// written, but below any held row (the rest waits for the next flush).
    fn take_flushable(&mut self) -> Option<i64> {
        let upto = self.written?;
        match self.held.first() {
            Some(&held) if held <= upto => (held > 1).then_some(held - 1),
            _ => self.written.take(),
        }
    }
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
}

/// What the flusher needs to flush: the directory, the database, and whose rows to forget.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The files (the flusher also makes spare files for the next saves).
    pub files: Arc<FileStore>,
    pub sql: Arc<SqlStore>,
    pub writer: i64,
    /// How often, at most, to sync.
    pub period: Duration,
}

impl Target {
    /// Syncs the file system, then forgets the rows up to `upto`.
    fn flush(&self, upto: i64) -> Result<(), String> {
        sync_file_system(self.files.root()).map_err(|e| e.to_string())?;
        self.sql
            .with_conn(|c| forget_flushed(c, self.writer, upto))
            .map(|_| ())
            .map_err(|e| format!("forgetting flushed files: {e}"))
    }
}

/// A running flusher thread.
#[derive(Debug)]
pub(crate) struct Flusher {
    shared: Arc<Shared>,
    target: Target,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Starts the thread.
    pub fn start(target: Target) -> Self {
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

    /// Notes that the file of row `seq` is in place.
    pub fn written(&self, seq: i64) {
        let mut st = self.shared.lock();
        st.written = Some(st.written.map_or(seq, |w| w.max(seq)));
        st.saved = true;
        drop(st);
        self.shared.wake.notify_one();
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
    pub fn flush_now(&self) -> Result<(), String> {
        let (upto, failed) = {
            let mut st = self.shared.lock();
            (st.take_flushable(), st.failed.take())
        };
        if let Some(upto) = upto {
            self.target.flush(upto)?;
        }
        failed.map_or(Ok(()), Err)
    }

    /// Stops the thread without a last flush.
    #[cfg(feature = "test-support")]
    pub fn abandon(&mut self) {
        self.shared.lock().written = None;
        self.stop();
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

impl Drop for Flusher {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(shared: &Shared, target: &Target) {
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
                        break (st.take_flushable(), false);
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
                shared.lock().failed = Some(e);
            }
            last = Instant::now();
        }
        if stop {
            return;
        }
    }
}
