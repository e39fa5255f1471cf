//! Where io_uring does not exist: an appender that cannot be opened.

use crate::Waited;
use std::io;
use std::path::Path;

/// Durable appends through io_uring: not on this platform ([`DirectAppender::open`] fails).
#[derive(Debug)]
pub struct DirectAppender {
    never: std::convert::Infallible,
}

impl DirectAppender {
    /// Fails: io_uring is Linux's.
    pub fn open(_path: &Path) -> io::Result<Self> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "direct appends need Linux's io_uring",
        ))
    }

    /// Never called (no appender exists).
    pub fn forget(&mut self) {
        match self.never {}
    }

    /// Never called (no appender exists).
    pub fn append_then(
        &mut self,
        _at: u64,
        _parts: &[&[u8]],
        _meanwhile: impl FnOnce(),
    ) -> io::Result<Waited> {
        match self.never {}
    }
}
