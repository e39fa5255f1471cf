//! The export layer: the checkpoint document, its JSON Schemas, encoding and decoding, and the
//! migration of older format versions.

mod beside;
mod check;
mod codec;
mod cores;
mod digest;
mod encoder;
mod error;
pub mod integrity;
pub mod json;
mod known;
pub mod migrate;
mod model;
pub mod schema;
mod unique_keys;
mod v0;
mod v1_0_0;
pub mod versions;

pub(crate) use beside::start_helper;
pub use check::{check, Checked};
pub use codec::{
    decode, decode_value, encode, encode_unsealed, parse, prepare_checksum_beside, upgrade,
    version_of, Decoded, Limits, PendingChecksum, Unsealed, MAX_DEPTH_CAP,
};
pub use digest::file_digest;
pub use encoder::Encoder;
pub use error::{EncodeError, LoadError, Violation};
pub use integrity::of_value as integrity_of;
pub(crate) use known::prepare_shared;
pub use known::{
    decode_known, decode_known_file, decode_known_shared, fast_path, fast_path_file,
    PARALLEL_HASH_MIN_BYTES,
};
pub(crate) use model::present;
pub use model::{
    is_snake_word, same, shared_prefix, BadReason, Branch, Checkpoint, CheckpointReason,
    CompletedStep, Context, JsonObject, LastError, Metadata, PlanStep, Progress, Snapshot,
    StepStatus, Thought, ThoughtChain, ToolCall, ToolState, ToolStatus,
};

/// The format version caf writes.
pub const CURRENT_VERSION: &str = versions::CURRENT.version;
