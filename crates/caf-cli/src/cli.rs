//! The command-line grammar (clap).

use clap::{Arg, ArgAction, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;

/// caf: checkpoints for AI agents — inspect, validate, import, export and benchmark them.
#[derive(Debug, Parser)]
#[command(
    name = "caf",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Exit codes: 0 success; 1 a failed operation (an id the store lacks, a damaged \
file, a refused SQL statement, unreadable files skipped by sync or reindex without \
--allow-skipped); 2 bad usage (the command line alone is wrong: an unknown option, a malformed \
id, a format version caf does not know). Each error is one line on stderr."
)]
pub struct Cli {
    /// The checkpoint directory (an empty CAF_DIR counts as unset).
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
    /// Show the history of checkpoints: heads, latest, branch points (--graph draws branches).
    Log(LogArgs),
    /// Show one checkpoint (by id, or a file path).
    Inspect(InspectArgs),
    /// Check checkpoint files (or directories of them) against their schema and checksum.
    #[command(args = unused_globals("validate", &["dir", "db", "no_files"]))]
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
    #[command(args = unused_globals("migrate", &["dir", "db", "no_files"]))]
    Migrate(MigrateArgs),
    /// Print the JSON Schema of a format version.
    #[command(
        disable_version_flag = true,
        args = unused_globals("schema", &["dir", "db", "no_files"])
    )]
    Schema(SchemaArgs),
    /// Show what changed between two checkpoints (or a checkpoint and its parent).
    Diff(DiffArgs),
    /// Save a checkpoint built from snapshot parts given as JSON (a file or stdin).
    Save(SaveArgs),
    /// Start a branch from a checkpoint.
    Fork(ForkArgs),
    /// Show what a run would resume from: the checkpoint, progress, what remains.
    Resume(ResumeArgs),
    /// Name or label an existing checkpoint (e.g. `keep`, to protect it from pruning).
    Label(LabelArgs),
    /// Delete old checkpoints by a retention policy (DIR/caf.toml, or flags).
    Prune(PruneArgs),
    /// Run a command (a long agent session) and capture checkpoints of the project while it
    /// runs: at the start, every interval, and when it exits; `caf watch summary` shows a
    /// past session.
    Watch(WatchArgs),
    /// Measure save, restore-latest and list on the agent-run workload.
    #[command(args = unused_globals("bench", &["no_files"]))]
    Bench(BenchArgs),
    /// Bring checkpoint files saved elsewhere into the database.
    #[command(args = unused_globals("sync", &["no_files"]))]
    Sync(SyncArgs),
    /// Rebuild the database from the checkpoint files.
    #[command(args = unused_globals("reindex", &["no_files"]))]
    Reindex(ReindexArgs),
    /// Statistics from the database: per execution and in total (--metrics: the store's
    /// metrics, Prometheus text).
    #[command(args = unused_globals("stats", &["no_files"]))]
    Stats(StatsArgs),
    /// Search the database: tool calls or thoughts.
    #[command(subcommand, args = unused_globals("query", &["no_files"]))]
    Query(QueryCommand),
    /// Run a read-only SQL statement against the database.
    #[command(args = unused_globals("sql", &["no_files"]))]
    Sql(SqlArgs),
    /// Serve the store to AI agents as an MCP server over stdio (tools and resources).
    Mcp(McpArgs),
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
    /// The step during which the agent crashes (0: no crash; at most --steps; the default
    /// means no crash when --steps is below 5).
    #[arg(long, default_value_t = 5)]
    pub crash_at: u32,
    /// The seed that determines the content (and, with --deterministic, every id and time).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Run on a fixed simulated clock (from 2026-01-05 09:00 UTC), so that the same arguments
    /// write identical files (how the example archive in `checkpoints/` is made). By default
    /// the demo's times end now.
    #[arg(long)]
    pub deterministic: bool,
    /// Write even when the estimated size is above 1 GB.
    #[arg(long)]
    pub force: bool,
    /// When a save returns: `sync` (on disk) or `async` (handed to a background writer, in
    /// order; the demo waits for it before it reads back). Default: `durability` in the
    /// directory's caf.toml, else sync.
    #[arg(long, value_name = "MODE")]
    pub durability: Option<caf_core::store::SaveMode>,
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

/// `caf log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only this execution (children and parents in other executions are still named).
    #[arg(long, short = 'e')]
    pub execution: Option<String>,
    /// Draw the history as a graph of branches, like `git log --graph`.
    #[arg(long)]
    pub graph: bool,
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
    /// Where to write (default: stdout). With --json, what was written is reported as JSON on
    /// stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

/// `caf watch`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Each capture is a checkpoint of the session's execution (labels capture-N and \
watch) holding the probes' readings in its context state: git (branch, modified, staged and \
untracked files, the last commit), files_modified (every file modified since the watch \
started), state_dir (files and sizes, with --state-dir), memory (the command's and caf's \
resident size). A capture at an interval is saved only if something changed (--always saves \
every one). Without a command the watch runs until SIGINT (Ctrl-C) or SIGTERM. With a command, \
Ctrl-C reaches the command through the terminal and the watch ends when the command does; \
SIGTERM is passed on to the command. The last capture holds the exit status and the session's \
summary, which is printed; caf then exits with the command's status (128+N if a signal N \
killed it). See `caf watch summary --help`."
)]
pub struct WatchArgs {
    /// Show a past session instead.
    #[command(subcommand)]
    pub action: Option<WatchAction>,
    /// How often to capture: a whole number and a unit (ms, s, m, h, d, w), e.g. 15m, 30s.
    #[arg(long, default_value = "15m", value_parser = interval_arg)]
    pub interval: std::time::Duration,
    /// The project whose git status and modified files are captured [default: the current
    /// directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// A directory whose files and sizes are captured (an agent's state directory, such as
    /// .aiwg).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The session: the execution id of the captures [default: a new watch_… id]. A session
    /// the store has is continued.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Save a capture at every interval, even when nothing changed.
    #[arg(long)]
    pub always: bool,
    /// The command to run and watch, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// `caf watch summary`.
#[derive(Debug, Subcommand)]
pub enum WatchAction {
    /// Print the summary of a watch session: captures, duration, files modified, and each
    /// capture (a session cut short by a crash has one too, of what it saved).
    Summary {
        /// The session [default: the newest watch session in the store].
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

/// Parses `--interval`.
fn interval_arg(s: &str) -> Result<std::time::Duration, String> {
    caf_core::capture::parse_interval(s).map_err(|e| e.to_string())
}

/// `caf delete`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["ids", "execution", "older_than"]).multiple(true)))]
pub struct DeleteArgs {
    /// Checkpoint ids.
    pub ids: Vec<String>,
    /// Delete every checkpoint of this execution instead.
    #[arg(long, short = 'e', conflicts_with = "ids")]
    pub execution: Option<String>,
    /// Delete every checkpoint older than this (e.g. `30d`, `12h`), but each execution's
    /// latest; with --execution, only in that execution.
    #[arg(long, conflicts_with = "ids", value_name = "DURATION")]
    pub older_than: Option<caf_core::duration::Duration>,
}

/// `caf save`.
#[derive(Debug, Args)]
pub struct SaveArgs {
    /// The execution the checkpoint belongs to.
    #[arg(long, short = 'e')]
    pub execution: String,
    /// The snapshot parts, as JSON: a file, or `-` for stdin (the default).
    #[arg(long, short = 'f', default_value = "-")]
    pub file: PathBuf,
    /// The agent (else `agent_id` in the parts, else the parent's).
    #[arg(long)]
    pub agent: Option<String>,
    /// Why it is taken (a snake_case word: step_completed, paused, error, completed, ...).
    #[arg(long, default_value = "manual")]
    pub reason: String,
    /// A name.
    #[arg(long)]
    pub name: Option<String>,
    /// A label (repeat for more).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// Its parent: a checkpoint id, or `none`; default: the execution's latest checkpoint.
    #[arg(long)]
    pub parent: Option<String>,
}

/// `caf fork`.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The checkpoint to branch from.
    pub id: String,
    /// The branch's name.
    #[arg(long)]
    pub name: Option<String>,
    /// Why the branch is started.
    #[arg(long)]
    pub reason: Option<String>,
    /// Put the branch in a new execution with this id.
    #[arg(long, short = 'e')]
    pub execution: Option<String>,
}

/// `caf resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// An execution id (its latest valid checkpoint) or a checkpoint id.
    pub target: String,
}

/// `caf label`.
#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The checkpoint.
    pub id: String,
    /// A label to add (repeat for more).
    #[arg(long)]
    pub add: Vec<String>,
    /// A label to remove (repeat for more).
    #[arg(long)]
    pub remove: Vec<String>,
    /// A new name (`--name ""` removes it).
    #[arg(long)]
    pub name: Option<String>,
}

/// `caf prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Keep the last N checkpoints of each execution.
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// Delete checkpoints older than this (e.g. `30d`).
    #[arg(long, value_name = "DURATION")]
    pub max_age: Option<caf_core::duration::Duration>,
    /// Thinning tiers, `WITHIN:EVERY,...` (e.g. `1h:all,1d:1h,30d:1d`), or `none`.
    #[arg(long, value_name = "TIERS")]
    pub tiers: Option<String>,
    /// Only this execution.
    #[arg(long, short = 'e')]
    pub execution: Option<String>,
    /// Say what would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `caf sync`.
#[derive(Debug, Args)]
#[command(
    after_help = "Unreadable checkpoint files are skipped, each with a warning, and counted in the \
summary (`skipped` and `problems` with --json); the readable ones are still synced. Any skipped \
file makes the command exit 1, unless --allow-skipped is given."
)]
pub struct SyncArgs {
    /// Exit 0 even when unreadable files were skipped (they are still reported).
    #[arg(long)]
    pub allow_skipped: bool,
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
#[command(
    after_help = "Unreadable checkpoint files are skipped, each with a warning, and counted in the \
summary (`skipped` and `problems` with --json); the database is rebuilt from the readable ones. \
Any skipped file makes the command exit 1, unless --allow-skipped is given."
)]
pub struct ReindexArgs {
    /// Rebuild even though the database holds checkpoints that have no readable file here
    /// (they are dropped).
    #[arg(long)]
    pub force: bool,
    /// Exit 0 even when unreadable files were skipped (they are still reported).
    #[arg(long)]
    pub allow_skipped: bool,
}

/// `caf stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Only this execution.
    #[arg(long, short = 'e')]
    pub execution: Option<String>,
    /// Print the store's metrics in the Prometheus text format instead (checkpoint_save_count,
    /// checkpoint_save_size_bytes, checkpoint_resume_count, steps_recovered, prunes,
    /// redactions), computed from the checkpoints and tombstones the store holds; no database
    /// needed. With --json, the same figures as JSON.
    #[arg(long, conflicts_with = "execution")]
    pub metrics: bool,
}

/// `caf mcp`.
#[derive(Debug, Args)]
#[command(
    after_help = "Serves the store of --dir / --db to one MCP client over stdin and stdout (JSON-RPC, one message per line); logs go to stderr (CAF_LOG=error|warn|info|debug|trace, default info). Register it with a client as {\"command\": \"caf\", \"args\": [\"--dir\", \"/path/to/checkpoints\", \"mcp\"]}. See docs/mcp.md for the tools and resources."
)]
pub struct McpArgs {
    /// Let checkpoint_delete delete and checkpoint_prune prune (without it, delete is refused
    /// and every prune is a dry run).
    #[arg(long)]
    pub allow_delete: bool,
    /// The largest state checkpoint_save accepts, in bytes of JSON [default: 67108864, 64 MiB].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_state_bytes: Option<u64>,
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
#[command(
    after_help = "Tables, views and columns, with example queries: docs/sql.md. Times in the \
tables are integer microseconds since the Unix epoch (UTC); the views executions_v, \
checkpoints_v, thoughts_v and tool_calls_v show them readably. A failed or refused statement \
exits 1."
)]
pub struct SqlArgs {
    /// One statement, read-only: the database connection refuses writes, and a text with
    /// several statements (or none) is refused before anything runs.
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
    /// The format version, e.g. 1.0.0 (default: the current one).
    #[arg(value_name = "VERSION")]
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
    /// Which storage mode(s) to measure (repeatable) [default: files; with --peer: files,
    /// files+sqlite and sqlite].
    #[arg(long, value_enum)]
    pub mode: Vec<crate::bench::Mode>,
    /// Where to create the scratch store (default: a temporary directory next to --dir, so that
    /// it is on the same file system). It is removed afterwards.
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// After caf's modes, run a peer on the same workload in the same run and print both side
    /// by side, with the ratios. `langgraph`: LangGraph's SqliteSaver, through the venv that
    /// bench/peers/setup.sh creates (env CAF_PEER_DIR: another bench/peers directory).
    #[arg(long, value_enum)]
    pub peer: Option<crate::bench::Peer>,
    /// With --peer: measure caf's modes and the peer N times, alternately (caf first in the
    /// odd rounds, the peer first in the even ones), each round in a scratch directory of its
    /// own, and print every round's ratios and their median, least and greatest over the
    /// rounds (an odd N gives a true median). With --concurrent too: the saves per second.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "peer",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,

    /// Also measure the files modes with this durability (repeatable): `async` saves return
    /// once encoded and a background writer writes them in order; `sync` is always measured
    #[arg(long, value_enum)]
    pub durability: Vec<crate::bench::Durability>,

    /// Instead of the single-agent workload: N processes save into one store at once, each its
    /// own execution (--saves each); prints saves per second, errors, lost saves and CPU time
    /// per save, and two floors: N writers appending the same bytes, one fdatasync each, and
    /// the same also writing each checkpoint to a new file. With --peer, LangGraph's
    /// SqliteSaver runs the same with N processes on one SQLite file.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrent: Option<u32>,
    /// Saves per process with --concurrent.
    #[arg(long, value_name = "K", default_value_t = 250, value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub saves: u32,
    /// Internal: run as worker W of `--concurrent` on the store in --worker-dir.
    #[arg(long, hide = true, requires = "worker_dir")]
    pub worker: Option<u32>,
    /// Internal: the scratch store of a `--concurrent` worker.
    #[arg(long, hide = true, requires = "worker")]
    pub worker_dir: Option<PathBuf>,
}

/// Hidden stand-ins for the global options `names` (`dir`, `db`, `no_files`) that `command`
/// ignores: clap then neither lists those options in the command's help nor accepts them after
/// its name (`caf validate --dir X` is bad usage: validate takes paths). Before the command name
/// they are still the global options, which a command may ignore.
fn unused_globals(command: &'static str, names: &[&'static str]) -> Vec<Arg> {
    fn refuse<T>(
        flag: &'static str,
        command: &'static str,
    ) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
        move |_| Err(format!("{flag} has no effect on `caf {command}`"))
    }
    names
        .iter()
        .map(|name| {
            let arg = Arg::new(*name).hide(true);
            match *name {
                "dir" => arg
                    .long("dir")
                    .value_name("DIR")
                    .value_parser(refuse::<PathBuf>("--dir", command)),
                "db" => arg
                    .long("db")
                    .value_name("URL")
                    .value_parser(refuse::<String>("--db", command)),
                // A flag: clap parses its default, "false", too.
                _ => arg
                    .long("no-files")
                    .action(ArgAction::SetTrue)
                    .value_parser(move |v: &str| match v {
                        "false" => Ok(false),
                        _ => refuse::<bool>("--no-files", command)(v),
                    }),
            }
        })
        .collect()
}

/// Parses the command line; on bad usage, prints clap's message and exits 2 (0 for `--help`
/// and `--version`). An empty `CAF_DIR` or `CAF_DATABASE_URL` counts as unset, and
/// `demo --crash-at` past the last step is refused.
pub fn parse() -> Cli {
    let mut cmd = Cli::command();
    for (id, var) in [("dir", "CAF_DIR"), ("db", "CAF_DATABASE_URL")] {
        if std::env::var_os(var).is_some_and(|v| v.is_empty()) {
            cmd = cmd.mut_arg(id, |a| a.env(None::<&'static str>));
        }
    }
    let matches = cmd.get_matches_mut();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut cmd).exit());
    if let (Command::Demo(d), Some(("demo", m))) = (&cli.command, matches.subcommand()) {
        let given = m.value_source("crash_at") == Some(clap::parser::ValueSource::CommandLine);
        if given && d.crash_at > d.steps {
            let kind = clap::error::ErrorKind::ValueValidation;
            let message = format!(
                "--crash-at {} is past the last step ({}): give 1 to {}, or 0 for no crash",
                d.crash_at, d.steps, d.steps
            );
            let error = match cmd.find_subcommand_mut("demo") {
                Some(demo) => demo.error(kind, message),
                None => cmd.error(kind, message),
            };
            error.exit();
        }
    }
    cli
}
