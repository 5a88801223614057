//! The node's gRPC services, generated from `node/proto/runnel/v1/api.proto`,
//! `ordering.proto` and `cluster.proto` (a server module and a client module per service, e.g.
//! `gateway_server` and `gateway_client`), beside the ledger's message types
//! ([`runnel_ledger::proto`]), which they use.

#![allow(missing_docs)]

pub use runnel_ledger::proto::*;

include!(concat!(env!("OUT_DIR"), "/runnel.v1.rs"));
