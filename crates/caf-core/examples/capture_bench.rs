//! What a periodic capture costs: `cargo run --release -p caf-core --example capture_bench --
//! [FILES] [N]`.
//!
//! Makes a git repository of FILES tracked files (default 500, in 25 directories), modifies 10,
//! stages 2, adds 5 untracked, and a state directory of 200 files; then times N (default 50)
//! readings of each probe (git status, files modified, the state directory, memory) and N
//! whole captures saved into a durable `FileStore` (`PeriodicCapture::capture` with
//! `save_unchanged`), and N captures of an unchanged state (probes read, nothing saved).
//! Prints the median and the minimum in microseconds. Needs `git` on the PATH.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use caf_core::capture::{
    FilesModified, GitStatus, PeriodicCapture, Probe, ProcessMemory, StateDir, Trigger,
};
use caf_core::FileStore;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// Median and minimum of `n` timings of `f`, in microseconds.
fn time(n: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0])
}

fn row(label: &str, (median, min): (f64, f64)) {
    println!("{label:<46} {median:>10.0} {min:>10.0}");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().map_or(500, |a| a.parse().unwrap());
    let n: usize = args.next().map_or(50, |a| a.parse().unwrap());

    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("project");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.email", "bench@example.com"]);
    git(&repo, &["config", "user.name", "bench"]);
    for i in 0..files {
        let dir = repo.join(format!("src/m{:02}", i % 25));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("// file {i}\n").repeat(40),
        )
        .unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "bench"]);
    for i in 0..10 {
        let path = repo.join(format!("src/m{:02}/f{i}.rs", i % 25));
        std::fs::write(path, "// changed\n").unwrap();
    }
    git(&repo, &["add", "src/m00/f0.rs", "src/m01/f1.rs"]);
    for i in 0..5 {
        std::fs::write(repo.join(format!("new{i}.txt")), "new").unwrap();
    }
    let state = tmp.path().join("state");
    for i in 0..200 {
        let dir = state.join(format!("d{}", i % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{i}.md")), "x".repeat(i * 10)).unwrap();
    }

    println!("capture cost: {files} tracked files, 10 modified, 2 staged, 5 untracked; a state directory of 200 files; {n} runs");
    println!("{:<46} {:>10} {:>10}", "microseconds", "median", "min");
    let mut status = GitStatus::new(&repo);
    row(
        "probe: git status (2 git processes)",
        time(n, || {
            std::hint::black_box(status.read().unwrap());
        }),
    );
    let mut modified = FilesModified::new(&repo);
    modified.mark_start().unwrap();
    row(
        "probe: files modified (2 git processes)",
        time(n, || {
            std::hint::black_box(modified.read().unwrap());
        }),
    );
    let mut dir = StateDir::new(&state);
    row(
        "probe: state directory (200 files)",
        time(n, || {
            std::hint::black_box(dir.read().unwrap());
        }),
    );
    let mut memory = ProcessMemory::new(Some(std::process::id()));
    row(
        "probe: memory (/proc, two processes)",
        time(n, || {
            std::hint::black_box(memory.read().unwrap());
        }),
    );

    for (label, save_unchanged) in [
        ("capture saved (all probes + durable save)", true),
        ("capture of an unchanged state (not saved)", false),
    ] {
        let store = FileStore::open(tmp.path().join(format!("store-{save_unchanged}"))).unwrap();
        let mut watch = PeriodicCapture::builder(store)
            .interval(Duration::from_secs(60))
            .save_unchanged(save_unchanged)
            .probe(GitStatus::new(&repo))
            .probe(FilesModified::new(&repo))
            .probe(StateDir::new(&state))
            .probe(ProcessMemory::new(Some(std::process::id())))
            .build()
            .unwrap();
        watch.start().unwrap();
        row(
            label,
            time(n, || {
                std::hint::black_box(watch.capture(Trigger::Manual).unwrap());
            }),
        );
    }
}
