//! # caf-mcp — caf as an MCP server
//!
//! A [Model Context Protocol](https://modelcontextprotocol.io) server, built on `rmcp` (the
//! official Rust SDK), that gives agents caf's checkpoints as tools and resources. `caf mcp`
//! serves it over stdio on the store of `--dir` / `--db`; docs/mcp.md shows how to register it
//! with a client.
//!
//! - **Tools** ([`tools`]): `checkpoint_save`, `checkpoint_load`, `checkpoint_list`,
//!   `checkpoint_inspect`, `checkpoint_diff`, `checkpoint_resume`, `checkpoint_fork`,
//!   `checkpoint_delete` (only with [`ServerOptions::allow_delete`]) and `checkpoint_prune` (a
//!   dry run without it). Input schemas come from the typed structs of [`args`]; each tool
//!   answers structured JSON with a one-line summary, or a tool error with a clear message
//!   (an unknown id, a malformed state with its JSON Pointer, an id with `../`, a state over
//!   [`ServerOptions::max_state_bytes`]): never a crash, and nothing written.
//! - **Resources** ([`resources`]): `checkpoint://{id}`, `execution://{id}`,
//!   `metrics://store`, and `metrics://server` when [`install_live_metrics`] was called.
//!
//! Every tool calls the same library operations as the command line (`caf_core::save`,
//! `caf_core::resume`, `CheckpointManager::fork`, `caf_core::prune`, …), on the blocking thread
//! pool. Logs go through `tracing`; the binary sends them to stderr, since stdout carries the
//! protocol.

pub mod args;
mod ops;
pub mod reply;
pub mod resources;
mod server;
pub mod tools;

pub use ops::{DEFAULT_LIST, MAX_LIST};
pub use server::{CafServer, ServerOptions, INSTRUCTIONS};

use metrics_exporter_prometheus::PrometheusHandle;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleServer, ServiceExt};

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The client did not complete the `initialize` handshake.
    #[error("MCP initialization failed: {0}")]
    Initialize(Box<rmcp::service::ServerInitializeError>),
    /// The server's task failed.
    #[error("the MCP server stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

/// Serves `server` over stdin and stdout until the client closes the connection. Request lines
/// longer than [`ServerOptions::max_line_bytes`] are dropped unread (and logged), so a flood
/// cannot exhaust memory.
pub async fn serve_stdio(server: CafServer) -> Result<(), ServeError> {
    let transport =
        AsyncRwTransport::<RoleServer, _, _>::new(tokio::io::stdin(), tokio::io::stdout())
            .with_max_line_length(server.options().max_line_bytes());
    let running = server
        .serve(transport)
        .await
        .map_err(|e| ServeError::Initialize(Box::new(e)))?;
    let reason = running.waiting().await?;
    tracing::info!("caf mcp: connection ended ({reason:?})");
    Ok(())
}

/// Installs a Prometheus recorder (with caf's histogram buckets,
/// `caf_core::metrics::prometheus::recorder`) as this process's global `metrics` recorder and
/// returns its handle, for the `metrics://server` resource. `None` if a recorder was installed
/// already. For a binary to call once, before serving.
pub fn install_live_metrics() -> Option<PrometheusHandle> {
    let recorder = caf_core::metrics::prometheus::recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).ok()?;
    caf_core::metrics::describe();
    Some(handle)
}
