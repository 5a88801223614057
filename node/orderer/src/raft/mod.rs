//! The ordering cluster: orderers that replicate the order through Raft (the `raft`
//! crate, etcd's Raft as TiKV runs it), so that losing a minority of them loses nothing
//! and stops nothing.

// Raft's message types (rust-protobuf 2) are filled in field by field, as that codec's
// own code does.
#![allow(clippy::field_reassign_with_default)]

pub mod log;
mod logger;
mod node;
pub mod quorum;
pub mod wire;

pub use node::{ClusterMember, LOG_ENTRIES_KEPT, RaftOrderer, RaftSettings, Transport};
