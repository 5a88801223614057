//! The Runnel ledger node.
//!
//! The modules, in the order a transaction meets them: who may act ([`identity`],
//! [`policy`]), what is signed ([`tx`], [`proto`], [`sig`]), the state it runs on
//! ([`store`]), the contracts it runs ([`lifecycle`]) and the stage that runs them
//! ([`endorser`]), then the service that sequences it ([`orderer`]) and the virtual
//! blocks that seal the stream ([`block`]), the peer pipeline that validates and commits
//! it ([`validator`], with per-transaction [`trace`]s), the embeddable [`ledger`] that
//! wires them in one process, and the gRPC / gRPC-web [`api`] over it. [`local`] is the
//! development runner behind `runnel exec`.

pub mod api;
pub mod block;
pub mod config;
pub mod endorser;
pub mod identity;
pub mod ids;
pub mod ledger;
pub mod lifecycle;
pub mod local;
pub mod metrics;
pub mod ops;
pub mod orderer;
pub mod policy;
pub mod proto;
mod queue;
pub mod records;
pub mod sched;
pub mod sig;
pub mod store;
pub mod trace;
pub mod tx;
pub mod validator;
