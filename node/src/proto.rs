//! Types generated from `node/proto/runnel/v1/transaction.proto` (proposals, endorsements,
//! transactions, contract definitions), `block.proto` (ordered transactions, seals,
//! inclusion proofs) and `api.proto` (the API's requests and responses, with a server
//! module and a client module per service, e.g. `gateway_server` and `gateway_client`),
//! plus the read/write-set types they embed.

#![allow(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/runnel.v1.rs"));

pub use runnel_runtime::proto::{
    ContractEvent, KvRead, KvWrite, NsRwSet, RangeRead, SimulationPayload, Version,
};
