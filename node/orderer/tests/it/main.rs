//! The ordering service's integration tests, in one binary: Raft clusters in one process
//! over an in-memory transport, the `Ordering` and `Cluster` services on loopback, and a
//! peer's `RemoteOrderer` following them.

mod cluster;
mod raft;
mod remote_orderer;
