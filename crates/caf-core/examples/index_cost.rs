#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]
use caf_core::store::{AtomicWriteOptions, FileStoreOptions};
use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, FileStore,
    RuntimeState,
};
fn main() {
    let dir = tempfile::tempdir().unwrap();
    let opts = FileStoreOptions {
        write: AtomicWriteOptions { durable: false },
        ..Default::default()
    };
    let store = FileStore::open_with(dir.path(), opts).unwrap();
    let manager = CheckpointManager::new(&store);
    let mut execs = Vec::new();
    for e in 0..20 {
        let mut state = RuntimeState::new(format!("agent-{e}"));
        execs.push(state.execution_id().clone());
        for s in 0..100 {
            state.add_thought("reasoning", format!("t{s}"), None);
            manager
                .checkpoint(
                    &mut state,
                    CheckpointOptions::new(CheckpointReason::StepCompleted),
                )
                .unwrap();
        }
    }
    let n = 20000;
    let t = std::time::Instant::now();
    for i in 0..n {
        std::hint::black_box(store.latest(&execs[i % 20]).unwrap());
    }
    println!(
        "latest (small files, 2000 entries): {:.1} µs",
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
    let ids: Vec<_> = execs
        .iter()
        .map(|e| store.latest(e).unwrap().unwrap().id)
        .collect();
    let t = std::time::Instant::now();
    for i in 0..n {
        std::hint::black_box(store.load(&ids[i % 20]).unwrap());
    }
    println!(
        "load (same files): {:.1} µs",
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
