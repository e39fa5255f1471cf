//! Decodes one checkpoint file many times, for profiling restore-latest:
//! `cargo run --release -p caf-core --features test-support --example restore_profile -- [FILE] [N]
//! [latest]` (`-` for no FILE; `latest` times nothing but `FileStore::latest`, for a profiler).
//!
//! Without a FILE it makes the last checkpoint of one execution of the agent-run workload (100
//! steps, ~169 KB; the same steps as `caf_core::workload`, which needs a feature). It times the
//! full path ([`decode`]: strict parse, schema, checksum, typed), the fast path for content the
//! store's index knows ([`decode_known`], and [`decode_known_shared`], which hashes on a helper
//! thread while it parses), and a whole `FileStore::latest` (index lookup, file read, fast path),
//! back to back and after a pause each, and the SHA-256 of the bytes alone (the floor of a verified
//! restore).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use caf_core::format::{decode, decode_known, decode_known_shared, encode, fast_path, Limits};
use caf_core::store::stated_integrity;
use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, ExecutionId,
    FileStore, MemoryStore, RuntimeState,
};
use std::time::{Duration, Instant};

/// The CLI's allocator, so that the figures are the CLI's: where the helper thread allocates
/// what the caller frees, the system allocator and mimalloc differ most.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The checkpoint after `steps` steps of the agent-run workload.
fn agent_run(steps: usize) -> caf_core::Checkpoint {
    let manager = CheckpointManager::new(MemoryStore::new());
    let mut state = RuntimeState::new("profile-agent");
    for s in 1..=steps {
        caf_core::workload::agent_run_step(&mut state, s).unwrap();
    }
    let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
    manager.checkpoint(&mut state, options).unwrap()
}

/// Microseconds per call of `f`: the median and the best of `batches` batches of `each` calls,
/// each batch started after `pause` (the best is what an idle machine gives; the median, what
/// this one gave).
fn timed(batches: usize, each: usize, pause: Duration, mut f: impl FnMut()) -> String {
    let mut means: Vec<f64> = (0..batches.max(1))
        .map(|_| {
            std::thread::sleep(pause);
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

/// [`timed`] in 20 batches of `n / 20` calls, back to back.
fn per_call(n: usize, f: impl FnMut()) -> String {
    timed(20, (n / 20).max(1), Duration::ZERO, f)
}

/// A file store in a new temporary directory (kept while the first value lives) holding the
/// checkpoint of `bytes`, and that checkpoint's execution.
fn stored(bytes: &[u8], limits: &Limits) -> (tempfile::TempDir, FileStore, ExecutionId) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    let c = decode(bytes, limits).unwrap().checkpoint;
    store.save(&c).unwrap();
    (dir, store, c.execution_id)
}

/// Times `FileStore::latest` of the checkpoint of `bytes`, `n` calls, and prints it; the store
/// ([`stored`]) for more.
fn latest_timed(
    bytes: &[u8],
    limits: &Limits,
    n: usize,
) -> (tempfile::TempDir, FileStore, ExecutionId) {
    let (dir, store, execution) = stored(bytes, limits);
    let latest = per_call(n, || {
        std::hint::black_box(store.latest(&execution).unwrap().unwrap());
    });
    println!("FileStore::latest (read, fast path):  {latest}");
    (dir, store, execution)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let file = args.next().filter(|a| a != "-");
    let n: usize = args.next().map_or(2000, |s| s.parse().unwrap());
    let bytes = match &file {
        Some(path) => std::fs::read(path).unwrap(),
        None => encode(&agent_run(100)).unwrap(),
    };
    let limits = Limits::default();
    if args.next().as_deref() == Some("latest") {
        // Only `FileStore::latest`, for a profiler: `-- - N latest`.
        latest_timed(&bytes, &limits, n);
        return;
    }
    let full = per_call(n, || {
        std::hint::black_box(decode(&bytes, &limits).unwrap());
    });
    println!("{} bytes", bytes.len());
    let hash = per_call(n, || {
        use sha2::Digest;
        std::hint::black_box(sha2::Sha256::digest(&bytes));
    });
    println!("SHA-256 of the bytes alone:           {hash}");
    println!("decode (full path):                   {full}");
    if let Some(known) = stated_integrity(&bytes) {
        let applies = fast_path(&bytes, &limits, &known).is_some();
        println!("the fast path applies to this file:   {applies}");
        let fast = per_call(n, || {
            std::hint::black_box(decode_known(&bytes, &limits, &known).unwrap());
        });
        println!("decode_known (fast path):             {fast}");
        let shared = std::sync::Arc::new(bytes.clone());
        let beside = per_call(n, || {
            std::hint::black_box(decode_known_shared(&shared, &limits, &known).unwrap());
        });
        println!("decode_known_shared (hash beside):    {beside}");
    }
    if file.is_none() {
        let (_dir, store, execution) = latest_timed(&bytes, &limits, n);
        // As a program restores: once, after doing something else (the helper thread that
        // hashes beside the parse is asleep then, and is woken before the file is read).
        let idle = timed(n / 4, 1, Duration::from_micros(200), || {
            std::hint::black_box(store.latest(&execution).unwrap().unwrap());
        });
        println!("the same after 200 µs idle each:      {idle}");
    }
}
