//! Holding one operation back ([`TestFs::pause`](super::TestFs::pause)), to interleave threads
//! at a chosen point.

use super::OpKind;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Where a [`Pause`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Waiting,
    Paused,
    Resumed,
}

/// An operation held back ([`TestFs::pause`](super::TestFs::pause)), to interleave threads at a
/// chosen point.
#[derive(Clone)]
pub struct Pause {
    kind: OpKind,
    name: String,
    stage: Arc<(Mutex<Stage>, Condvar)>,
}

impl Pause {
    /// A pause for the next operation of `kind` on a file named `name`.
    pub(super) fn new(kind: OpKind, name: &str) -> Self {
        Self {
            kind,
            name: name.to_string(),
            stage: Arc::new((Mutex::new(Stage::Waiting), Condvar::new())),
        }
    }

    fn stage(&self) -> MutexGuard<'_, Stage> {
        self.stage.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until a thread is held at the operation (panics after a minute: it never came).
    pub fn wait_paused(&self) {
        let (_, cv) = &*self.stage;
        let (st, timeout) = cv
            .wait_timeout_while(self.stage(), std::time::Duration::from_secs(60), |s| {
                *s == Stage::Waiting
            })
            .unwrap_or_else(|p| p.into_inner());
        assert!(
            !timeout.timed_out() || *st != Stage::Waiting,
            "no {:?} of {} came",
            self.kind,
            self.name
        );
    }

    /// Lets the held operation go on.
    pub fn resume(&self) {
        *self.stage() = Stage::Resumed;
        self.stage.1.notify_all();
    }

    /// Holds the calling thread here if this is the operation to hold.
    pub(super) fn hold(&self, kind: OpKind, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if kind != self.kind || name != self.name {
            return false;
        }
        let mut st = self.stage();
        *st = Stage::Paused;
        self.stage.1.notify_all();
        while *st != Stage::Resumed {
            st = self.stage.1.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        true
    }
}
