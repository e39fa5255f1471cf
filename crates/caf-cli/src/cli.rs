//! The command-line grammar (clap).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// caf: checkpoints for AI agents — inspect, validate, import, export and benchmark them.
#[derive(Debug, Parser)]
#[command(name = "caf", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The checkpoint directory.
    #[arg(long, global = true, env = "CAF_DIR", default_value = "./checkpoints")]
    pub dir: PathBuf,

    /// Print machine-readable JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,

    /// A database to keep in sync with the files (`sqlite://PATH` or `postgres://…`); the
    /// default is the directory's own `DIR/.caf/caf.db` when it exists. Also read from
    /// CAF_DATABASE_URL, then DATABASE_URL.
    #[arg(
        long,
        global = true,
        env = "CAF_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub db: Option<String>,

    /// Keep checkpoints in the database only (needs --db).
    #[arg(long, global = true)]
    pub no_files: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a simulated agent that checkpoints, crashes, resumes and finishes.
    Demo(DemoArgs),
    /// List checkpoints, newest first.
    List(ListArgs),
    /// Show one checkpoint (by id, or a file path).
    Inspect(InspectArgs),
    /// Check checkpoint files (or directories of them) against their schema and checksum.
    Validate(PathsArgs),
    /// Validate checkpoint files and save them into the store (all or nothing).
    Import(PathsArgs),
    /// Write a checkpoint of the store to a file (or stdout).
    Export(ExportArgs),
    /// Delete checkpoints, or a whole execution.
    Delete(DeleteArgs),
    /// Check every checkpoint file, the index and the database; --repair fixes what it can.
    Verify(VerifyArgs),
    /// Rewrite checkpoint files (or directories of them) in the current format.
    Migrate(MigrateArgs),
    /// Print the JSON Schema of a format version.
    #[command(disable_version_flag = true)]
    Schema(SchemaArgs),
    /// Show what changed between two checkpoints (or a checkpoint and its parent).
    Diff(DiffArgs),
    /// Measure save, restore-latest and list on the agent-run workload.
    Bench(BenchArgs),
    /// Bring checkpoint files saved elsewhere into the database.
    Sync,
    /// Rebuild the database from the checkpoint files.
    Reindex(ReindexArgs),
    /// Statistics from the database: per execution and in total.
    Stats(StatsArgs),
    /// Search the database: tool calls or thoughts.
    #[command(subcommand)]
    Query(QueryCommand),
    /// Run a read-only SQL statement against the database.
    Sql(SqlArgs),
}

/// `caf demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How many executions (agent runs) to simulate.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub executions: u32,
    /// Steps in each execution's plan.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub steps: u32,
    /// The step during which the agent crashes (0: no crash).
    #[arg(long, default_value_t = 5)]
    pub crash_at: u32,
    /// The seed that determines every id, timestamp and word of content.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// `caf list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this execution.
    #[arg(long, short = 'e')]
    pub execution: Option<String>,
    /// Only this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only this checkpoint reason.
    #[arg(long)]
    pub reason: Option<String>,
    /// Only checkpoints with this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Only checkpoints older than this one (paging).
    #[arg(long)]
    pub before: Option<String>,
    /// At most this many.
    #[arg(long, short = 'n')]
    pub limit: Option<usize>,
}

/// `caf inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A checkpoint id, or the path of a checkpoint file.
    pub target: String,
    /// How many of the last thoughts and tool calls to show.
    #[arg(long, default_value_t = 5)]
    pub last: usize,
}

/// Commands that take paths.
#[derive(Debug, Args)]
pub struct PathsArgs {
    /// Files, or directories searched recursively for `*.json`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// `caf export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The checkpoint id.
    pub id: String,
    /// Where to write (default: stdout).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

/// `caf delete`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["ids", "execution"])))]
pub struct DeleteArgs {
    /// Checkpoint ids.
    pub ids: Vec<String>,
    /// Delete every checkpoint of this execution instead.
    #[arg(long, short = 'e', conflicts_with = "ids")]
    pub execution: Option<String>,
}

/// `caf verify`.
#[derive(Debug, Args)]
#[command(
    after_help = "Checks each checkpoint file (it loads: JSON, schema, checksum; its name matches its id), the \
index (DIR/.caf/index.jsonl: entries that disagree with a file whose size and time are \
unchanged) and, when the store has a database, the database against the files (missing, \
extra and differing rows). Each problem is one error line naming its file or id; exit 1 if \
there is any. --repair moves damaged files to DIR/.caf/quarantine/ (each with a note, \
ID.json.why.txt) or, when the database holds an intact copy, writes them back from it byte \
for byte; rebuilds the index; brings the database in line with the files. It never deletes a \
file, and exits 1 only if problems remain. See docs/recovery.md."
)]
pub struct VerifyArgs {
    /// Repair what can be repaired (see below).
    #[arg(long)]
    pub repair: bool,
    /// With --repair, also remove database rows that have no file here (each checkpoint is saved
    /// to the quarantine first); a database shared with other directories holds such rows.
    #[arg(long, requires = "repair")]
    pub force: bool,
}

/// `caf reindex`.
#[derive(Debug, Args)]
pub struct ReindexArgs {
    /// Rebuild even though the database holds checkpoints that have no file here (they are
    /// dropped).
    #[arg(long)]
    pub force: bool,
}

/// `caf stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Only this execution.
    #[arg(long, short = 'e')]
    pub execution: Option<String>,
}

/// `caf query …`.
#[derive(Debug, Subcommand)]
pub enum QueryCommand {
    /// Which checkpoints and executions called a tool (latest state of each call).
    ToolCalls {
        /// Only this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only failed calls.
        #[arg(long)]
        failed: bool,
    },
    /// Thoughts whose content contains a text (case-insensitive).
    Thoughts {
        /// The text to look for.
        #[arg(long)]
        contains: String,
    },
}

/// `caf sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The statement (read-only: the database connection refuses writes).
    pub statement: String,
}

/// `caf migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Files, or directories searched recursively for `*.json`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The version to migrate to (only the current version is supported).
    #[arg(long, value_name = "VERSION")]
    pub to: Option<String>,
    /// Report what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Keep each original next to it as `NAME.json.<old version>.bak`.
    #[arg(long)]
    pub backup: bool,
}

/// `caf schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The format version (default: the current one).
    #[arg(long = "version", value_name = "VERSION")]
    pub format_version: Option<String>,
}

/// `caf diff`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("sides").required(true).args(["targets", "execution"])))]
pub struct DiffArgs {
    /// Checkpoint ids or file paths: `A B` diffs A → B; a single one is diffed against its
    /// parent.
    #[arg(num_args = 1..=2, value_name = "CHECKPOINT")]
    pub targets: Vec<String>,
    /// Diff the last two checkpoints of this execution instead.
    #[arg(long, short = 'e', conflicts_with = "targets")]
    pub execution: Option<String>,
}

/// `caf bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Executions in the workload.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub executions: u32,
    /// Steps (checkpoints) per execution.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub steps: u32,
    /// Which storage mode(s) to measure (repeatable).
    #[arg(long, value_enum, default_values_t = [crate::bench::Mode::Files])]
    pub mode: Vec<crate::bench::Mode>,
    /// Where to create the scratch store (default: a temporary directory next to --dir, so that
    /// it is on the same file system). It is removed afterwards.
    #[arg(long)]
    pub scratch: Option<PathBuf>,
}
