//! The crate's error type.

use crate::format::{EncodeError, LoadError};
use crate::id::IdError;
use crate::runtime::StateError;
use std::path::PathBuf;

/// Anything that can go wrong in caf-core. Every variant names the file or id concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A checkpoint document could not be loaded.
    #[error("{origin}: {error}")]
    Load {
        /// The file path or checkpoint id.
        origin: String,
        /// Why.
        #[source]
        error: LoadError,
    },
    /// A checkpoint could not be encoded.
    #[error("{id}: {error}")]
    Encode {
        /// The checkpoint id.
        id: String,
        /// Why.
        #[source]
        error: EncodeError,
    },
    /// An id is not acceptable.
    #[error("{0}")]
    Id(#[from] IdError),
    /// No checkpoint (or execution) with this id.
    #[error("{what} {id} not found")]
    NotFound {
        /// `checkpoint` or `execution`.
        what: &'static str,
        /// The id.
        id: String,
    },
    /// A file-system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file system is full: nothing more could be written at `path` (the checkpoint file
    /// being saved, the index, a database). What the failed operation was writing is not in
    /// place, and what was there before is unchanged; once space is freed the same operation
    /// succeeds, with no repair step.
    #[error("{}: no space left on device (free some space and try again)", path.display())]
    NoSpace {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A path is not a regular file (a symlink, a directory, a device…), so caf will not read it.
    #[error("{}: not a regular file ({kind}); caf only reads regular files", path.display())]
    NotRegularFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Something caf keeps its own data in (`DIR/.caf/`, its staging directory, index, lock or
    /// database) is a symbolic link: caf refuses to read or write through it.
    #[error("{}: is a symbolic link; caf keeps its own data in the store's directory and does not follow links there (remove the link)", path.display())]
    LinkedInternal {
        /// The link.
        path: PathBuf,
    },
    /// A save that a background writer ([`crate::store::AsyncStore`]) could not write; the
    /// saves queued after it were not written either.
    #[error("the background save of checkpoint {id} failed: {source}{}", dropped_note(*dropped))]
    BackgroundSave {
        /// The checkpoint whose save failed.
        id: String,
        /// How many saves queued after it were dropped.
        dropped: usize,
        /// Why it failed.
        #[source]
        source: Box<Error>,
    },
    /// A state mutation referred to something that is not there.
    #[error(transparent)]
    State(#[from] StateError),
    /// A storage backend outside this crate failed (a database, for example the SQL stores of
    /// `caf-sql`): `backend` names it (`sqlite`, `postgres`, …), `message` says what failed in
    /// words a user can act on, and `source` is the backend's own error when there is one.
    #[error("{backend}: {message}")]
    Backend {
        /// Which backend (`sqlite`, `postgres`, …).
        backend: &'static str,
        /// What failed.
        message: String,
        /// The backend's own error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path` ([`Error::NoSpace`] when the file system is full).
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::StorageFull {
            return Self::NoSpace { path, source };
        }
        Self::Io { path, source }
    }

    /// A checkpoint that was not found.
    pub fn not_found(id: impl std::fmt::Display) -> Self {
        Self::NotFound {
            what: "checkpoint",
            id: id.to_string(),
        }
    }
}

fn dropped_note(dropped: usize) -> String {
    match dropped {
        0 => String::new(),
        1 => "; the save queued after it was not written".into(),
        n => format!("; the {n} saves queued after it were not written"),
    }
}
