//! `caf mcp`: the MCP server (crate caf-mcp) over stdio, on the store of `--dir` / `--db`.
//!
//! stdout carries the protocol, so everything else goes to stderr: the logs (`tracing`, level
//! from `CAF_LOG`, default `info`) and the warnings about unreadable files.

use crate::cli::McpArgs;
use crate::target::Target;
use crate::{CmdResult, Failure};
use caf_mcp::{CafServer, ServerOptions};

/// Sends `tracing` logs to stderr: caf's at the level `CAF_LOG` names (default `info`), the
/// MCP library's from `warn` up (or at `CAF_LOG` when it is `debug` or `trace`).
fn log_to_stderr() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = match std::env::var("CAF_LOG")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "error" => LevelFilter::ERROR,
        "warn" => LevelFilter::WARN,
        "debug" => LevelFilter::DEBUG,
        "trace" => LevelFilter::TRACE,
        "off" => LevelFilter::OFF,
        _ => LevelFilter::INFO,
    };
    let filter = Targets::new()
        .with_target("caf", level)
        .with_target("caf_mcp", level)
        .with_default(if level >= LevelFilter::DEBUG {
            level
        } else {
            level.min(LevelFilter::WARN)
        });
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false);
    // A subscriber installed already (there is none in `caf`) keeps its place.
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .try_init();
}

/// Serves the store until the client disconnects.
pub fn run(t: &Target, a: &McpArgs) -> CmdResult {
    log_to_stderr();
    let store = t.open_or_create_journaled()?;
    let mut options = ServerOptions {
        allow_delete: a.allow_delete,
        ..ServerOptions::default()
    };
    if let Some(n) = a.max_state_bytes {
        options.max_state_bytes = usize::try_from(n).unwrap_or(usize::MAX);
    }
    let live = caf_mcp::install_live_metrics();
    tracing::info!(
        "caf mcp {}: serving {} over stdio{}",
        env!("CARGO_PKG_VERSION"),
        t.describe(),
        if options.allow_delete {
            " (deletes allowed)"
        } else {
            ""
        }
    );
    let server = CafServer::new(store, t.dir(), options, live);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::msg(format!("caf mcp: cannot start: {e}")))?;
    runtime
        .block_on(caf_mcp::serve_stdio(server))
        .map_err(|e| Failure::msg(format!("caf mcp: {e}")))
}
