//! [`Summary`]: what a watch session captured, read back from its checkpoints
//! ([`summarize`]), and [`format_duration`] (seed 003's `formatDuration`).

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::format::Checkpoint;
use crate::id::{CheckpointId, ExecutionId};
use crate::store::{CheckpointStore, ListFilter};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// A duration in milliseconds as people read it: hours and minutes (`"1h 30m"`), minutes and
/// seconds (`"1m 30s"`), or seconds (`"5s"`), like seed 003's `formatDuration`.
///
/// ```
/// use caf_core::capture::format_duration;
///
/// assert_eq!(format_duration(5_400_000), "1h 30m");
/// assert_eq!(format_duration(90_000), "1m 30s");
/// assert_eq!(format_duration(5_000), "5s");
/// ```
pub fn format_duration(ms: u64) -> String {
    let hours = ms / 3_600_000;
    let minutes = ms % 3_600_000 / 60_000;
    let seconds = ms % 60_000 / 1_000;
    if hours > 0 {
        format!("{hours}h {minutes}m")
    } else if minutes > 0 {
        format!("{minutes}m {seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// Git counts of one capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitCounts {
    /// Files modified in the work tree.
    pub modified: u64,
    /// Files staged.
    pub staged: u64,
    /// Untracked files.
    pub untracked: u64,
}

/// One capture of a session, in a [`Summary`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureRow {
    /// Its number in the session (1, 2, 3, …).
    pub number: u64,
    /// Its checkpoint.
    pub id: CheckpointId,
    /// When.
    pub timestamp: Timestamp,
    /// Milliseconds since the session started.
    pub duration_ms: u64,
    /// What caused it: `start`, `interval`, `exit`, `stop` or `manual`.
    pub trigger: String,
    /// Files modified since the session started, so far.
    pub files_modified: u64,
    /// The git status counts, when the git probe read them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<GitCounts>,
    /// Files in the state directory, when it was scanned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_dir_files: Option<u64>,
    /// The probes that failed, with their errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<(String, String)>,
}

/// A watch session: how many captures, how long, which files were modified, and each capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The session (the execution its captures belong to).
    pub session: ExecutionId,
    /// How many captures were saved.
    pub total: u64,
    /// Milliseconds from the session's start to its last capture.
    pub total_duration_ms: u64,
    /// [`format_duration`] of it.
    pub total_duration: String,
    /// Every file modified during the session (as far as the captures listed them).
    pub files_modified: Vec<String>,
    /// How the watched command ended, from the last capture (`null` while it runs, or
    /// without one).
    pub command: Value,
    /// Each capture, oldest first.
    pub captures: Vec<CaptureRow>,
}

/// The number of a capture checkpoint (`context.variables.capture`), if it is one.
pub(super) fn capture_number(c: &Checkpoint) -> Option<u64> {
    c.snapshot.context.variables.get("capture")?.as_u64()
}

/// What a capture checkpoint says of itself.
fn row_of(c: &Checkpoint) -> Option<CaptureRow> {
    let number = capture_number(c)?;
    let vars = &c.snapshot.context.variables;
    let state = &c.snapshot.context.state;
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    let git = state
        .get("git")
        .filter(|g| g.get("error").is_none())
        .map(|g| GitCounts {
            modified: count(&g["modified_count"]),
            staged: count(&g["staged_count"]),
            untracked: count(&g["untracked_count"]),
        });
    let state_dir_files = state
        .get("state_dir")
        .and_then(|s| s.get("count"))
        .and_then(Value::as_u64);
    let errors = state
        .iter()
        .filter_map(|(name, v)| Some((name.clone(), v.get("error")?.as_str()?.to_string())))
        .collect();
    Some(CaptureRow {
        number,
        id: c.id.clone(),
        timestamp: c.timestamp,
        duration_ms: c.metadata.duration_ms,
        trigger: vars
            .get("trigger")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        files_modified: state
            .get("files_modified")
            .map_or(0, |f| count(&f["count"])),
        git,
        state_dir_files,
        errors,
    })
}

/// The files a capture lists as modified since the session started.
fn files_of(c: &Checkpoint) -> impl Iterator<Item = String> + '_ {
    c.snapshot
        .context
        .state
        .get("files_modified")
        .and_then(|f| f["files"].as_array())
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
}

impl Summary {
    /// The summary of a session's captures, oldest first.
    pub fn of(session: &ExecutionId, captures: &[Checkpoint]) -> Summary {
        let mut rows: Vec<CaptureRow> = captures.iter().filter_map(row_of).collect();
        rows.sort_by_key(|r| (r.number, r.timestamp));
        let files: BTreeSet<String> = captures.iter().flat_map(files_of).collect();
        let last = captures
            .iter()
            .filter(|c| capture_number(c).is_some())
            .max_by_key(|c| (capture_number(c), c.timestamp));
        let total_duration_ms = last.map_or(0, |c| c.metadata.duration_ms);
        Summary {
            session: session.clone(),
            total: rows.len() as u64,
            total_duration_ms,
            total_duration: format_duration(total_duration_ms),
            files_modified: files.into_iter().collect(),
            command: last
                .and_then(|c| c.snapshot.context.state.get("command"))
                .cloned()
                .unwrap_or(Value::Null),
            captures: rows,
        }
    }
}

/// The captures of session `session` in `store` (the checkpoints of the execution that are
/// captures), oldest first.
pub(super) fn captures_of(
    store: &dyn CheckpointStore,
    session: &ExecutionId,
) -> Result<Vec<Checkpoint>> {
    let listed = store.list(&ListFilter::execution(session))?;
    let mut captures = Vec::with_capacity(listed.len());
    for s in listed.iter().rev() {
        let c = store.load(&s.id)?;
        if capture_number(&c).is_some() {
            captures.push(c);
        }
    }
    Ok(captures)
}

/// The summary of session `session` from the captures `store` holds. A session cut short (a
/// crash, a kill) has a summary too: of the captures it saved. [`Error::NotFound`] if the store
/// has no capture of it.
pub fn summarize(store: &dyn CheckpointStore, session: &ExecutionId) -> Result<Summary> {
    let captures = captures_of(store, session)?;
    if captures.is_empty() {
        return Err(Error::NotFound {
            what: "watch session",
            id: session.to_string(),
        });
    }
    Ok(Summary::of(session, &captures))
}

/// The newest watch session in `store`: the execution of the newest checkpoint saved by
/// `agent` (periodic capture saves as [`super::AGENT_ID`] unless told otherwise).
pub fn latest_session(store: &dyn CheckpointStore, agent: &str) -> Result<Option<ExecutionId>> {
    let filter = ListFilter {
        agent_id: Some(agent.to_string()),
        limit: Some(1),
        ..ListFilter::default()
    };
    Ok(store
        .list(&filter)?
        .into_iter()
        .next()
        .map(|s| s.execution_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_seed_003() {
        for (ms, text) in [
            (5_400_000, "1h 30m"),
            (90_000, "1m 30s"),
            (5_000, "5s"),
            (0, "0s"),
            (999, "0s"),
            (3_600_000, "1h 0m"),
            (60_000, "1m 0s"),
            (86_400_000 + 61_000, "24h 1m"),
        ] {
            assert_eq!(format_duration(ms), text, "{ms}");
        }
    }
}
