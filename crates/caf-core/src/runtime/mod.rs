//! The runtime layer: the mutable state of a running agent.
//!
//! [`RuntimeState`] holds the four parts of a [`crate::Snapshot`] (thought chain, context, tool
//! state, progress) plus who and where (agent, execution, last checkpoint). It is changed only
//! through its typed methods, each of which emits a granular [`Event`] to subscribers and records
//! what changed in [`Dirty`] until the next checkpoint.

mod events;
mod state;

pub use events::{ContextOp, Event};
pub use state::{Dirty, RuntimeState, StateError};
