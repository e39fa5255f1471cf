//! `caf stats --metrics`: the store's metrics in the Prometheus text format, computed from the
//! checkpoints and tombstones it holds (`caf_core::metrics::StoreMetrics`).

use crate::output;
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_core::metrics::{prometheus, StoreMetrics};

/// Prints the metrics of the store (or, with `--json`, the same figures as JSON).
pub fn run(t: &Target, json: bool) -> CmdResult {
    let store = t.open_existing()?;
    let m = StoreMetrics::of(&**store).map_err(Failure::from)?;
    if json {
        output::print_json(&m);
    } else {
        crate::say!("{}", prometheus::render(&m).trim_end());
    }
    Ok(())
}
