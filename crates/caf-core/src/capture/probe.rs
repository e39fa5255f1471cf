//! [`Probe`]: one thing a periodic capture looks at (a git status, a directory, memory), and
//! [`ProbeError`], what a probe reports when it cannot look.

use serde_json::Value;
use std::path::PathBuf;

/// Why a probe could not take its reading. The capture records it (as `{"error": "…"}` under
/// the probe's name) and goes on: a failing probe never stops a watch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A program could not be started (`git` not installed, say).
    #[error("{program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A program ran and failed; `message` is the first line it wrote on stderr.
    #[error("{program} {args}: {message}")]
    Failed {
        /// The program.
        program: String,
        /// Its arguments, space-separated.
        args: String,
        /// What it said (or its exit status).
        message: String,
    },
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// What was read made no sense (a `/proc` file without the expected line, say).
    #[error("{what}: {message}")]
    Unexpected {
        /// What was read.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// The probe cannot work on this platform.
    #[error("{0} is not supported on this platform")]
    Unsupported(&'static str),
}

/// One thing a periodic capture looks at. Each reading is a JSON value that the capture keeps
/// in the checkpoint's context state under [`Probe::name`].
///
/// ```
/// use caf_core::capture::{Probe, ProbeError};
/// use serde_json::{json, Value};
///
/// /// Counts the lines of a log file.
/// struct LogLines(std::path::PathBuf);
///
/// impl Probe for LogLines {
///     fn name(&self) -> &str {
///         "log_lines"
///     }
///     fn read(&mut self) -> Result<Value, ProbeError> {
///         let text = std::fs::read_to_string(&self.0)
///             .map_err(|source| ProbeError::Io { path: self.0.clone(), source })?;
///         Ok(json!({"lines": text.lines().count()}))
///     }
/// }
/// ```
pub trait Probe: Send {
    /// The key of its readings in the context state (a short snake_case word such as `git`).
    fn name(&self) -> &str;

    /// Takes a reading.
    fn read(&mut self) -> Result<Value, ProbeError>;

    /// Whether a change in its readings is a change of the watched state, worth a capture of
    /// its own (the default). A probe of something that moves all the time (memory) says no:
    /// its readings are saved with the captures the other probes' changes cause.
    fn tracks_change(&self) -> bool {
        true
    }

    /// Called once, before the first reading, when a watch continues a session: `previous` is
    /// this probe's last reading in it. A probe that accumulates (files modified since the
    /// session started) picks up where it left off; the default ignores it.
    fn resume(&mut self, previous: &Value) {
        let _ = previous;
    }
}

/// What a failing probe leaves in the checkpoint: `{"error": "…"}`.
pub(super) fn error_reading(e: &ProbeError) -> Value {
    serde_json::json!({ "error": e.to_string() })
}
