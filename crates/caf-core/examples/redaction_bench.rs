//! What redaction costs per save, on the agent-run workload:
//! `cargo run --release -p caf-core --features test-support --example redaction_bench -- [EXECUTIONS]`.
//!
//! For EXECUTIONS (default 20) executions of 100 steps it builds each step's checkpoint, then
//! times, per save: redacting it with a fresh redactor (a scan of the whole checkpoint), with
//! the redactor a store keeps (only new or changed items scanned, the rest compared), and a
//! whole `FileStore` save (not flushed, so that the disk does not drown the difference) with
//! redaction on and off. The same again on a variant in which every tenth step leaves a secret
//! (an API key in a tool result, a password variable), so that those saves write a redacted
//! copy. Prints medians in microseconds, overall and at the median and the largest size.
//!
//! The store's redactor is timed three more ways, since a save in `caf bench` follows a flush
//! and runs on a core that other threads' work and the wait have left cold: each call after a
//! 250 µs sleep, after a 4 KiB page appended and flushed (as the bench's page floor does), and
//! after 8 MiB written through the core's caches; and so is a copy of the checkpoint after a
//! flush (what a store that keeps its own copy pays for it).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use caf_core::redact::{RedactionRules, Redactor};
use caf_core::store::{AtomicWriteOptions, FileStoreOptions};
use caf_core::workload::agent_run_step;
use caf_core::{
    Checkpoint, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, FileStore,
    MemoryStore, RuntimeState,
};
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

const STEPS: usize = 100;

/// The checkpoints of `executions` executions of the workload, in save order.
fn workload(executions: usize, secrets: bool) -> Vec<Checkpoint> {
    let manager = CheckpointManager::new(MemoryStore::new());
    let options = || CheckpointOptions::new(CheckpointReason::StepCompleted);
    let mut out = Vec::with_capacity(executions * STEPS);
    for _ in 0..executions {
        let mut state = RuntimeState::new("bench-agent");
        for s in 1..=STEPS {
            agent_run_step(&mut state, s).unwrap();
            if secrets && s % 10 == 0 {
                let key = format!("sk-proj-{}", "A1b2C3d4E5f6G7h8I9j0K1l2");
                let call = state.start_tool_call("vault", json!({"name": "openai"}));
                state
                    .complete_tool_call(&call, json!({"key": key}))
                    .unwrap();
                state.set_variable("db_password", json!(format!("pw-{s}")));
            }
            out.push(manager.prepare(&state, options()));
        }
    }
    out
}

/// The median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Microseconds of `f` on each checkpoint.
fn each(cps: &[Checkpoint], mut f: impl FnMut(&Checkpoint)) -> Vec<f64> {
    cps.iter()
        .map(|c| {
            let start = Instant::now();
            f(c);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect()
}

/// Microseconds of `f` on each checkpoint, `before` run untimed before each.
fn each_after(
    cps: &[Checkpoint],
    mut before: impl FnMut(),
    mut f: impl FnMut(&Checkpoint),
) -> Vec<f64> {
    cps.iter()
        .map(|c| {
            before();
            let start = Instant::now();
            f(c);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect()
}

/// The store's redactor, and a copy of the checkpoint, on a cold core (see the module docs).
fn cold(cps: &[Checkpoint]) {
    let dir = tempfile::tempdir().unwrap();
    let mut page = std::fs::File::create(dir.path().join("floor")).unwrap();
    let mut flush = || {
        page.write_all(&[0x5a; 4096]).unwrap();
        page.sync_data().unwrap();
    };
    let slept = Redactor::default();
    report(
        "the same, each after a 250 us sleep",
        &each_after(
            cps,
            || std::thread::sleep(Duration::from_micros(250)),
            |c| {
                std::hint::black_box(slept.redact(c));
            },
        ),
    );
    let flushed = Redactor::default();
    report(
        "the same, each after a page flushed",
        &each_after(cps, &mut flush, |c| {
            std::hint::black_box(flushed.redact(c));
        }),
    );
    let mut sweep = vec![0u8; 8 << 20];
    let swept = Redactor::default();
    report(
        "the same, each after 8 MiB written",
        &each_after(
            cps,
            || {
                // One byte per cache line: every line of the buffer passes through the caches.
                for line in sweep.chunks_mut(64) {
                    line[0] = line[0].wrapping_add(1);
                }
                std::hint::black_box(&sweep);
            },
            |c| {
                std::hint::black_box(swept.redact(c));
            },
        ),
    );
    report(
        "checkpoint copied, after a page flushed",
        &each_after(cps, &mut flush, |c| {
            std::hint::black_box(c.clone());
        }),
    );
}

/// `median all | median at step 50 | median at step 100`.
fn report(label: &str, times: &[f64]) {
    let at = |step: usize| -> f64 {
        let mut v: Vec<f64> = times
            .iter()
            .enumerate()
            .filter(|(i, _)| i % STEPS == step - 1)
            .map(|(_, t)| *t)
            .collect();
        median(&mut v)
    };
    let mut all = times.to_vec();
    println!(
        "{label:<44} {:>9.1} {:>9.1} {:>9.1}",
        median(&mut all),
        at(50),
        at(100)
    );
}

fn saves(cps: &[Checkpoint], rules: RedactionRules) -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    let options = FileStoreOptions {
        write: AtomicWriteOptions { durable: false },
        ..FileStoreOptions::default()
    };
    let mut store = FileStore::open_with(dir.path(), options).unwrap();
    store.set_redaction(rules);
    each(cps, |c| {
        store.save(c).unwrap();
    })
}

fn main() {
    let start = Instant::now();
    let compiled = RedactionRules::new();
    println!(
        "building the built-in rules: {:.1} us (once per process; later stores clone them)",
        start.elapsed().as_secs_f64() * 1e6
    );
    drop(compiled);
    let executions: usize = std::env::args().nth(1).map_or(20, |a| a.parse().unwrap());
    for secrets in [false, true] {
        let cps = workload(executions, secrets);
        println!(
            "\n{} executions x {STEPS} steps, {}; microseconds per save",
            executions,
            if secrets {
                "a secret every tenth step"
            } else {
                "no secrets"
            }
        );
        println!(
            "{:<44} {:>9} {:>9} {:>9}",
            "", "median", "step 50", "step 100"
        );
        let rules = RedactionRules::new();
        report(
            "redact, fresh redactor (scan everything)",
            &each(&cps, |c| {
                std::hint::black_box(Redactor::new(rules.clone()).redact(c));
            }),
        );
        let kept = Redactor::default();
        report(
            "redact, the store's redactor (remembers)",
            &each(&cps, |c| {
                std::hint::black_box(kept.redact(c));
            }),
        );
        cold(&cps);
        // Five rounds alternating the two modes, so that both see the same machine; each
        // save's best time over the rounds (a shared machine adds noise, never speed).
        let best = |acc: Option<Vec<f64>>, run: Vec<f64>| -> Option<Vec<f64>> {
            Some(match acc {
                None => run,
                Some(a) => a.iter().zip(&run).map(|(x, y)| x.min(*y)).collect(),
            })
        };
        let (mut off, mut on) = (None, None);
        for _ in 0..5 {
            on = best(on, saves(&cps, RedactionRules::new()));
            off = best(off, saves(&cps, RedactionRules::disabled()));
        }
        report(
            "FileStore save, not flushed, redaction off",
            &off.unwrap_or_default(),
        );
        report(
            "FileStore save, not flushed, redaction on",
            &on.unwrap_or_default(),
        );
    }
}
