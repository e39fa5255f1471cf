//! Durable appends written straight to the disk, while the caller goes on working.
//!
//! A journal record is durable once the disk holds it: written, then the device's cache
//! flushed. With `write` and `fdatasync` the writing thread sleeps through both, so whatever
//! else a save has to do during them must go to another thread, and waking a thread on
//! another CPU costs its waker several microseconds (on a 2-vCPU virtual machine, ~13 µs, a
//! tenth of a fast flush: docs/benchmarks.md).
//!
//! [`DirectAppender`] hands the kernel the record's pages in one `O_DIRECT` write with
//! `RWF_DSYNC`, through io_uring: the write's submission starts the disk's work (on an overwrite
//! of blocks already written no metadata changes, so ext4 issues it from the submitting thread,
//! and the device's cache flush follows from the disk's completion), and returns at once. The
//! caller runs its own work, then waits for the completion. Measured on this project's machine
//! (a probe of 500 appends of one page, 80 µs of work each): ~235 µs per append against ~295
//! with `write`, a helper thread woken for the work, and `fdatasync`.
//!
//! `O_DIRECT` writes whole, aligned pages, so an append rewrites the part of its first page
//! before it (the bytes already there, as this appender last wrote them or as read back) and
//! fills the rest of its last page with zeros. The file must hold the pages already (written in
//! full, as a journal slot is when it is made): the write then changes no metadata, and
//! `RWF_DSYNC` makes it durable as `fdatasync` would.
//!
//! Where the kernel or the file system cannot (no io_uring, as in some containers; a file
//! system without `O_DIRECT`; not Linux), [`DirectAppender::open`] fails and the caller writes as
//! before.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::DirectAppender;

#[cfg(not(target_os = "linux"))]
mod other;
#[cfg(not(target_os = "linux"))]
pub use other::DirectAppender;

/// The unit an appender writes in: appends are written as whole pages of this size, at
/// offsets that are multiples of it.
pub const PAGE: usize = 4096;

/// Whether an append's caller waited for the disk after its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The disk was still at it when the caller's work ended: the append took as long as the
    /// disk did.
    ForTheDisk,
    /// The disk had finished before the caller's work did.
    No,
}
