//! The seal checks `runnel bench order` makes as it streams: runnel-ledger's own
//! ([`SealChain::accept`] against the orderers the network definition names), handed to
//! the load generator, whose crate never links the ledger.

use std::path::Path;

use anyhow::{Context, Result};
use runnel_bench::{SealCheck, SealChecks};
use runnel_ledger::block::{SealChain, Sealers, decode_signed_seal};
use runnel_ledger::identity::{Msp, NetworkDefinition};

/// Seal checks by runnel-ledger's block code.
pub struct LedgerSeals;

impl SealChecks for LedgerSeals {
    fn after(&self, dir: &Path, anchor: Option<&[u8]>) -> Result<Box<dyn SealCheck>> {
        let definition = NetworkDefinition::load(dir)
            .with_context(|| format!("reading the network definition in {}", dir.display()))?;
        let msp = definition.msp()?;
        let chain = match anchor {
            Some(bytes) => SealChain::after(&decode_signed_seal(bytes)?),
            None => SealChain::genesis(),
        };
        Ok(Box::new(Check {
            definition,
            msp,
            chain,
        }))
    }
}

/// One stream's chain, checked against the definition's orderers.
struct Check {
    definition: NetworkDefinition,
    msp: Msp,
    chain: SealChain,
}

impl SealCheck for Check {
    fn accept(&mut self, signed_seal: &[u8], leaves: &[[u8; 32]]) -> Result<(u64, u64), String> {
        let sealers = Sealers::of(&self.definition, &self.msp);
        let sealed = self
            .chain
            .accept(signed_seal, leaves, &sealers)
            .map_err(|e| e.to_string())?;
        Ok((sealed.seal.first.0, sealed.seal.last.0))
    }
}
