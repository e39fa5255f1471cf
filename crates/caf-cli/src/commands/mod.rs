//! One module per command; `run` dispatches.

pub mod database;
mod delete;
mod diff;
pub mod files;
mod inspect;
mod list;
mod log;
mod mcp;
mod metrics;
mod migrate;
mod prune;
mod resume;
mod save;
mod verify;
mod watch;

use crate::cli::{Cli, Command};
use crate::target::{Store, Target};
use crate::{CmdResult, Failure};
use caf_core::{CheckpointId, ExecutionId};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> CmdResult {
    let json = cli.json;
    let db = cli
        .db
        .clone()
        .or_else(|| std::env::var("DATABASE_URL").ok())
        .filter(|u| !u.is_empty());
    let target = Target::new(cli.dir.clone(), db, cli.no_files);
    let dir = &target;
    match cli.command {
        Command::Demo(a) => crate::demo::run(dir, json, &a),
        Command::List(a) => list::run(dir, json, &a),
        Command::Log(a) => log::run(dir, json, &a),
        Command::Inspect(a) => inspect::run(dir, json, &a),
        Command::Validate(a) => files::validate(json, &a.paths),
        Command::Import(a) => files::import(dir, json, &a.paths),
        Command::Export(a) => files::export(dir, json, &a),
        Command::Delete(a) => delete::run(dir, json, &a),
        Command::Verify(a) => verify::run(dir, json, &a),
        Command::Migrate(a) => migrate::run(json, &a),
        Command::Schema(a) => schema(a.format_version.as_deref()),
        Command::Diff(a) => diff::run(dir, json, &a),
        Command::Save(a) => save::save(dir, json, &a),
        Command::Fork(a) => save::fork(dir, json, &a),
        Command::Resume(a) => resume::run(dir, json, &a),
        Command::Label(a) => save::label(dir, json, &a),
        Command::Prune(a) => prune::run(dir, json, &a),
        Command::Watch(a) => watch::run(dir, json, &a),
        Command::Bench(a) => crate::bench::run(dir, json, &a),
        Command::Sync(a) => database::sync(dir, json, &a),
        Command::Reindex(a) => database::reindex(dir, json, &a),
        Command::Stats(a) => database::stats(dir, json, &a),
        Command::Query(q) => database::query(dir, json, &q),
        Command::Sql(a) => database::sql(dir, json, &a),
        Command::Mcp(a) => mcp::run(dir, &a),
    }
}

/// Opens the store, which must already exist (for commands that only read).
pub fn open_existing(t: &Target) -> Result<&Store, Failure> {
    t.open_existing()
}

/// Parses a checkpoint id given on the command line. A malformed one is bad usage (exit 2): the
/// command line alone is wrong, whatever the store holds; a well-formed id the store lacks is a
/// failed operation (exit 1).
pub fn checkpoint_id(s: &str) -> Result<CheckpointId, Failure> {
    CheckpointId::new(s)
        .map_err(|e| Failure::Usage(format!("{s:?}: not a valid checkpoint id: {e}")))
}

/// Parses an execution id given on the command line (malformed: bad usage, exit 2).
pub fn execution_id(s: &str) -> Result<ExecutionId, Failure> {
    ExecutionId::new(s).map_err(|e| Failure::Usage(format!("{s:?}: not a valid execution id: {e}")))
}

fn schema(version: Option<&str>) -> CmdResult {
    let version = version.unwrap_or(caf_core::CURRENT_VERSION);
    let text = caf_core::format::schema::schema_text(version).ok_or_else(|| {
        Failure::Usage(format!(
            "no schema for format version {version:?}; known versions: {}",
            caf_core::format::migrate::known_versions().join(", ")
        ))
    })?;
    crate::say!("{}", text.trim_end_matches('\n'));
    Ok(())
}
