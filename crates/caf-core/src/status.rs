//! [`ExecutionStatus`]: where an execution stands, as its newest checkpoint tells it.

use crate::format::CheckpointReason;
use serde::{Deserialize, Serialize};

/// Where an execution stands, from the reason of its newest checkpoint: `completed` →
/// completed, `error` → failed, `paused` → paused, anything else → running.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Checkpoints are still being taken (or the process died: nothing says it finished).
    #[default]
    Running,
    /// Paused on purpose (cancelled, waiting for a person); it can resume.
    Paused,
    /// Finished.
    Completed,
    /// Stopped by an error; it can resume from its last good step.
    Failed,
}

impl ExecutionStatus {
    /// The status of an execution whose newest checkpoint was taken for `reason`.
    pub fn from_reason(reason: &CheckpointReason) -> Self {
        match reason {
            CheckpointReason::Completed => Self::Completed,
            CheckpointReason::Error => Self::Failed,
            CheckpointReason::Paused => Self::Paused,
            _ => Self::Running,
        }
    }

    /// The status as written in the database and in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// Whether a run in this status can be resumed (anything but completed).
    pub fn is_resumable(self) -> bool {
        self != Self::Completed
    }

    /// Whether the run has ended (completed or failed).
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }
}

impl std::fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ExecutionStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "running" => Ok(Self::Running),
            "paused" => Ok(Self::Paused),
            "completed" => Ok(Self::Completed),
            "failed" => Ok(Self::Failed),
            other => Err(format!("unknown execution status {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_reason_and_back() {
        for (r, s) in [
            (CheckpointReason::Completed, ExecutionStatus::Completed),
            (CheckpointReason::Error, ExecutionStatus::Failed),
            (CheckpointReason::Paused, ExecutionStatus::Paused),
            (CheckpointReason::StepCompleted, ExecutionStatus::Running),
            (
                CheckpointReason::Other("x".into()),
                ExecutionStatus::Running,
            ),
        ] {
            assert_eq!(ExecutionStatus::from_reason(&r), s);
            assert_eq!(s.as_str().parse::<ExecutionStatus>(), Ok(s));
        }
        assert!(!ExecutionStatus::Completed.is_resumable());
        assert!(ExecutionStatus::Failed.is_resumable());
    }
}
