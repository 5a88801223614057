//! Every message of `node/proto/runnel/v1/`: the read/write sets (`rwset.proto`),
//! proposals, endorsements, transactions and contract definitions (`transaction.proto`),
//! ordered transactions, seals and inclusion proofs (`block.proto`), and the messages of the
//! node's services (`api.proto`, `ordering.proto`, `cluster.proto`; the services
//! themselves are generated in runnel-server).

#![allow(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/runnel.v1.rs"));

impl Version {
    /// The version written by the transaction at sequence number `seq`.
    pub fn from_seq(seq: u64) -> Self {
        Version { seq }
    }
}
