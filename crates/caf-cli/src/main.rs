//! `caf`: the command line of caf, the checkpoint system for AI agents.
//!
//! The library (`caf-core`) does the work; this crate parses arguments, calls it, and presents
//! the results (tables and colour for people, `--json` for programs). Exit codes: 0 success,
//! 1 a failed operation, 2 bad usage.

mod bench;
mod cli;
mod commands;
mod demo;
mod graph;
mod output;
mod supervise;
mod target;

use std::process::ExitCode;

/// The binary's allocator: mimalloc. A save or a restore allocates and frees thousands of small
/// values (a thought's strings, a tool call's arguments) and buffers of the checkpoint's size;
/// side by side with the system allocator on the agent-run workload, mimalloc made restores and
/// listings faster and eight writers' saves cheaper in CPU (docs/benchmarks.md). Built with
/// `no_thp` (the workspace's `Cargo.toml` says why). The libraries leave the choice to the
/// program that links them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A failure the CLI reports: one line on stderr and an exit code.
#[derive(Debug)]
pub enum Failure {
    /// The operation failed (exit 1). Each string is one line.
    Failed(Vec<String>),
    /// The command line was wrong (exit 2).
    Usage(String),
    /// Exit with this status, nothing to print (`caf watch` ends with its command's status).
    Status(u8),
}

impl Failure {
    /// A failed operation with one message line.
    pub fn msg(m: impl std::fmt::Display) -> Self {
        Self::Failed(vec![m.to_string()])
    }

    /// A failed operation: one line per problem, then what came of it (`nothing imported`).
    /// A single problem stays one line, with the outcome after a semicolon.
    pub fn with_outcome(mut problems: Vec<String>, outcome: impl Into<String>) -> Self {
        let outcome = outcome.into();
        match problems.as_mut_slice() {
            [one] => {
                one.push_str("; ");
                one.push_str(&outcome);
            }
            _ => problems.push(outcome),
        }
        Self::Failed(problems)
    }
}

/// The lines that report a library error: a schema error gives one line per violation.
pub fn error_lines(e: &caf_core::Error) -> Vec<String> {
    match e {
        caf_core::Error::Load { origin, error } => error
            .lines()
            .into_iter()
            .map(|l| format!("{origin}: {l}"))
            .collect(),
        other => vec![other.to_string()],
    }
}

impl From<caf_core::Error> for Failure {
    fn from(e: caf_core::Error) -> Self {
        Self::Failed(error_lines(&e))
    }
}

/// What a command returns.
pub type CmdResult = Result<(), Failure>;

fn main() -> ExitCode {
    let cli = cli::parse();
    let result = commands::run(cli).and_then(|()| match output::stdout_failure() {
        Some(e) => Err(Failure::msg(format!(
            "stdout: {e}; the output was not written"
        ))),
        None => Ok(()),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Failed(lines)) => {
            for l in lines {
                output::error_line(&l);
            }
            ExitCode::from(1)
        }
        Err(Failure::Usage(m)) => {
            output::error_line(&m);
            ExitCode::from(2)
        }
        Err(Failure::Status(code)) => ExitCode::from(code),
    }
}
