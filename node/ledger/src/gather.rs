//! Gathering a proposal's endorsements: one set of rules, whichever peers endorse.
//!
//! A gateway collects the endorsements a transaction needs from two kinds of peers: those
//! of the organisations its own process acts for (the ledger's local endorsers, which run
//! the contract on the thread that asks) and those of other organisations (runnel-server's
//! remote peers, asked over mutual TLS). Both are [`EndorsementGatherer`]s and both add
//! what they bring to one [`Gathering`], which keeps the rules every endorsement meets
//! whatever its source:
//!
//! - it endorses exactly the payload of the first one (read/write set, result and
//!   events): endorsements that disagree make a transaction every validator refuses, so
//!   the gateway refuses it first ([`GatherError::Mismatch`]);
//! - at most one endorsement per endorser (by public key) goes into the transaction,
//!   whoever asked or answered;
//! - the organisations still to ask are [`Gathering::needs`]: the local gatherer, which
//!   reads the policy in force, asks its own organisations first (they cost no round
//!   trip) and leaves the fewest others ([`crate::policy::Policy::orgs_to_ask`]); the
//!   remote gatherer asks those, in parallel.
//!
//! The local gatherer never waits: its [`EndorsementGatherer::Gathered`] future is ready
//! when made, so the endorse batcher's threads run it inline; the remote one is async and
//! runs on the server's tasks, so no batcher thread waits for a round trip.

use std::future::Future;

use crate::ids::TxId;
use crate::policy::{Endorser as PolicyEndorser, Policy};
use crate::proto::{Endorsement, SignedProposal, Transaction};

/// One endorsement as a gatherer brings it.
#[derive(Debug, Clone)]
pub struct Offer {
    /// The organisation it endorses for.
    pub org: String,
    /// Who endorsed (a peer's name, for messages).
    pub by: String,
    /// The payload it endorses.
    pub payload: Vec<u8>,
    /// The endorser's public key.
    pub key: [u8; 32],
    /// The endorsement.
    pub endorsement: Endorsement,
}

/// Why an endorsement was not added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatherError {
    /// It endorses another payload than the first endorsement did.
    #[error(
        "{by} endorsed a different payload (read/write set, result or events) than this peer \
         did: the contract is not deterministic, or the peers' states differ"
    )]
    Mismatch {
        /// The organisation it endorsed for.
        org: String,
        /// Who endorsed.
        by: String,
    },
}

/// What a gathering's endorsements must satisfy.
#[derive(Debug, Clone)]
pub enum Target {
    /// The organisations the client named: a peer of each endorses.
    Orgs(Vec<String>),
    /// The endorsement policy in force for the proposal's contract (or, for
    /// `_lifecycle`, for its call).
    Policy(Policy),
    /// None could be read (the contract is not deployed, or its definition holds no
    /// policy that parses): the first endorsement is all there is to give, and the
    /// validator decides.
    FirstOnly,
}

/// The endorsements of one proposal collected so far, and the organisations still to ask.
#[derive(Debug, Clone)]
pub struct Gathering {
    pub(crate) signed: SignedProposal,
    contract: String,
    pub(crate) target: Target,
    tx_id: TxId,
    result: Vec<u8>,
    /// The first endorsement's payload: every other must endorse the same.
    payload: Vec<u8>,
    /// What goes into the transaction, in the order added.
    endorsements: Vec<Endorsement>,
    /// Who endorsed, by public key: one endorsement each (a few: one per organisation).
    keys: Vec<[u8; 32]>,
    /// The organisations' peers counted, for the policy.
    have: Vec<PolicyEndorser>,
    /// The organisations still to ask.
    needs: Vec<String>,
}

impl Gathering {
    /// A gathering of `signed` (a call of `contract`) towards `target`, whose first
    /// endorsement is `first` (its payload is the one the others must match); `counted`:
    /// it goes into the transaction, or (false) its organisation was not asked for and it
    /// only sets the payload and the result.
    pub fn new(
        (signed, contract, target): (SignedProposal, String, Target),
        tx_id: TxId,
        result: Vec<u8>,
        first: Offer,
        counted: bool,
    ) -> Gathering {
        let Offer {
            org,
            payload,
            key,
            endorsement,
            ..
        } = first;
        let mut gathering = Gathering {
            signed,
            contract,
            target,
            tx_id,
            result,
            payload,
            endorsements: Vec::new(),
            keys: Vec::new(),
            have: Vec::new(),
            needs: Vec::new(),
        };
        // The first endorsement's payload is the reference: it matches itself.
        if counted {
            gathering.count(org, key, endorsement);
        }
        gathering
    }

    /// Adds `offer` if it endorses the first endorsement's payload; true if it went into
    /// the transaction, false if its endorser had endorsed already. Its organisation is
    /// no longer needed either way.
    pub fn add(&mut self, offer: Offer) -> Result<bool, GatherError> {
        if offer.payload != self.payload {
            return Err(GatherError::Mismatch {
                org: offer.org,
                by: offer.by,
            });
        }
        self.needs.retain(|org| *org != offer.org);
        if self.keys.contains(&offer.key) {
            return Ok(false);
        }
        self.count(offer.org, offer.key, offer.endorsement);
        Ok(true)
    }

    /// Puts an endorsement by a peer of `org` with public key `key` into the transaction.
    fn count(&mut self, org: String, key: [u8; 32], endorsement: Endorsement) {
        self.keys.push(key);
        self.have
            .push(PolicyEndorser::new(org, crate::identity::Role::Peer));
        self.endorsements.push(endorsement);
    }

    /// The proposal endorsed.
    pub fn signed(&self) -> &SignedProposal {
        &self.signed
    }

    /// Its transaction's id.
    pub fn tx_id(&self) -> TxId {
        self.tx_id
    }

    /// What the function returned, as the first endorsement has it.
    pub fn result(&self) -> &[u8] {
        &self.result
    }

    /// The contract called.
    pub fn contract(&self) -> &str {
        &self.contract
    }

    /// What the endorsements must satisfy.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Whether a peer of `org` has endorsed.
    pub fn has(&self, org: &str) -> bool {
        self.have.iter().any(|endorser| endorser.org == org)
    }

    /// The organisations whose peers have endorsed, for a policy to evaluate.
    pub fn have(&self) -> &[PolicyEndorser] {
        &self.have
    }

    /// The organisations whose peers must still endorse, each once.
    pub fn needs(&self) -> &[String] {
        &self.needs
    }

    /// Sets the organisations still to ask.
    pub fn set_needs(&mut self, needs: Vec<String>) {
        self.needs = needs;
    }

    /// The transaction with the endorsements gathered, for its creator to sign, and what
    /// it still needs.
    pub fn into_prepared(self) -> Prepared {
        Prepared {
            tx_id: self.tx_id,
            transaction: Transaction {
                proposal: Some(self.signed),
                payload: self.payload,
                endorsements: self.endorsements,
            },
            result: self.result,
            needs: self.needs,
        }
    }
}

/// A transaction endorsed for a proposal signed elsewhere, for its creator to sign
/// ([`crate::tx::sign_transaction`]) and submit
/// ([`crate::ledger::Gateway::submit_signed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// Its id.
    pub tx_id: TxId,
    /// The signed proposal, the agreed payload and the endorsements.
    pub transaction: Transaction,
    /// What the function returned, as endorsed.
    pub result: Vec<u8>,
    /// The organisations whose peers must still endorse it, each once, before it
    /// satisfies the policy in force (or the organisations asked for): other processes'
    /// peers, which a gateway's remote gatherer asks. Empty: the transaction is ready to
    /// sign.
    pub needs: Vec<String>,
}

/// A source of endorsements for a [`Gathering`].
pub trait EndorsementGatherer {
    /// Why it could not bring what it was to bring.
    type Error;
    /// The future [`EndorsementGatherer::gather`] returns: ready when made for a
    /// gatherer that never waits.
    type Gathered<'a>: Future<Output = Result<(), Self::Error>> + Send + 'a
    where
        Self: 'a;

    /// Adds to `gathering` the endorsements this gatherer can give of those it needs.
    fn gather<'a>(&'a self, gathering: &'a mut Gathering) -> Self::Gathered<'a>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(org: &str, key: u8, payload: &[u8]) -> Offer {
        Offer {
            org: org.to_string(),
            by: format!("peer0.{org}"),
            payload: payload.to_vec(),
            key: [key; 32],
            endorsement: Endorsement {
                endorser: vec![key],
                signature: vec![key],
            },
        }
    }

    fn gathering(first: Offer, counted: bool) -> Gathering {
        Gathering::new(
            (SignedProposal::default(), "kv".into(), Target::FirstOnly),
            TxId([7; 32]),
            b"result".to_vec(),
            first,
            counted,
        )
    }

    #[test]
    fn an_endorsement_of_another_payload_is_refused_and_changes_nothing() {
        let mut gathering = gathering(offer("Org1", 1, b"p"), true);
        gathering.set_needs(vec!["Org2".into()]);
        let error = gathering.add(offer("Org2", 2, b"q")).unwrap_err();
        assert_eq!(
            error,
            GatherError::Mismatch {
                org: "Org2".into(),
                by: "peer0.Org2".into()
            }
        );
        assert_eq!(gathering.needs(), ["Org2".to_string()]);
        let prepared = gathering.into_prepared();
        assert_eq!(prepared.transaction.endorsements.len(), 1);
        assert_eq!(prepared.transaction.payload, b"p");
    }

    #[test]
    fn one_endorsement_per_endorser_whoever_brings_it() {
        let mut gathering = gathering(offer("Org1", 1, b"p"), true);
        gathering.set_needs(vec!["Org2".into()]);
        assert!(gathering.add(offer("Org2", 2, b"p")).unwrap());
        assert!(!gathering.add(offer("Org2", 2, b"p")).unwrap());
        assert!(gathering.needs().is_empty());
        assert_eq!(gathering.have().len(), 2);
        assert_eq!(gathering.into_prepared().transaction.endorsements.len(), 2);
    }

    #[test]
    fn a_first_endorsement_not_asked_for_sets_the_payload_but_is_not_counted() {
        let mut gathering = gathering(offer("Org1", 1, b"p"), false);
        assert!(gathering.have().is_empty());
        assert!(gathering.add(offer("Org2", 2, b"q")).is_err());
        assert!(gathering.add(offer("Org2", 2, b"p")).unwrap());
        let prepared = gathering.into_prepared();
        assert_eq!(prepared.transaction.endorsements.len(), 1);
        assert_eq!(prepared.transaction.endorsements[0].endorser, vec![2]);
        assert_eq!(prepared.result, b"result");
    }
}
