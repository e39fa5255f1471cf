//! The crate's error type.

use crate::Backend;

/// Anything that can go wrong in the SQL layer. Every variant says which backend and what was
/// being done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// The database URL is not one caf understands (or names a backend this build lacks).
    #[error("database URL {url:?}: {reason}")]
    Url {
        /// The URL, with any password removed.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The database could not be opened or reached.
    #[error("{backend}: cannot connect to {target}: {}", one_line(.source))]
    Connect {
        /// The backend.
        backend: Backend,
        /// The URL or path, with any password removed.
        target: String,
        /// The driver's error.
        #[source]
        source: diesel::ConnectionError,
    },
    /// The embedded migrations could not be run.
    #[error("{backend}: running the schema migrations failed: {}", one_line(.source))]
    Migrate {
        /// The backend.
        backend: Backend,
        /// The migration harness's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A statement failed.
    #[error("{backend}: {context}: {}", one_line(.source))]
    Query {
        /// The backend.
        backend: Backend,
        /// What was being done (`saving ckpt_…`, `listing`, …).
        context: String,
        /// The database's error.
        #[source]
        source: diesel::result::Error,
    },
    /// The database's disk is full (SQLite: "database or disk is full"; PostgreSQL: the
    /// server could not extend a file): the transaction was rolled back, nothing of it was
    /// written. Once space is freed, the same operation succeeds.
    #[error("{target}: no space left on device ({backend}: {context}: {})", one_line(.source))]
    NoSpace {
        /// The backend.
        backend: Backend,
        /// The database: the SQLite file, or the PostgreSQL URL without its password.
        target: String,
        /// What was being done.
        context: String,
        /// The database's error.
        #[source]
        source: diesel::result::Error,
    },
    /// The database cannot be written (a read-only file, directory or file system): it was
    /// opened read-only, so what only reads works; nothing was written.
    #[error(
        "{target}: the database is read-only ({backend}: {context}: {reason}); nothing was written"
    )]
    ReadOnlyDatabase {
        /// The backend.
        backend: Backend,
        /// The database: the SQLite file.
        target: String,
        /// What was being done.
        context: String,
        /// What the database said.
        reason: String,
    },
    /// The connection was lost while a save was committing, so whether the commit went through
    /// is unknown. The save failed: if it did go through, the store takes the checkpoint out
    /// again on its next call (see [`crate::SqlStore`]), so that a failed save saved nothing.
    #[error("{backend}: checkpoint {id} was not saved: the connection was lost while committing ({source}); the next call reconnects")]
    CommitUnknown {
        /// The backend.
        backend: Backend,
        /// The checkpoint.
        id: String,
        /// The failed commit.
        #[source]
        source: Box<SqlError>,
    },
    /// A statement given to [`crate::SqlStore::read_only_sql`] tried to change the database and
    /// the read-only connection refused it.
    #[error("{backend}: refused by the read-only connection: {}", one_line(.source))]
    ReadOnly {
        /// The backend.
        backend: Backend,
        /// The database's own refusal.
        #[source]
        source: diesel::result::Error,
    },
    /// A statement given to [`crate::SqlStore::read_only_sql`] that reaches other files
    /// (SQLite `ATTACH`, `DETACH`, `VACUUM INTO`) was refused before it ran; or the read-only
    /// connection could not shed a superuser's privileges (PostgreSQL).
    #[error("{backend}: {reason}")]
    Refused {
        /// The backend.
        backend: Backend,
        /// Why.
        reason: String,
    },
    /// The text given to [`crate::SqlStore::read_only_sql`] is not exactly one statement
    /// (none, or several: SQLite would run only the first); nothing was run.
    #[error("{backend}: {reason}")]
    NotOneStatement {
        /// The backend.
        backend: Backend,
        /// How many statements the text holds.
        statements: usize,
        /// What to tell the user.
        reason: String,
    },
    /// No checkpoint (or execution) with this id.
    #[error("{what} {id} not found")]
    NotFound {
        /// `checkpoint` or `execution`.
        what: &'static str,
        /// The id.
        id: String,
    },
    /// Something stored in the database does not decode (edited by hand, or a bug).
    #[error("{backend}: stored {what} is damaged: {message}")]
    Corrupt {
        /// The backend.
        backend: Backend,
        /// What (`checkpoint ckpt_…`, …).
        what: String,
        /// Why.
        message: String,
    },
    /// A checkpoint could not be encoded, or a file could not be read (from caf-core).
    #[error(transparent)]
    Core(#[from] caf_core::Error),
}

/// A driver's message on one line: libpq ends its messages with a newline and continues some
/// on indented lines ("server closed the connection unexpectedly\n\tThis probably means …").
fn one_line(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    parts.join("; ")
}

/// `Result` with [`SqlError`].
pub type Result<T, E = SqlError> = std::result::Result<T, E>;

impl SqlError {
    /// A failed statement, with what was being done.
    pub(crate) fn query(
        backend: Backend,
        context: impl Into<String>,
    ) -> impl FnOnce(diesel::result::Error) -> Self {
        let context = context.into();
        move |source| Self::Query {
            backend,
            context,
            source,
        }
    }

    /// A failed statement that says the disk is full becomes [`SqlError::NoSpace`], one that
    /// says the database is read-only [`SqlError::ReadOnlyDatabase`], naming the database
    /// `target`; anything else is returned as it is.
    pub(crate) fn located(self, target: impl FnOnce() -> String) -> Self {
        match self {
            Self::Query {
                backend,
                context,
                source,
            } if says_disk_full(&source) => Self::NoSpace {
                backend,
                target: target(),
                context,
                source,
            },
            Self::Query {
                backend,
                context,
                source,
            } if source
                .to_string()
                .contains("attempt to write a readonly database") =>
            {
                Self::ReadOnlyDatabase {
                    backend,
                    target: target(),
                    context,
                    reason: source.to_string(),
                }
            }
            other => other,
        }
    }

    /// Whether a retry of the whole transaction may succeed (a lost race with another writer).
    pub(crate) fn is_retryable(&self) -> bool {
        use diesel::result::{DatabaseErrorKind, Error};
        match self {
            Self::Query {
                source: Error::DatabaseError(kind, info),
                ..
            } => {
                matches!(
                    kind,
                    DatabaseErrorKind::UniqueViolation | DatabaseErrorKind::SerializationFailure
                ) || info.message().contains("deadlock detected")
            }
            _ => false,
        }
    }
}

impl SqlError {
    /// The backend's name (`sqlite`, `postgres`), or `sql` when no backend is concerned.
    pub fn backend_name(&self) -> &'static str {
        match self {
            Self::Connect { backend, .. }
            | Self::Migrate { backend, .. }
            | Self::Query { backend, .. }
            | Self::NoSpace { backend, .. }
            | Self::CommitUnknown { backend, .. }
            | Self::ReadOnlyDatabase { backend, .. }
            | Self::ReadOnly { backend, .. }
            | Self::Refused { backend, .. }
            | Self::NotOneStatement { backend, .. }
            | Self::Corrupt { backend, .. } => backend.name(),
            Self::Url { .. } | Self::NotFound { .. } | Self::Core(_) => "sql",
        }
    }
}

/// Whether a database error says its disk is full: SQLite's `SQLITE_FULL` ("database or disk is
/// full"), PostgreSQL's `53100 disk_full` ("could not extend file …: No space left on device").
fn says_disk_full(e: &diesel::result::Error) -> bool {
    let text = e.to_string();
    text.contains("database or disk is full") || text.contains("No space left on device")
}

impl From<SqlError> for caf_core::Error {
    /// Not-found and core errors keep their meaning; everything else becomes
    /// [`caf_core::Error::Backend`] with this error as its source.
    fn from(e: SqlError) -> Self {
        match e {
            SqlError::NotFound { what, id } => caf_core::Error::NotFound { what, id },
            SqlError::Core(inner) => inner,
            other => {
                let backend = other.backend_name();
                let text = other.to_string();
                let message = text
                    .strip_prefix(backend)
                    .and_then(|t| t.strip_prefix(": "))
                    .unwrap_or(&text)
                    .to_string();
                caf_core::Error::Backend {
                    backend,
                    message,
                    source: Some(Box::new(other)),
                }
            }
        }
    }
}
