//! Types generated from `node/proto/runnel/v1/transaction.proto` (proposals, endorsements,
//! transactions, contract definitions), `block.proto` (ordered transactions, seals,
//! inclusion proofs), `api.proto`, `ordering.proto` and `cluster.proto` (the messages of
//! the node's services; the services themselves are generated in runnel-server), plus the
//! read/write-set types they embed.

#![allow(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/runnel.v1.rs"));

pub use runnel_runtime::proto::{
    ContractEvent, KvRead, KvWrite, NsRwSet, RangeRead, SimulationPayload, Version,
};
