//! The rows floor of the SQL modes: the least a save's rows cost in SQLite on this machine
//! ([`caf_sql::RowsFloor`]: the same rows, the store's own statements, in tables without keys
//! or indexes, nothing closed or checked), measured on the same workload in the same run,
//! right after the mode, so that the mode's SQL part can be set beside it.

use super::floor::AppendFloor;
use super::stats::{median, median_of, rounded};
use super::workload::{step, NullStore};
use crate::Failure;
use caf_core::format::encode;
use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};
use caf_sql::RowsFloor;
use std::path::Path;

/// The floor's medians: every save, save #10 of each execution, the last of each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RowsFloorFigures {
    pub all_us: f64,
    pub at_10_us: Option<f64>,
    pub at_last_us: f64,
}

/// Runs the workload (`executions` × `steps`) again and writes each checkpoint's rows into a
/// rows floor made in `dir`. As a save's SQL part follows the flush of the save before, each
/// floor write follows a flush (one 4 KiB page appended, untimed), then the step's work and
/// the checkpoint's encoding, as in the mode's own loop.
pub(super) fn measure(
    dir: &Path,
    executions: u32,
    steps: u32,
) -> Result<RowsFloorFigures, Failure> {
    let fail = |e: caf_sql::SqlError| Failure::msg(format!("bench: the rows floor: {e}"));
    let mut floor = RowsFloor::create(&dir.join("rows-floor.db")).map_err(fail)?;
    let mut flush = AppendFloor::open(dir.join("rows-floor-flush.bin"))?;
    let one_page = [0x5a_u8; 4096];
    let maker = CheckpointManager::new(NullStore);
    let (mut all, mut at_10, mut at_last) = (Vec::new(), Vec::new(), Vec::new());
    for e in 0..executions {
        let mut state = RuntimeState::new(format!("bench-agent-{e}"));
        for s in 1..=steps as usize {
            flush.append(&one_page)?;
            step(&mut state, s)?;
            let c = maker.checkpoint(
                &mut state,
                CheckpointOptions::new(CheckpointReason::StepCompleted),
            )?;
            let bytes = encode(&c).map_err(|e| Failure::msg(e.to_string()))?;
            let us = floor.write(&c, &bytes).map_err(fail)?.as_secs_f64() * 1e6;
            all.push(us);
            if s == 10 {
                at_10.push(us);
            }
            if s == steps as usize {
                at_last.push(us);
            }
        }
    }
    Ok(RowsFloorFigures {
        all_us: rounded(median(&mut all)),
        at_10_us: median_of(&mut at_10),
        at_last_us: rounded(median(&mut at_last)),
    })
}
