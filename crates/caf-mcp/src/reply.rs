//! What a tool answers: structured JSON with a one-line summary, or a tool error with a clear
//! message; and [`Args`], the extractor that turns malformed arguments into a tool error (not a
//! protocol error) that names where they are wrong.

use caf_core::format::json::path_pointer;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why a tool call did nothing (or, for a store failure, stopped): one message for the caller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments are wrong (a malformed id, a bad value, a payload over the limit).
    #[error("{0}")]
    Invalid(String),
    /// The store has no such checkpoint or execution.
    #[error("{0}")]
    NotFound(String),
    /// The server was not started with the permission this needs.
    #[error("{0}")]
    Refused(String),
    /// The store, or the server, failed.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// An error of the store; a missing checkpoint or execution is [`ToolError::NotFound`].
    pub fn store(e: caf_core::Error, store: &str) -> Self {
        match e {
            e @ caf_core::Error::NotFound { .. } => Self::NotFound(format!("{e} in {store}")),
            e @ caf_core::Error::Id(_) => Self::Invalid(e.to_string()),
            e => Self::Failed(e.to_string()),
        }
    }

    /// The tool result that reports it: `isError`, the message as text.
    pub fn into_result(self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(self.to_string())])
    }
}

/// A successful tool result: `value` as structured content; as text, `summary`, then the JSON
/// itself (for clients that only show text).
pub fn success(
    summary: impl Into<String>,
    value: &impl Serialize,
) -> Result<CallToolResult, ToolError> {
    let json = serde_json::to_value(value)
        .map_err(|e| ToolError::Failed(format!("the result could not be serialized: {e}")))?;
    let mut result = CallToolResult::structured(json);
    let text = result.content.pop();
    result.content = std::iter::once(ContentBlock::text(summary.into()))
        .chain(text)
        .collect();
    Ok(result)
}

/// A tool result from the outcome of a tool's work.
pub fn result(outcome: Result<CallToolResult, ToolError>) -> CallToolResult {
    outcome.unwrap_or_else(ToolError::into_result)
}

/// A tool's arguments, deserialized: malformed ones are kept as a [`ToolError`] that names
/// where they are wrong (`at /labels/0: invalid type: …`), for the tool to answer with, rather
/// than failing the call as a protocol error that an MCP client would not show.
#[derive(Debug)]
pub struct Args<T>(pub Result<T, ToolError>);

impl<S, T: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Args<T> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, rmcp::ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        let parsed = serde_path_to_error::deserialize(serde_json::Value::Object(arguments))
            .map_err(|e| {
                let pointer = path_pointer(e.path());
                let message = e.into_inner().to_string();
                ToolError::Invalid(if pointer.is_empty() {
                    format!("bad arguments: {message}")
                } else {
                    format!("bad arguments: at {pointer}: {message}")
                })
            });
        Ok(Self(parsed))
    }
}
