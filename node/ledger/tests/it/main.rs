//! The ledger's integration tests, in one binary: each module drives the public API of a
//! stage (or the whole `Ledger`) on real files in a temp directory.

mod endorser;
mod ledger;
mod ledger_crash;
mod orderer;
mod pipeline;
mod policy;
mod store;
mod store_crash;
