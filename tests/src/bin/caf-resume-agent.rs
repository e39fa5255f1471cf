//! A small agent for the resume crash test (`tests/tests/resume_crash.rs`): it runs a plan of
//! 30 steps with the library's [`caf_core::Executor`] in `DIR`, each step appending one line
//! (`step N`) to `DIR/side-effects.log` and sleeping a little, and resumes from the latest valid
//! checkpoint when started again. The test kills it (SIGKILL) at random moments.
//!
//! Usage: `caf-resume-agent DIR`. Once it knows where it starts it appends `start RECOVERED` to
//! `DIR/runs.log`, and when it finishes `done recovered=R run=N`; on success it prints the final
//! checkpoint id.

use caf_core::{CheckpointManager, ExecutionId, Executor, FileStore, Step};
use std::io::Write;
use std::path::{Path, PathBuf};

const STEPS: usize = 30;

fn append(path: &Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    // One write of the whole line: a kill never leaves half of it (`writeln!` on a bare file
    // may write its pieces one by one, and the next run's line would join a torn one).
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_data()
}

fn main() -> std::process::ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: caf-resume-agent DIR");
        return std::process::ExitCode::from(2);
    };
    let run = || -> Result<String, String> {
        let store = FileStore::open(dir.join("store")).map_err(|e| e.to_string())?;
        let manager = CheckpointManager::new(store);
        let execution = ExecutionId::new("exec_resume_crash").map_err(|e| e.to_string())?;
        let runs = dir.join("runs.log");
        let mut exec = Executor::new(&manager, "resume-agent", execution)
            .task("count to 30")
            .on_start(move |r| {
                // Best effort: a failure to log shows as a missing line in the test.
                let _ = append(&runs, &format!("start {}", r.steps_recovered));
            });
        for n in 1..=STEPS {
            let log = dir.join("side-effects.log");
            exec = exec.step(Step::new(format!("step_{n:02}"), move |ctx| {
                append(&log, &format!("step {n}")).map_err(|e| e.to_string())?;
                std::thread::sleep(std::time::Duration::from_millis(fastrand::u64(2..12)));
                let total = ctx
                    .state
                    .variable("total")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                ctx.state.set_variable("total", (total + n as u64).into());
                Ok(serde_json::json!({ "n": n }))
            }));
        }
        let report = exec.run().map_err(|e| e.to_string())?;
        append(
            &dir.join("runs.log"),
            &format!(
                "done recovered={} run={}",
                report.steps_recovered,
                report.steps_run.len()
            ),
        )
        .map_err(|e| e.to_string())?;
        Ok(report
            .last_checkpoint
            .map(|c| c.to_string())
            .unwrap_or_default())
    };
    match run() {
        Ok(id) => {
            println!("{id}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
