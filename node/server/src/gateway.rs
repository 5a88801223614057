//! `Gateway`: what applications call, the way they call Fabric Gateway. The client signs
//! its proposal; `Endorse` gathers the endorsements the contract's policy needs and
//! returns the transaction; the client signs it and calls `Submit`; `CommitStatus`
//! waits for its validation code; `ContractEvents` streams a contract's events.

use std::sync::Arc;

use prost::Message;
use tokio::sync::broadcast;
use tonic::{Code, Request, Response, Status};

use super::shares::{Caller, Share};
use super::stream::{self, Items, PAGE_ITEMS, Sink};
use super::{
    Shared, first_seq, missing, phase, quote, shutting_down, status, tx_id, validation_code,
};
use crate::proto::contract_events_request::Start;
use crate::proto::gateway_server::Gateway;
use crate::proto::{
    CommitStatusRequest, CommitStatusResponse, ContractEvent, ContractEventsRequest,
    ContractEventsResponse, EndorseRequest, EndorseResponse, EvaluateRequest, EvaluateResponse,
    SubmitRequest, SubmitResponse, TxPhase,
};
use runnel_ledger::ids::{Seq, TxId, ValidationCode};
use runnel_ledger::ledger::{Ledger, LedgerError};
use runnel_ledger::lifecycle;
use runnel_ledger::store::EventAt;
use runnel_ledger::validator::{Phase, TxStatus};

/// The `Gateway` service.
pub(super) struct GatewayService {
    shared: Arc<Shared>,
}

impl GatewayService {
    pub fn new(shared: Arc<Shared>) -> Self {
        GatewayService { shared }
    }
}

#[tonic::async_trait]
impl Gateway for GatewayService {
    async fn evaluate(
        &self,
        request: Request<EvaluateRequest>,
    ) -> Result<Response<EvaluateResponse>, Status> {
        let signed = request
            .into_inner()
            .proposal
            .ok_or_else(|| missing("proposal"))?;
        let result = self.shared.evaluate(signed).await?;
        Ok(Response::new(EvaluateResponse { result }))
    }

    async fn endorse(
        &self,
        request: Request<EndorseRequest>,
    ) -> Result<Response<EndorseResponse>, Status> {
        let forwarded = request
            .metadata()
            .contains_key(super::endorsing::FORWARDED_HEADER);
        let EndorseRequest {
            proposal,
            endorsing_orgs,
        } = request.into_inner();
        let signed = proposal.ok_or_else(|| missing("proposal"))?;
        let endorsing_orgs = self.known_orgs(endorsing_orgs)?;
        let prepared = self
            .shared
            .endorse(signed, endorsing_orgs, forwarded)
            .await?;
        Ok(Response::new(EndorseResponse {
            tx_id: prepared.tx_id.to_hex(),
            transaction: prepared.transaction.encode_to_vec(),
            result: prepared.result,
        }))
    }

    async fn submit(
        &self,
        request: Request<SubmitRequest>,
    ) -> Result<Response<SubmitResponse>, Status> {
        let caller = Caller::of(&request);
        let SubmitRequest {
            transaction,
            wait_for,
        } = request.into_inner();
        let wait_for = wait_phase(wait_for)?;
        // A call that will wait takes its place first: one that cannot wait is refused
        // before its transaction is ordered, never after.
        let share = match wait_for {
            Some(_) => Some(self.shared.wait_shares.take(caller)?),
            None => None,
        };
        let (tx_id, seq) = self.shared.submit(transaction).await?;
        let status = match (wait_for, share) {
            (Some(phase), Some(share)) => Some(self.wait_status(tx_id, phase, share).await?),
            _ => None,
        };
        Ok(Response::new(SubmitResponse {
            tx_id: tx_id.to_hex(),
            seq: seq.0,
            status,
        }))
    }

    async fn commit_status(
        &self,
        request: Request<CommitStatusRequest>,
    ) -> Result<Response<CommitStatusResponse>, Status> {
        let share = self.shared.wait_shares.take(Caller::of(&request))?;
        let request = request.into_inner();
        let tx_id = tx_id(&request.tx_id)?;
        let wait_for = wait_phase(request.wait_for)?.unwrap_or(Phase::Committed);
        Ok(Response::new(
            self.wait_status(tx_id, wait_for, share).await?,
        ))
    }

    type ContractEventsStream = Items<ContractEventsResponse>;

    async fn contract_events(
        &self,
        request: Request<ContractEventsRequest>,
    ) -> Result<Response<Self::ContractEventsStream>, Status> {
        let caller = Caller::of(&request);
        let request = request.into_inner();
        lifecycle::check_name(&request.contract)
            .map_err(|e| status::error(Code::InvalidArgument, e.code(), e))?;
        let next = match request.start {
            Some(Start::StartSeq(seq)) => Position {
                seq: first_seq(seq),
                index: 0,
            },
            Some(Start::After(checkpoint)) => Position {
                seq: Seq(checkpoint.seq),
                index: u64::from(checkpoint.index) + 1,
            },
            None => Position {
                seq: self.shared.ledger.reader().durable_height().next(),
                index: 0,
            },
        };
        let shared = self.shared.clone();
        stream::start(&self.shared, caller, move |sink| {
            events(shared, request.contract, next, sink)
        })
    }
}

impl GatewayService {
    /// The organisations a client asked to endorse, each once, in the order first named:
    /// each must be one of the network's (so a request names at most that many).
    fn known_orgs(&self, asked: Vec<String>) -> Result<Vec<String>, Status> {
        let known = self.shared.ledger.msp().orgs();
        let mut orgs: Vec<String> = Vec::new();
        for org in asked {
            if !known.contains(&org) {
                return Err(status::error(
                    Code::InvalidArgument,
                    "BAD_REQUEST",
                    format_args!(
                        "endorsing_orgs names `{}`, which is not an organisation of the network ({})",
                        quote(&org),
                        known.join(", ")
                    ),
                ));
            }
            if !orgs.contains(&org) {
                orgs.push(org);
            }
        }
        Ok(orgs)
    }

    /// Waits until `tx_id` reaches `wait_for` on this peer, holding its connection's
    /// `share` of the waits meanwhile; its status then.
    /// A wait ends at [`crate::ApiConfig::commit_wait_max`] at the latest, whatever the
    /// client's deadline: `DEADLINE_EXCEEDED` / `WAIT_TIMEOUT`.
    async fn wait_status(
        &self,
        tx_id: TxId,
        wait_for: Phase,
        share: Share,
    ) -> Result<CommitStatusResponse, Status> {
        let most = self.shared.config.commit_wait_max;
        tokio::time::timeout(most, self.wait_status_unbounded(tx_id, wait_for, share))
            .await
            .unwrap_or_else(|_| {
                Err(status::error(
                    Code::DeadlineExceeded,
                    "WAIT_TIMEOUT",
                    format_args!(
                        "transaction {tx_id} did not reach {wait_for:?} here within {} s, \
                         the longest this node waits (commit_wait_max_s); ask again",
                        most.as_secs_f64()
                    ),
                ))
            })
    }

    async fn wait_status_unbounded(
        &self,
        tx_id: TxId,
        wait_for: Phase,
        _share: Share,
    ) -> Result<CommitStatusResponse, Status> {
        loop {
            // Registered before the ledger is read: a status arriving in between wakes it.
            let mut waiter = self.shared.waiters.register(tx_id, wait_for)?;
            let reached = self
                .shared
                .inline(|ledger| commit_status(ledger, &tx_id, wait_for))?;
            if let Some(response) = reached {
                return Ok(response);
            }
            let woken = tokio::select! {
                woken = waiter.woken() => woken,
                () = self.shared.stopped() => return Err(shutting_down()),
            };
            // Stage 2 checks each transaction against the ids before it, so any status
            // but a duplicate's is the first of its id: the id's own, without a read.
            if let Some(status) = woken.filter(|s| s.code != ValidationCode::DuplicateTxid) {
                return self
                    .shared
                    .inline(|ledger| status_response(ledger, &status));
            }
        }
    }
}

/// A request's `wait_for`: `None` when unspecified.
fn wait_phase(wait_for: i32) -> Result<Option<Phase>, Status> {
    match TxPhase::try_from(wait_for) {
        Ok(TxPhase::Unspecified) => Ok(None),
        Ok(TxPhase::Validated) => Ok(Some(Phase::Validated)),
        Ok(TxPhase::Committed) => Ok(Some(Phase::Committed)),
        Err(_) => Err(status::error(
            Code::InvalidArgument,
            "BAD_PAYLOAD",
            format_args!("wait_for {wait_for} is not a TxPhase"),
        )),
    }
}

/// The status of `tx_id` once it has reached `wait_for`.
fn commit_status(
    ledger: &Ledger,
    tx_id: &TxId,
    wait_for: Phase,
) -> Result<Option<CommitStatusResponse>, LedgerError> {
    match ledger.status(tx_id)? {
        Some(status) if status.phase >= wait_for => status_response(ledger, &status).map(Some),
        _ => Ok(None),
    }
}

/// The answer to a status call: `status`, with the block that holds it once sealed.
fn status_response(
    ledger: &Ledger,
    status: &TxStatus,
) -> Result<CommitStatusResponse, LedgerError> {
    let block = ledger.reader().block_of(status.seq)?;
    Ok(CommitStatusResponse {
        tx_id: status.tx_id.to_hex(),
        code: validation_code(status.code),
        seq: status.seq.0,
        phase: phase(status.phase == Phase::Committed) as i32,
        block: block.map_or(0, |number| number.0),
        timestamp_ms: status.timestamp_ms,
    })
}

/// A place in the event stream: the event at `index` among those of the transaction at
/// `seq`. Ordered as the stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Position {
    seq: Seq,
    index: u64,
}

/// The events of one contract from `next` on: stored, then live (see [`stream`]).
async fn events(
    shared: Arc<Shared>,
    contract: String,
    mut next: Position,
    sink: Sink<ContractEventsResponse>,
) -> Result<(), Status> {
    loop {
        // The store up to its durable height; subscribe; the store once more.
        let mut live: Option<broadcast::Receiver<_>> = None;
        let mut live = loop {
            loop {
                let (from, name) = (next, contract.clone());
                let page = shared
                    .blocking(move |ledger| stored_events(ledger, &name, from))
                    .await?;
                let Some((page, after)) = page else {
                    break;
                };
                for event in page {
                    if !sink.send(event).await {
                        return Ok(());
                    }
                }
                next = after;
            }
            match live {
                Some(live) => break live,
                None => live = Some(shared.ledger.events()),
            }
        };
        // Every transaction before `replayed` was read from the store; every one from it
        // on is durable only after the subscription, so all its events come live.
        let replayed = next.seq;
        let mut last: Option<Position> = None;
        loop {
            let event = match live.recv().await {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(_)) => break,
                Err(broadcast::error::RecvError::Closed) => return Err(shutting_down()),
            };
            if event.seq < replayed {
                continue;
            }
            let index = match last {
                Some(last) if last.seq == event.seq => last.index + 1,
                _ => 0,
            };
            let position = Position {
                seq: event.seq,
                index,
            };
            last = Some(position);
            if position < next {
                continue;
            }
            next = Position {
                seq: event.seq,
                index: index + 1,
            };
            if event.contract != contract {
                continue;
            }
            let response = event_response(
                event.tx_id,
                position,
                ContractEvent {
                    contract: event.contract,
                    name: event.name,
                    payload: event.payload,
                },
            );
            if !sink.send(response).await {
                return Ok(());
            }
        }
        // Overflowed: what the broadcast dropped is read back from the store.
    }
}

/// Up to a page of the events of `contract` from `from` on in durable transactions, read
/// from the store's event index, and the position after them; `None` when nothing
/// durable is there yet. A call reads the events it returns, however many transactions
/// of other contracts lie between them.
fn stored_events(
    ledger: &Ledger,
    contract: &str,
    from: Position,
) -> Result<Option<(Vec<ContractEventsResponse>, Position)>, LedgerError> {
    // A transaction has far fewer than u32::MAX events: an index past that is past them all.
    let start = match u32::try_from(from.index) {
        Ok(index) => EventAt {
            seq: first_seq(from.seq.0),
            index,
        },
        Err(_) => EventAt {
            seq: first_seq(from.seq.0).next(),
            index: 0,
        },
    };
    let (events, through) = ledger
        .reader()
        .committed_events(contract, start, PAGE_ITEMS)?;
    if start.seq > through {
        return Ok(None);
    }
    // A short page holds every event of the contract up to `through`.
    let after = match events.last() {
        Some(last) if events.len() >= PAGE_ITEMS => Position {
            seq: last.at.seq,
            index: u64::from(last.at.index) + 1,
        },
        _ => Position {
            seq: through.next(),
            index: 0,
        },
    };
    let events = events
        .into_iter()
        .map(|event| {
            let position = Position {
                seq: event.at.seq,
                index: u64::from(event.at.index),
            };
            let payload = ContractEvent {
                contract: contract.to_string(),
                name: event.name,
                payload: event.payload,
            };
            event_response(event.tx_id, position, payload)
        })
        .collect();
    Ok(Some((events, after)))
}

fn event_response(tx_id: TxId, position: Position, event: ContractEvent) -> ContractEventsResponse {
    ContractEventsResponse {
        tx_id: tx_id.to_hex(),
        seq: position.seq.0,
        index: u32::try_from(position.index).unwrap_or(u32::MAX),
        event: Some(event),
    }
}
