//! The `runnel` command's tests, in one binary: each runs the real binary as its own
//! process (nodes on loopback, a network's orderer and peers apart), the way users do.

mod attack;
mod bench_order;
mod bft;
mod bft_byzantine;
mod bft_faults;
mod bounds;
mod cli;
mod cluster;
mod config_updates;
mod connections;
mod exec;
mod ops;
mod orgs;
mod partition;
mod process;
mod raft_cluster;
mod sealers;
