//! The tools, as the MCP client sees them: names, descriptions, input schemas (from
//! [`crate::args`]), and the MCP handler that routes calls and resource reads.

use crate::args::{
    DeleteArgs, DiffArgs, ForkArgs, InspectArgs, ListArgs, LoadArgs, PruneArgs, ResumeArgs,
    SaveArgs,
};
use crate::ops;
use crate::reply::Args;
use crate::server::CafServer;
use rmcp::handler::server::tool::schema_for_input;
use rmcp::model::{
    CallToolResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;

/// The input schema of a tool whose arguments are `T` (its JSON Schema, draft 2020-12).
fn input<T: schemars::JsonSchema + 'static>() -> Arc<rmcp::model::JsonObject> {
    // The argument types are objects, which is all MCP asks of an input schema.
    schema_for_input::<T>()
        .unwrap_or_else(|_| rmcp::handler::server::common::schema_for_empty_input())
}

/// Runs `op` on the arguments, or answers their error.
macro_rules! call {
    ($self:ident, $args:ident, $op:path) => {
        match $args.0 {
            Ok(a) => $self.blocking(move |sh| $op(sh, a)).await,
            Err(e) => e.into_result(),
        }
    };
}

#[tool_router(vis = "pub(crate)")]
impl CafServer {
    /// Save a checkpoint.
    #[tool(
        description = "Save the agent's current state as a checkpoint of an execution (a run or session). `state` holds the snapshot parts (thought_chain, context, tool_state, progress, metadata; each optional). The new checkpoint continues the execution's latest unless `parent` says otherwise. Returns the checkpoint's summary; nothing is written if anything is invalid.",
        input_schema = input::<SaveArgs>()
    )]
    async fn checkpoint_save(&self, args: Args<SaveArgs>) -> CallToolResult {
        call!(self, args, ops::save)
    }

    /// Load a checkpoint.
    #[tool(
        description = "Load a checkpoint: by checkpoint_id, or the latest valid one of an execution (execution_id), falling back along its lineage past damaged checkpoints. Returns the whole checkpoint (its snapshot is the state to continue from), the remaining steps and what was skipped.",
        input_schema = input::<LoadArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn checkpoint_load(&self, args: Args<LoadArgs>) -> CallToolResult {
        call!(self, args, ops::load)
    }

    /// List checkpoints.
    #[tool(
        description = "List checkpoints, newest first, as `caf list`: filter by execution_id, agent_id, reason or label; `limit` (default 50) and `before` page through them (next_before is the cursor of the next page).",
        input_schema = input::<ListArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn checkpoint_list(&self, args: Args<ListArgs>) -> CallToolResult {
        call!(self, args, ops::list)
    }

    /// Inspect a checkpoint.
    #[tool(
        description = "Show one checkpoint as `caf inspect` does: when, execution, agent, reason, name, parent and children, progress and what remains, cost, counts, format, and its last thoughts and tool calls.",
        input_schema = input::<InspectArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn checkpoint_inspect(&self, args: Args<InspectArgs>) -> CallToolResult {
        call!(self, args, ops::inspect)
    }

    /// Diff two checkpoints.
    #[tool(
        description = "What changed from from_id to checkpoint_id (default: from its parent): thoughts and tool calls added, completed and changed, context changes at JSON Pointer paths, progress and cost.",
        input_schema = input::<DiffArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn checkpoint_diff(&self, args: Args<DiffArgs>) -> CallToolResult {
        call!(self, args, ops::diff)
    }

    /// Where a run resumes.
    #[tool(
        description = "What a run resumes from, as `caf resume`: for an execution id its latest valid checkpoint (damaged ones skipped), else the checkpoint with that id; its status, progress in steps and percent, completed and remaining steps, last error, tool calls left in flight (to retry or reconcile) and variables.",
        input_schema = input::<ResumeArgs>(),
        annotations(read_only_hint = true)
    )]
    async fn checkpoint_resume(&self, args: Args<ResumeArgs>) -> CallToolResult {
        call!(self, args, ops::resume)
    }

    /// Fork a checkpoint.
    #[tool(
        description = "Start a branch from a checkpoint, as `caf fork`: a new checkpoint with its state, reason `branch`, in the same execution or a new one (execution_id). Continue the branch by saving with parent = the new checkpoint.",
        input_schema = input::<ForkArgs>()
    )]
    async fn checkpoint_fork(&self, args: Args<ForkArgs>) -> CallToolResult {
        call!(self, args, ops::fork)
    }

    /// Delete checkpoints.
    #[tool(
        description = "Delete checkpoints (all of checkpoint_ids, or none if any is missing) or every checkpoint of an execution. Only when the server was started with --allow-delete; otherwise refused.",
        input_schema = input::<DeleteArgs>(),
        annotations(destructive_hint = true)
    )]
    async fn checkpoint_delete(&self, args: Args<DeleteArgs>) -> CallToolResult {
        call!(self, args, ops::delete)
    }

    /// Prune checkpoints.
    #[tool(
        description = "Delete old checkpoints by a retention policy (keep_last, max_age, tiers; else DIR/caf.toml), as `caf prune`: each execution's latest, named and `keep`-labelled checkpoints, branch points and heads are always kept. A dry run unless the server was started with --allow-delete.",
        input_schema = input::<PruneArgs>(),
        annotations(destructive_hint = true)
    )]
    async fn checkpoint_prune(&self, args: Args<PruneArgs>) -> CallToolResult {
        call!(self, args, ops::prune)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CafServer {
    fn get_info(&self) -> ServerConfig {
        Self::config()
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let shared = self.shared.clone();
        let resources = tokio::task::spawn_blocking(move || crate::resources::list(&shared))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))??;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            crate::resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let shared = self.shared.clone();
        let uri = request.uri.clone();
        let contents = tokio::task::spawn_blocking(move || crate::resources::read(&shared, &uri))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))??;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
