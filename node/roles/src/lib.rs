//! A Runnel node's roles as a library: [`Node::start`] opens and serves, from a node
//! directory and its settings ([`config::NodeConfig`], `runnel.toml`), one of
//!
//! - **all** roles in one process: the embedded ledger with its solo orderer, served by
//!   runnel-server, with the operations endpoints and the explorer's files;
//! - a **peer**: the same ledger ordering through the ordering service in other processes
//!   ([`peer`]), following the orderers the definition in force names;
//! - an **orderer**: runnel-orderer's solo orderer or Raft member, serving the `Ordering`
//!   (and `Cluster`) services.
//!
//! The `runnel` command is argument parsing over this crate, and tests that need a node in
//! their own process start it the same way. Starting a node never initialises logging (a
//! process has one subscriber: [`runnel_server::ops::init_logs`] is the caller's) and
//! never reads the command line or the environment.

pub mod config;
mod node;
pub mod peer;

pub use config::{NodeConfig, NodeRole};
pub use node::{Node, StartOptions};
