//! Runnel's ordering service, everything that orders beyond the embedded default.
//!
//! runnel-ledger holds what every ordering service shares: the [`Orderer`] and
//! [`Delivery`] traits a peer's pipeline reads through, the stream log an orderer keeps,
//! and the solo orderer a one-process node embeds. This crate holds the rest:
//!
//! - [`raft`]: a crash-tolerant cluster of orderers that keeps the same stream log as a
//!   replicated one (raft-rs; its wire and log formats are Runnel's own);
//! - [`ordering`]: the `Ordering` gRPC service an orderer process serves to peers, with
//!   its operations endpoints;
//! - [`cluster`]: the `Cluster` gRPC service the orderers of a Raft cluster step each
//!   other's messages through, and its transport;
//! - [`remote`]: a peer's link to an ordering service in other processes, an [`Orderer`]
//!   that follows the cluster's leader;
//! - [`role`]: what an orderer process opens (solo, or its place in the cluster), and how
//!   a peer follows the orderers the definition in force names.
//!
//! A second protocol (Byzantine-fault-tolerant ordering) is a sibling of [`raft`] behind
//! the same traits. Nothing here reads state or runs a contract.
//!
//! [`Orderer`]: runnel_ledger::orderer::Orderer
//! [`Delivery`]: runnel_ledger::orderer::Delivery

pub mod bft;
pub mod cluster;
pub mod ordering;
pub mod raft;
pub mod remote;
pub mod role;
