//! Restores the latest checkpoint of each execution from a default-mode store (files plus
//! SQLite, journaled, as `caf bench --mode files+sqlite` opens it), for profiling the restore
//! path: `cargo run --release -p caf-sql --example hybrid_restore_profile -- [STEPS]
//! [EXECUTIONS] [ROUNDS]`.
//!
//! It saves `EXECUTIONS` executions (20 by default) of the agent-run workload (`STEPS` steps,
//! 100 by default) into a fresh store in a temporary directory, then restores the latest
//! checkpoint of every execution in turn, `ROUNDS` times (20 by default), and prints the
//! median per restore of the first round (what `caf bench` measures: each file once) and of
//! all the others, for the journaled store and for its file store alone; then the parts of a
//! restore, over the same files: reading the file, the fast path's parse with the checksum in
//! line, and with the checksum on the helper thread beside the parse.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use caf_core::workload::agent_run;
use caf_core::{CheckpointManager, CheckpointStore, ExecutionId, FileStore};
use caf_sql::{HybridStore, JournaledStore, SqlStore};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The medians, in µs, of the first round of restores and of the rounds after it.
fn rounds(store: &dyn CheckpointStore, execs: &[ExecutionId], rounds: usize) -> (f64, f64) {
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    for round in 0..rounds.max(2) {
        for e in execs {
            let t = Instant::now();
            std::hint::black_box(store.latest(e).unwrap().unwrap());
            let us = t.elapsed().as_secs_f64() * 1e6;
            if round == 0 { &mut first } else { &mut rest }.push(us);
        }
    }
    (median(first), median(rest))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().map_or(100, |s| s.parse().unwrap());
    let executions: usize = args.next().map_or(20, |s| s.parse().unwrap());
    let n: usize = args.next().map_or(20, |s| s.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let files = FileStore::open(dir.path().join("store")).unwrap();
    let hybrid = HybridStore::new(files, SqlStore::open(&url).unwrap()).unwrap();
    let manager = CheckpointManager::new(JournaledStore::open(hybrid).unwrap());
    let execs: Vec<ExecutionId> = (0..executions.max(1))
        .map(|e| {
            agent_run(&manager, &format!("profile-agent-{e}"), steps)
                .unwrap()
                .0
        })
        .collect();
    let store = manager.store();
    let (first, rest) = rounds(store, &execs, n);
    println!("journaled store: first round {first:.0} µs, later rounds {rest:.0} µs");
    let files = store.settled_hybrid().files();
    let (first, rest) = rounds(files, &execs, n);
    println!("its file store:  first round {first:.0} µs, later rounds {rest:.0} µs");
    parts(files, &execs, n);
}

/// The medians, in µs, of reading each execution's newest file, and of decoding it on the fast
/// path with the checksum in line and beside the parse.
fn parts<F: caf_core::store::Fs>(files: &FileStore<F>, execs: &[ExecutionId], rounds: usize) {
    let paths: Vec<_> = execs
        .iter()
        .map(|e| {
            let c = files.latest(e).unwrap().unwrap();
            files.path_of(&c.id)
        })
        .collect();
    let limits = caf_core::format::Limits::default();
    let (mut read, mut inline, mut beside) = (Vec::new(), Vec::new(), Vec::new());
    let mut reread = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..rounds.max(1) {
        for path in &paths {
            let t = Instant::now();
            buf.clear();
            std::io::Read::read_to_end(&mut std::fs::File::open(path).unwrap(), &mut buf).unwrap();
            reread.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now();
            let bytes = std::fs::read(path).unwrap();
            read.push(t.elapsed().as_secs_f64() * 1e6);
            let known = caf_core::store::stated_integrity(&bytes).unwrap();
            let t = Instant::now();
            std::hint::black_box(caf_core::format::decode_known(&bytes, &limits, &known).unwrap());
            inline.push(t.elapsed().as_secs_f64() * 1e6);
            let shared = std::sync::Arc::new(bytes);
            let t = Instant::now();
            std::hint::black_box(
                caf_core::format::decode_known_shared(&shared, &limits, &known).unwrap(),
            );
            beside.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    println!("read into a buffer kept: {:.0} µs", median(reread));
    println!(
        "parts: read {:.0} µs, decode (checksum in line) {:.0} µs, decode (checksum beside) {:.0} µs",
        median(read),
        median(inline),
        median(beside)
    );
}
