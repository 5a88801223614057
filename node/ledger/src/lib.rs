//! The Runnel ledger as a library: every stage of execute → order → validate, with no
//! server, CLI or exporter in it. Embed it with [`Ledger::open`] (docs/embedding.md).
//!
//! The modules, in the order a transaction meets them: who may act ([`identity`],
//! [`policy`]), what is signed ([`tx`], [`proto`], [`sig`]), the state it runs on
//! ([`store`], over the append-only [`records`]), the contracts it runs ([`lifecycle`])
//! and the stage that runs them ([`endorser`]) with the rules every gathering of
//! endorsements keeps ([`gather`]), then the service that sequences it
//! ([`orderer`]) and the virtual blocks that seal the stream ([`block`]), the peer
//! pipeline that validates and commits it ([`validator`], with per-transaction
//! [`trace`]s), and the embeddable [`ledger`] that wires them in one process. [`metrics`]
//! holds the figures the ledger keeps about itself, for its embedder to export.

// Who may act, and what is signed: the wire contract's (runnel-api), under the ledger's
// names.
pub use runnel_api::{identity, ids, policy, proto, sig, tx};

// The state a transaction runs on, and the contracts.
pub mod lifecycle;
pub mod netconfig;
pub mod records;
pub mod store;

// Endorse.
pub mod endorser;
pub mod gather;

// Order, and seal the stream in virtual blocks.
pub mod block;
pub mod orderer;
pub mod seal_trust;

// Validate and commit.
pub(crate) mod guard;
pub mod queue;
pub mod trace;
pub mod validator;

// One process wiring them all, and what it reports of itself.
pub mod ledger;
pub mod metrics;

pub use ledger::{Ledger, LedgerConfig, LedgerError};
