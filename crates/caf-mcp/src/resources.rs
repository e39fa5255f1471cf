//! The resources: `checkpoint://{id}` (a checkpoint's JSON document), `execution://{id}` (an
//! execution's history, as `caf log --execution ID --json` prints it), `metrics://store` (the
//! store's metrics, as `caf stats --metrics` prints them) and `metrics://server` (this
//! process's live metrics, when a recorder is installed).

use crate::server::Shared;
use caf_core::metrics::{prometheus, StoreMetrics};
use caf_core::{CheckpointId, CheckpointStore, ExecutionId, ListFilter};
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};
use rmcp::ErrorData;
use serde_json::json;

/// The URI scheme of checkpoints.
pub const CHECKPOINT: &str = "checkpoint://";
/// The URI scheme of executions.
pub const EXECUTION: &str = "execution://";
/// The store's metrics.
pub const STORE_METRICS: &str = "metrics://store";
/// This process's live metrics.
pub const SERVER_METRICS: &str = "metrics://server";
/// The media type of the Prometheus text format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4";
/// How many executions `resources/list` names (the newest).
pub const LISTED_EXECUTIONS: usize = 100;

/// The resource templates.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{CHECKPOINT}{{id}}"), "checkpoint")
            .with_description("A checkpoint's JSON document (format 1.1.0, with its integrity)")
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{EXECUTION}{{id}}"), "execution")
            .with_description(
                "An execution's history, newest first: each checkpoint with its parent, \
                 children, step, reason and time",
            )
            .with_mime_type("application/json"),
    ]
}

/// The listed resources: the metrics, and the newest executions.
pub(crate) fn list(sh: &Shared) -> Result<Vec<Resource>, ErrorData> {
    let mut out = vec![Resource::new(STORE_METRICS, "store metrics")
        .with_description("The store's metrics in the Prometheus text format")
        .with_mime_type(PROMETHEUS_TEXT)];
    if sh.live.is_some() {
        out.push(
            Resource::new(SERVER_METRICS, "server metrics")
                .with_description(
                    "This server's live metrics since it started (saves, sizes, latencies), \
                     Prometheus text",
                )
                .with_mime_type(PROMETHEUS_TEXT),
        );
    }
    let all = sh
        .store
        .list(&ListFilter::default())
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let mut seen = std::collections::HashSet::new();
    for s in &all {
        if seen.len() == LISTED_EXECUTIONS {
            break;
        }
        if seen.insert(&s.execution_id) {
            out.push(
                Resource::new(
                    format!("{EXECUTION}{}", s.execution_id),
                    format!("execution {}", s.execution_id),
                )
                .with_description(format!(
                    "History of execution {} (agent {})",
                    s.execution_id, s.agent_id
                ))
                .with_mime_type("application/json"),
            );
        }
    }
    Ok(out)
}

/// A resource's contents.
pub(crate) fn read(sh: &Shared, uri: &str) -> Result<ResourceContents, ErrorData> {
    let store = sh.describe();
    let missing = |e: caf_core::Error| match e {
        e @ caf_core::Error::NotFound { .. } => {
            ErrorData::resource_not_found(format!("{e} in {store}"), Some(json!({"uri": uri})))
        }
        e => ErrorData::internal_error(e.to_string(), Some(json!({"uri": uri}))),
    };
    let bad_id = |kind: &str, e: caf_core::IdError| {
        ErrorData::invalid_params(
            format!("{uri}: not a valid {kind} id: {e}"),
            Some(json!({"uri": uri})),
        )
    };
    if let Some(id) = uri.strip_prefix(CHECKPOINT) {
        let id = CheckpointId::new(id).map_err(|e| bad_id("checkpoint", e))?;
        let c = sh.store.load(&id).map_err(missing)?;
        let bytes = caf_core::format::encode(&c)
            .map_err(|e| ErrorData::internal_error(format!("{id}: {e}"), None))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        return Ok(ResourceContents::text(text, uri).with_mime_type("application/json"));
    }
    if let Some(id) = uri.strip_prefix(EXECUTION) {
        let id = ExecutionId::new(id).map_err(|e| bad_id("execution", e))?;
        let log = caf_core::history::execution_log(&*sh.store, &id).map_err(missing)?;
        let text = serde_json::to_string_pretty(&log)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        return Ok(ResourceContents::text(text, uri).with_mime_type("application/json"));
    }
    match uri {
        STORE_METRICS => {
            let m = StoreMetrics::of(&*sh.store)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            Ok(ResourceContents::text(prometheus::render(&m), uri).with_mime_type(PROMETHEUS_TEXT))
        }
        SERVER_METRICS => match &sh.live {
            Some(handle) => {
                Ok(ResourceContents::text(handle.render(), uri).with_mime_type(PROMETHEUS_TEXT))
            }
            None => Err(ErrorData::resource_not_found(
                format!("{uri}: no metrics recorder is installed in this process"),
                None,
            )),
        },
        _ => Err(ErrorData::resource_not_found(
            format!(
                "{uri}: no such resource (caf serves {CHECKPOINT}{{id}}, {EXECUTION}{{id}}, {STORE_METRICS}, {SERVER_METRICS})"
            ),
            Some(json!({"uri": uri})),
        )),
    }
}
