//! The export layer: the checkpoint document, its JSON Schemas, encoding and decoding, and the
//! migration of older format versions.

mod codec;
mod error;
pub mod json;
pub mod migrate;
mod model;
pub mod schema;
mod v0;

pub use codec::{
    check, decode, decode_value, encode, integrity_of, parse, version_of, Decoded, Limits,
    MAX_DEPTH_CAP,
};
pub use error::{EncodeError, LoadError, Violation};
pub use model::{
    is_snake_word, BadReason, Branch, Checkpoint, CheckpointReason, CompletedStep, Context,
    JsonObject, Metadata, Progress, Snapshot, Thought, ThoughtChain, ToolCall, ToolState,
    ToolStatus,
};

/// The format version caf writes.
pub const CURRENT_VERSION: &str = "1.0.0";
