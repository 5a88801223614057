//! The gateway's split flow: the whole flow of [`Ledger::submit`], split where a client's
//! key is needed, for transactions assembled and signed elsewhere (the API's clients).
//!
//! [`Gateway::endorse_signed`] takes a proposal the client signed and returns the
//! endorsed transaction for the client to sign (a server batches proposals through
//! [`Gateway::run_proposals`], and asks other organisations' peers for what the answer
//! still [`Gathering::needs`]); [`Gateway::submit_signed`] orders the signed transaction
//! ([`Gateway::check_submit`] and [`Gateway::submit_checked`] when a server batches
//! submits); [`Ledger::status`] and the [`Ledger::statuses`] broadcast tell how far it has
//! got.

use prost::Message;

use super::{Ledger, LedgerError};
use crate::endorser::{Checked, EndorseError};
use crate::gather::{EndorsementGatherer, Gathering};
use crate::ids::{Seq, TxId};
use crate::orderer::OrderError;
use crate::proto::{Proposal, SignedProposal};
use crate::trace::Stage;
use crate::tx;

/// A signed proposal to endorse, or only to evaluate ([`Gateway::run_proposals`]).
#[derive(Debug, Clone)]
pub enum ProposalCall {
    /// Endorse it: the answer is the gathering of its endorsements, this ledger's
    /// organisations' given. The organisations named endorse it (those of them this
    /// ledger acts for, here; the others are [`Gathering::needs`]); none named: as the
    /// policy in force needs.
    Endorse(SignedProposal, Vec<String>),
    /// Evaluate it: the answer is the function's result; nothing is submitted.
    Evaluate(SignedProposal),
}

/// The answer to a [`ProposalCall`].
#[derive(Debug)]
pub enum ProposalAnswer {
    /// The endorsements gathered here, and what the transaction still needs.
    Endorsed(Result<Box<Gathering>, LedgerError>),
    /// What [`Gateway::evaluate_signed`] answered.
    Evaluated(Result<Vec<u8>, LedgerError>),
}

/// A signed transaction checked for ordering ([`Gateway::check_submit`]): its bytes, and
/// for an orderer in another process, what is left to verify of it here.
#[derive(Debug)]
pub struct ToOrder {
    bytes: Vec<u8>,
    checked: Option<crate::orderer::Checked>,
}

impl ToOrder {
    /// Its size, in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it holds no bytes (never, once checked).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A ledger's gateway ([`Ledger::gateway`]).
#[derive(Clone, Copy)]
pub struct Gateway<'a> {
    pub(super) ledger: &'a Ledger,
}

impl<'a> Gateway<'a> {
    /// Whether the orderer takes transactions in batches (one in another process):
    /// whether submits are worth queuing together ([`Gateway::submit_checked`]).
    pub fn submits_in_batches(&self) -> bool {
        self.ledger.orderer.submits_in_batches()
    }

    /// Batches of submits worth having in flight at once ([`Orderer::submits_in_flight`]).
    pub fn submits_in_flight(&self) -> usize {
        self.ledger.orderer.submits_in_flight()
    }

    /// Runs a proposal signed elsewhere on the current state and returns its result,
    /// without a transaction. The creator and signature are checked as for an endorsement.
    pub fn evaluate_signed(&self, signed: &SignedProposal) -> Result<Vec<u8>, LedgerError> {
        Ok(self.ledger.local.orgs[0].peer.evaluate(signed)?)
    }

    /// Endorses a proposal signed elsewhere with the peers of the organisations this
    /// ledger acts for, as many as the policy in force needs (or those of `orgs`, when
    /// named), and returns the gathering: the transaction for its creator to sign
    /// ([`Gathering::into_prepared`]) once the organisations whose peers must still
    /// endorse it ([`Gathering::needs`]) have. Stamps the endorsement stages of its trace.
    pub fn endorse_signed(
        &self,
        signed: &SignedProposal,
        orgs: &[String],
    ) -> Result<Gathering, LedgerError> {
        let started_us = tx::now_us();
        let proposal = self.decode_proposal(signed)?;
        self.gather(&proposal.contract, signed, None, orgs, started_us)
    }

    /// [`Gateway::endorse_signed`] of a proposal the first organisation's peer has checked
    /// ([`Endorser::check_batch`]).
    fn endorse_checked(
        &self,
        signed: &SignedProposal,
        checked: Result<Checked, EndorseError>,
        orgs: &[String],
    ) -> Result<Gathering, LedgerError> {
        let started_us = tx::now_us();
        let checked = checked?;
        let contract = checked.contract().to_string();
        self.gather(&contract, signed, Some(checked), orgs, started_us)
    }

    /// The endorsements of this ledger's organisations' peers, gathered towards `orgs`
    /// (none: the policy in force), with the organisations whose peers must still
    /// endorse; stamps the endorsement stages of its trace.
    fn gather(
        &self,
        contract: &str,
        signed: &SignedProposal,
        checked: Option<Checked>,
        orgs: &[String],
        started_us: u64,
    ) -> Result<Gathering, LedgerError> {
        let local = &self.ledger.local;
        let mut gathering = local.start(contract, signed, checked, orgs)?;
        // Ready when made: the local endorsers never wait.
        local.gather(&mut gathering).into_inner()?;
        let ended_us = tx::now_us();
        let tx_id = gathering.tx_id();
        self.ledger
            .traces
            .mark(tx_id, Stage::EndorseStart, started_us);
        self.ledger.traces.mark(tx_id, Stage::EndorseEnd, ended_us);
        Ok(gathering)
    }

    /// Orders an encoded `SignedTransaction` assembled and signed elsewhere; returns its
    /// id and seq once it has one. Its status follows ([`Gateway::status`],
    /// [`Gateway::statuses`]). A transaction whose id the ledger already holds is refused
    /// ([`LedgerError::DuplicateTxId`]) instead of being ordered again.
    pub fn submit_signed(&self, signed_transaction: Vec<u8>) -> Result<(TxId, Seq), LedgerError> {
        let to_order = self.check_submit(signed_transaction)?;
        self.submit_checked(vec![to_order])
            .pop()
            .unwrap_or(Err(LedgerError::Order(OrderError::Closed)))
    }

    /// What a `Submit` is checked for before it queues: its size, shape and id (not
    /// one the ledger holds already) and, when the orderer is another process, all that
    /// the orderer checks ([`crate::orderer::check`]) but the signatures of its creator
    /// and of the endorsement that vouches for it, which [`Gateway::submit_checked`]
    /// verifies for a whole batch at once, through the cache the validator reads.
    pub fn check_submit(&self, signed_transaction: Vec<u8>) -> Result<ToOrder, LedgerError> {
        let (tx_id, checked) = if self.ledger.orderer_elsewhere {
            let checked = crate::orderer::check(
                &self.ledger.orderer_config,
                &self.ledger.msp,
                &signed_transaction,
                true,
            )?;
            (checked.tx_id, Some(checked))
        } else {
            (self.id_to_order(&signed_transaction)?, None)
        };
        self.new_id(tx_id)?;
        Ok(ToOrder {
            bytes: signed_transaction,
            checked,
        })
    }

    /// Orders checked transactions, in their order, each with its own answer: their
    /// signatures left to check verified as one batch (a transaction whose signatures
    /// fail is refused alone), the others handed to the orderer together
    /// ([`Orderer::submit_batch`]).
    pub fn submit_checked(&self, to_order: Vec<ToOrder>) -> Vec<Result<(TxId, Seq), LedgerError>> {
        let (bytes, checked): (Vec<Vec<u8>>, Vec<Option<crate::orderer::Checked>>) = to_order
            .into_iter()
            .map(|to_order| (to_order.bytes, to_order.checked))
            .unzip();
        let to_verify: Vec<_> = checked.iter().flatten().cloned().map(Ok).collect();
        let mut verified = crate::orderer::verify_checked(&self.ledger.msp, to_verify).into_iter();
        let mut answers: Vec<Option<Result<(TxId, Seq), LedgerError>>> =
            Vec::with_capacity(bytes.len());
        let mut batch = Vec::with_capacity(bytes.len());
        for (bytes, checked) in bytes.into_iter().zip(checked) {
            let verdict = match checked {
                Some(_) => verified
                    .next()
                    .unwrap_or(Err(OrderError::Closed))
                    .map(|_| ()),
                None => Ok(()),
            };
            match verdict {
                Ok(()) => {
                    batch.push(bytes);
                    answers.push(None);
                }
                Err(error) => answers.push(Some(Err(error.into()))),
            }
        }
        let mut ordered = self.ledger.orderer.submit_batch(batch).into_iter();
        answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or_else(|| {
                    let ordered = ordered.next().unwrap_or(Err(OrderError::Closed))?;
                    self.ledger.mark_ordered(&ordered);
                    Ok((ordered.tx_id, ordered.seq))
                })
            })
            .collect()
    }

    /// Endorses or evaluates each proposal ([`Gateway::endorse_signed`],
    /// [`Gateway::evaluate_signed`]), checking each once and verifying all their creator
    /// signatures as one batch first. The answers come in the order of `calls`, each
    /// computed as the iterator reaches it.
    pub fn run_proposals(
        self,
        calls: Vec<ProposalCall>,
    ) -> impl Iterator<Item = ProposalAnswer> + 'a {
        let (kinds, signed): (Vec<Option<Vec<String>>>, Vec<SignedProposal>) = calls
            .into_iter()
            .map(|call| match call {
                ProposalCall::Endorse(signed, orgs) => (Some(orgs), signed),
                ProposalCall::Evaluate(signed) => (None, signed),
            })
            .unzip();
        let peer = &self.ledger.local.orgs[0].peer;
        let checked = peer.check_batch(&signed);
        signed
            .into_iter()
            .zip(kinds)
            .zip(checked)
            .map(move |((signed, endorse), checked)| {
                if let Some(orgs) = endorse {
                    ProposalAnswer::Endorsed(
                        self.endorse_checked(&signed, checked, &orgs).map(Box::new),
                    )
                } else {
                    ProposalAnswer::Evaluated(
                        checked
                            .and_then(|checked| peer.evaluate_checked(&checked))
                            .map_err(LedgerError::from),
                    )
                }
            })
    }

    /// [`Gateway::submit_signed`] for several transactions, in their order, each with its
    /// own answer; an orderer in this process admits them as one batch
    /// ([`Orderer::submit_batch`]).
    pub fn submit_signed_batch(
        &self,
        signed_transactions: Vec<Vec<u8>>,
    ) -> Vec<Result<(TxId, Seq), LedgerError>> {
        let mut answers: Vec<Option<Result<(TxId, Seq), LedgerError>>> =
            Vec::with_capacity(signed_transactions.len());
        let mut to_order = Vec::with_capacity(signed_transactions.len());
        for signed_transaction in signed_transactions {
            match self.check_submit(signed_transaction) {
                Ok(checked) => {
                    to_order.push(checked);
                    answers.push(None);
                }
                Err(error) => answers.push(Some(Err(error))),
            }
        }
        let mut ordered = self.submit_checked(to_order).into_iter();
        answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or_else(|| {
                    ordered
                        .next()
                        .unwrap_or(Err(LedgerError::Order(OrderError::Closed)))
                })
            })
            .collect()
    }

    /// Refuses an id the ledger already holds.
    fn new_id(&self, tx_id: TxId) -> Result<(), LedgerError> {
        match self.ledger.world.tx(&tx_id)? {
            Some(record) => Err(LedgerError::DuplicateTxId {
                tx_id,
                seq: record.seq,
            }),
            None => Ok(()),
        }
    }

    /// The size check and decoding an endorser does first, to learn the contract (and
    /// so the policy) before any endorser runs.
    fn decode_proposal(&self, signed: &SignedProposal) -> Result<Proposal, EndorseError> {
        let size_bytes = signed.proposal.len() + signed.signature.len();
        if size_bytes > self.ledger.proposal_bytes_max {
            return Err(EndorseError::TooLarge {
                size_bytes,
                limit_bytes: self.ledger.proposal_bytes_max,
            });
        }
        Proposal::decode(signed.proposal.as_slice())
            .map_err(|e| EndorseError::Malformed(e.to_string()))
    }

    /// The id of a signed transaction about to be ordered, after the orderer's size
    /// limit (the orderer checks everything else).
    fn id_to_order(&self, signed_transaction: &[u8]) -> Result<TxId, OrderError> {
        let limit_bytes = self.ledger.orderer_config.transaction_bytes_max;
        if signed_transaction.len() > limit_bytes {
            return Err(OrderError::TooLarge {
                size_bytes: signed_transaction.len(),
                limit_bytes,
            });
        }
        transaction_id(signed_transaction).map_err(|e| OrderError::Malformed(e.to_string()))
    }
}

/// The id of an encoded `SignedTransaction`, decoded as every stage decodes it.
pub(super) fn transaction_id(signed_transaction: &[u8]) -> Result<TxId, prost::DecodeError> {
    tx::decode_transaction(signed_transaction).map(|(_, _, proposal)| tx::tx_id(&proposal))
}
