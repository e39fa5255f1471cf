//! Restores the latest checkpoint of an execution from a SQLite store many times, for profiling
//! the SQL restore path:
//! `cargo run --release -p caf-sql --example sql_restore_profile -- [STEPS] [N] [EXECUTIONS]`.
//!
//! It saves `EXECUTIONS` executions (1 by default) of the agent-run workload (`STEPS` steps, 100
//! by default) into a fresh SQLite database in a temporary directory, then times `latest` (of
//! each execution in turn, as `caf bench` restores them) and `load` of the last checkpoint
//! saved, `N` calls each (2,000 by default): the median and the best of 20 batches.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use caf_core::workload::agent_run;
use caf_core::{CheckpointManager, CheckpointStore};
use caf_sql::SqlStore;
use std::time::Instant;

fn per_call(n: usize, mut f: impl FnMut()) -> String {
    let each = (n / 20).max(1);
    let mut means: Vec<f64> = (0..20)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..each {
                f();
            }
            start.elapsed().as_secs_f64() * 1e6 / each as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    format!("{:.0} µs (best {:.0} µs)", means[means.len() / 2], means[0])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().map_or(100, |s| s.parse().unwrap());
    let n: usize = args.next().map_or(2000, |s| s.parse().unwrap());
    let executions: usize = args.next().map_or(1, |s| s.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("profile.db").display());
    let store = SqlStore::open(&url).unwrap();
    let manager = CheckpointManager::new(store);
    let (execs, last): (Vec<_>, Vec<_>) = (0..executions.max(1))
        .map(|e| agent_run(&manager, &format!("profile-agent-{e}"), steps).unwrap())
        .unzip();
    let store = manager.store();
    let id = last.into_iter().flatten().last().unwrap();
    let mut turn = execs.iter().cycle();
    println!(
        "latest: {}",
        per_call(n, || {
            let execution = turn.next().unwrap();
            std::hint::black_box(store.latest(execution).unwrap());
        })
    );
    println!(
        "load:   {}",
        per_call(n, || {
            std::hint::black_box(store.load(&id).unwrap());
        })
    );
}
