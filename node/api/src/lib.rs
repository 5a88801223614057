//! Runnel's wire contract: what nodes, clients and contracts' hosts must agree on byte for
//! byte. [`proto`] holds every message, [`headers`] the metadata's names and [`codes`] the
//! error names; with the `identity` feature (the default), what is signed ([`tx`]) and
//! checked ([`sig`]), the ids that cross stages ([`ids`]), who may act ([`identity`]), the
//! endorsement-policy language ([`policy`]), read grants ([`grant`]) and a block's Merkle
//! tree ([`merkle`]). runnel-ledger re-exports those it builds on (the Merkle tree through
//! its `block`).
//!
//! The golden vectors in `node/api/vectors/` pin these formats for the SDKs in other
//! languages: `tests/it/vectors.rs` computes them with this crate and compares them with
//! the files, and `RUNNEL_WRITE_VECTORS=1 cargo test -p runnel-api --test it vectors`
//! writes them anew after a deliberate change of format.

pub mod codes;
pub mod headers;
pub mod proto;

#[cfg(feature = "identity")]
pub mod grant;
#[cfg(feature = "identity")]
pub mod identity;
#[cfg(feature = "identity")]
pub mod ids;
#[cfg(feature = "identity")]
pub mod merkle;
#[cfg(feature = "identity")]
pub mod policy;
#[cfg(feature = "identity")]
pub mod sig;
#[cfg(feature = "identity")]
pub mod tx;
