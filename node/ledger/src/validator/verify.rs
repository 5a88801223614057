//! Stage 1: decode once, check certificates, verify every signature (batched).

use std::collections::HashSet;
use std::sync::Arc;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use prost::Message;

use super::{POLL, Shared, send, stamp};
use crate::identity::{Identity, IdentityError};
use crate::ids::{Seq, TxId, ValidationCode};
use crate::lifecycle::LIFECYCLE_NAMESPACE;
use crate::orderer::OrderedTx;
use crate::policy::Endorser as PolicyEndorser;
use crate::proto::{Proposal, ResponsePayload, SignedTransaction, Transaction};
use crate::sig::SigCheck;
use crate::trace::Stage;
use crate::tx::{self, Hash};

/// A transaction as delivered, for stage 1.
pub(crate) struct Job {
    pub ordered: OrderedTx,
    pub delivered_us: u64,
}

/// What stage 1 hands on: the typed parts of a transaction, or the code that already
/// makes it invalid.
pub(crate) struct Verified {
    pub seq: Seq,
    pub timestamp_ms: u64,
    pub tx_id: TxId,
    /// The Merkle leaf of the transaction with its timestamp (for seal checks).
    pub leaf: Hash,
    /// The transaction as delivered, for the block store.
    pub transaction: Vec<u8>,
    pub outcome: Result<Decoded, ValidationCode>,
    /// The MSP's epoch its certificates were checked in ([`crate::identity::Msp::epoch`]):
    /// stage 2 checks it again if a configuration transaction changed the trust since.
    pub epoch: u64,
}

/// A transaction whose signatures all verified.
pub(crate) struct Decoded {
    /// The contract invoked (`_lifecycle` for deploy / upgrade).
    pub contract: String,
    /// The agreed response payload.
    pub payload: ResponsePayload,
    /// Distinct endorsers whose certificates and signatures verified.
    pub endorsers: Vec<PolicyEndorser>,
    /// For a `_lifecycle` transaction, its function and its creator's organisation,
    /// which decide its policy and what it may write.
    pub lifecycle: Option<(String, String)>,
}

/// A decoded transaction with the signatures still to verify.
struct Pending {
    decoded: Decoded,
    /// The creator's signature over the transaction.
    creator: SigCheck,
    /// One per distinct valid endorser.
    endorsements: Vec<SigCheck>,
}

/// Stage 1 worker: takes whatever is queued (up to `batch_max`), verifies all its
/// signatures as one batch, and hands each transaction on.
pub(crate) fn run(shared: &Shared, jobs: &Receiver<Job>, out: &Sender<Verified>) {
    let batch_max = shared.config.batch_max.max(1);
    loop {
        let first = match crate::queue::recv_timeout(jobs, POLL) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) if !shared.stopping() => continue,
            Err(_) => return,
        };
        let mut batch = vec![first];
        while batch.len() < batch_max {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut decoded: Vec<(Verified, Option<Pending>)> = batch
            .into_iter()
            .map(|job| {
                let decoded = decode(shared, job.ordered);
                stamp(shared, decoded.0.tx_id, Stage::Delivered, job.delivered_us);
                decoded
            })
            .collect();
        let checks: Vec<SigCheck> = decoded
            .iter()
            .filter_map(|(_, pending)| pending.as_ref())
            .flat_map(|p| std::iter::once(&p.creator).chain(&p.endorsements))
            .cloned()
            .collect();
        let mut verdicts = shared.msp.signatures().verify_all(&checks).into_iter();
        for (verified, pending) in &mut decoded {
            if let Some(pending) = pending.take() {
                conclude(verified, pending, &mut verdicts);
            }
        }
        for (verified, _) in decoded {
            stamp(shared, verified.tx_id, Stage::Verified, tx::now_us());
            if !send(shared, out, verified) {
                return;
            }
        }
    }
}

/// Takes a transaction's signature verdicts, in the order of its checks (the creator's,
/// then each endorsement's), and sets its outcome.
fn conclude(verified: &mut Verified, pending: Pending, verdicts: &mut impl Iterator<Item = bool>) {
    let creator_ok = verdicts.next().unwrap_or(false);
    // Take every endorsement's verdict, so the next transaction's start in line.
    let endorsement_verdicts: Vec<bool> = pending
        .endorsements
        .iter()
        .map(|_| verdicts.next().unwrap_or(false))
        .collect();
    let endorsers_ok = endorsement_verdicts.iter().all(|ok| *ok);
    verified.outcome = if !creator_ok {
        Err(ValidationCode::BadCreatorSignature)
    } else if !endorsers_ok {
        Err(ValidationCode::BadEndorserSignature)
    } else {
        Ok(pending.decoded)
    };
}

/// Stage 1's work for one transaction, now: what stage 2 does for a transaction stage 1
/// checked under a trust a configuration transaction has since changed.
pub(crate) fn verify_now(shared: &Shared, verified: Verified) -> Verified {
    let ordered = OrderedTx {
        seq: verified.seq,
        timestamp_ms: verified.timestamp_ms,
        transaction: verified.transaction,
    };
    let (mut again, pending) = decode(shared, ordered);
    if let Some(pending) = pending {
        let checks: Vec<SigCheck> = std::iter::once(&pending.creator)
            .chain(&pending.endorsements)
            .cloned()
            .collect();
        let mut verdicts = shared.msp.signatures().verify_all(&checks).into_iter();
        conclude(&mut again, pending, &mut verdicts);
    }
    again
}

/// Decodes a delivered transaction and checks everything but the signatures, which it
/// returns to verify. A transaction that cannot be decoded is recorded under the hash
/// of its bytes as its id.
fn decode(shared: &Shared, ordered: OrderedTx) -> (Verified, Option<Pending>) {
    let decoded = crate::tx::decode_transaction(&ordered.transaction);
    let tx_id = match &decoded {
        Ok((_, _, proposal)) => tx::tx_id(proposal),
        Err(_) => TxId(tx::sha256(&ordered.transaction)),
    };
    let mut verified = Verified {
        seq: ordered.seq,
        timestamp_ms: ordered.timestamp_ms,
        tx_id,
        leaf: ordered.leaf(),
        transaction: Vec::new(),
        outcome: Err(ValidationCode::BadPayload),
        // Read before any certificate is checked: a change of trust meanwhile shows.
        epoch: shared.msp.epoch(),
    };
    let pending = match decoded {
        Err(_) => None,
        Ok((signed, transaction, proposal)) => {
            match check(shared, ordered.timestamp_ms, &signed, transaction, proposal) {
                Ok(pending) => Some(pending),
                Err(code) => {
                    verified.outcome = Err(code);
                    None
                }
            }
        }
    };
    verified.transaction = ordered.transaction;
    (verified, pending)
}

fn creator_code(error: &IdentityError) -> ValidationCode {
    match error {
        IdentityError::OutsideValidity { .. } => ValidationCode::ExpiredCertificate,
        IdentityError::Revoked { .. } => ValidationCode::RevokedCertificate,
        _ => ValidationCode::BadCreatorSignature,
    }
}

fn check(
    shared: &Shared,
    timestamp_ms: u64,
    signed: &SignedTransaction,
    transaction: Transaction,
    proposal: Proposal,
) -> Result<Pending, ValidationCode> {
    let config = &shared.config;
    if proposal.channel != config.channel || proposal.contract.is_empty() {
        return Err(ValidationCode::BadPayload);
    }
    // The orderer's timestamp, the same on every peer, is the clock.
    if tx::check_window(proposal.timestamp_ms, timestamp_ms, config.proposal_window).is_err() {
        return Err(ValidationCode::TimestampOutOfWindow);
    }
    let signed_proposal = transaction.proposal.unwrap_or_default();
    let proposal_hash = tx::sha256(&signed_proposal.proposal);
    let payload = ResponsePayload::decode(transaction.payload.as_slice())
        .map_err(|_| ValidationCode::BadPayload)?;
    if payload.proposal_hash != proposal_hash {
        return Err(ValidationCode::BadPayload);
    }
    // Certificates are checked at the orderer's time, the same on every peer.
    let now = i64::try_from(timestamp_ms / 1000).unwrap_or(i64::MAX);
    let creator = shared
        .msp
        .verify(&proposal.creator, now)
        .map_err(|e| creator_code(&e))?;
    let roles = if proposal.contract == LIFECYCLE_NAMESPACE
        || proposal.contract == crate::netconfig::CONFIG_NAMESPACE
    {
        &config.lifecycle_roles
    } else {
        &config.invoke_roles
    };
    creator
        .require_role(roles)
        .map_err(|_| ValidationCode::BadCreatorSignature)?;
    let creator_check = SigCheck {
        key: creator.verifying_key().to_bytes(),
        message: tx::transaction_message(&tx::sha256(&signed.transaction)),
        signature: signed.signature.clone(),
    };

    let endorsement_message =
        tx::endorsement_message(&proposal_hash, &tx::sha256(&transaction.payload));
    let may_endorse = crate::lifecycle::endorser_roles(&proposal.contract);
    // More endorsements than any policy uses are bytes only ([`tx::ENDORSEMENTS_MAX`]).
    if transaction.endorsements.len() > tx::ENDORSEMENTS_MAX {
        return Err(ValidationCode::TooManyEndorsements);
    }
    let mut seen = HashSet::new();
    let mut endorsers = Vec::new();
    let mut endorsements = Vec::new();
    for endorsement in &transaction.endorsements {
        // An endorsement whose certificate is not valid here, or whose identity may not
        // endorse, does not count; the policy decides whether the others suffice.
        let Ok(identity) = shared.msp.verify(&endorsement.endorser, now) else {
            continue;
        };
        if !may_endorse.contains(&identity.role) || !seen.insert(identity.key) {
            continue;
        }
        endorsements.push(SigCheck {
            key: identity.verifying_key().to_bytes(),
            message: endorsement_message.clone(),
            signature: endorsement.signature.clone(),
        });
        endorsers.push(policy_endorser(&identity));
    }
    let lifecycle = (proposal.contract == LIFECYCLE_NAMESPACE)
        .then(|| (proposal.function.clone(), creator.org.clone()));
    Ok(Pending {
        decoded: Decoded {
            contract: proposal.contract,
            payload,
            endorsers,
            lifecycle,
        },
        creator: creator_check,
        endorsements,
    })
}

fn policy_endorser(identity: &Arc<Identity>) -> PolicyEndorser {
    PolicyEndorser::new(identity.org.clone(), identity.role)
}
