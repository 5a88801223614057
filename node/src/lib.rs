//! The Runnel ledger node.
//!
//! Today this crate holds the local runner behind `runnel exec`: run one contract call
//! against a state kept in a file, and show what the call read and wrote. The ledger's
//! stages (identity, policy, store, endorser, orderer, validator, ledger, api) arrive as
//! modules here, in the order a transaction meets them.

pub mod identity;
pub mod local;
pub mod policy;
