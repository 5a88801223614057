//! The Runnel ledger node.
//!
//! Modules in the order a transaction meets them: who may act ([`identity`], [`policy`]),
//! what is signed ([`tx`], [`proto`]), the state it runs on ([`store`]), the contracts
//! it runs ([`lifecycle`]) and the stage that runs them ([`endorser`]). Ordering, the
//! validator pipeline, the embeddable `Ledger` and the API arrive as further modules.
//! [`local`] is the development runner behind `runnel exec`.

pub mod endorser;
pub mod identity;
pub mod ids;
pub mod lifecycle;
pub mod local;
pub mod policy;
pub mod proto;
pub mod store;
pub mod tx;
