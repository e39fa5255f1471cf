//! [`CafServer`]: the MCP server over one store, its options, and what it says about itself.

use caf_core::CheckpointStore;
use caf_sql::Store;
use metrics_exporter_prometheus::PrometheusHandle;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use std::path::PathBuf;
use std::sync::Arc;

/// How the server may change the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOptions {
    /// Whether `checkpoint_delete` deletes and `checkpoint_prune` may delete (`caf mcp
    /// --allow-delete`); without it, delete is refused and every prune is a dry run.
    pub allow_delete: bool,
    /// The largest `state` a `checkpoint_save` accepts, in bytes of JSON (default: the format's
    /// largest document, 64 MiB). A larger one is refused with a tool error.
    pub max_state_bytes: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            allow_delete: false,
            max_state_bytes: usize::try_from(caf_core::Limits::default().max_bytes)
                .unwrap_or(usize::MAX),
        }
    }
}

impl ServerOptions {
    /// The longest request line the stdio transport reads: the state limit plus room for the
    /// rest of a `tools/call` request. A longer line is dropped unread (and logged), so that a
    /// flood cannot exhaust memory; a state between the two limits gets a tool error.
    pub fn max_line_bytes(&self) -> usize {
        self.max_state_bytes
            .saturating_mul(2)
            .saturating_add(1024 * 1024)
    }
}

/// What every tool call and resource read shares.
pub(crate) struct Shared {
    /// The store the server was started on.
    pub store: Store,
    /// Its directory (where `caf.toml` is).
    pub dir: PathBuf,
    /// The options.
    pub options: ServerOptions,
    /// The live metrics of this process, when a recorder is installed.
    pub live: Option<PrometheusHandle>,
}

impl Shared {
    /// The store, for messages.
    pub fn describe(&self) -> String {
        self.store.describe()
    }
}

/// The MCP server: caf's tools and resources over one store. Serve it with
/// [`crate::serve_stdio`]; it is cheap to clone (the store is shared).
#[derive(Clone)]
pub struct CafServer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) tool_router: ToolRouter<CafServer>,
}

impl std::fmt::Debug for CafServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CafServer")
            .field("store", &self.shared.describe())
            .field("options", &self.shared.options)
            .finish()
    }
}

/// What the server tells a client on `initialize`.
pub const INSTRUCTIONS: &str = "caf keeps checkpoints of an agent's state: its thoughts, \
context, tool calls and progress through a plan, as validated JSON files (and optionally a SQL \
database). Save with checkpoint_save after each step (execution_id names the run; state holds \
the parts), and with reason `error` when a step fails. After a crash or a pause, call \
checkpoint_resume with the execution id to see where the run stands and what remains, and \
checkpoint_load to get the state back. checkpoint_list, checkpoint_inspect and checkpoint_diff \
look around; checkpoint_fork starts a branch to try another approach. Resources: \
checkpoint://{id} (a checkpoint's JSON), execution://{id} (an execution's history), \
metrics://store (the store's metrics, Prometheus text).";

impl CafServer {
    /// A server over `store`, whose directory is `dir` (for its `caf.toml`), with `options`.
    /// `live`: a Prometheus handle on this process's metrics, served as `metrics://server`
    /// (see [`crate::install_live_metrics`]).
    pub fn new(
        store: Store,
        dir: impl Into<PathBuf>,
        options: ServerOptions,
        live: Option<PrometheusHandle>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                dir: dir.into(),
                options,
                live,
            }),
            tool_router: Self::tool_router(),
        }
    }

    /// The options it runs with.
    pub fn options(&self) -> ServerOptions {
        self.shared.options
    }

    /// The `initialize` answer: name, version, capabilities (tools, resources), instructions.
    pub(crate) fn config() -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("caf", env!("CARGO_PKG_VERSION"))
                .with_title("caf — checkpoints for AI agents"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    /// Runs `work` on the blocking thread pool (the store does file and database I/O) and
    /// turns its outcome, or a panic in it, into a tool result.
    pub(crate) async fn blocking<F>(&self, work: F) -> rmcp::model::CallToolResult
    where
        F: FnOnce(&Shared) -> Result<rmcp::model::CallToolResult, crate::reply::ToolError>
            + Send
            + 'static,
    {
        let shared = self.shared.clone();
        match tokio::task::spawn_blocking(move || work(&shared)).await {
            Ok(outcome) => crate::reply::result(outcome),
            Err(e) => {
                tracing::error!("a tool failed: {e}");
                crate::reply::ToolError::Failed(format!("the tool failed: {e}")).into_result()
            }
        }
    }
}
