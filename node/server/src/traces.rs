//! `Trace`: when each transaction passed each stage of the flow, by id for recent
//! transactions, and live as transactions complete. Traces live in memory only
//! ([`runnel_ledger::trace::TraceBook`]), so a live reader that falls more than
//! [`COMPLETED_CAPACITY`] traces behind cannot be caught up: its stream ends with
//! `RESOURCE_EXHAUSTED`, and it may reconnect and read what it missed by id.

use std::sync::Arc;

use tokio::sync::broadcast;
use tonic::{Code, Request, Response, Status};

use super::shares::Caller;
use super::stream::{self, Items, Sink};
use super::{Shared, shutting_down, status, tx_id};
use crate::proto::trace_server::Trace;
use crate::proto::{
    GetTraceRequest, GetTraceResponse, StageStamp, TraceStreamRequest, TraceStreamResponse,
    TransactionTrace,
};
use runnel_ledger::ids::TxId;
use runnel_ledger::trace::{COMPLETED_CAPACITY, CompletedTrace, Stage};

/// The `Trace` service.
pub(super) struct TraceService {
    shared: Arc<Shared>,
}

impl TraceService {
    pub fn new(shared: Arc<Shared>) -> Self {
        TraceService { shared }
    }
}

#[tonic::async_trait]
impl Trace for TraceService {
    async fn get_trace(
        &self,
        request: Request<GetTraceRequest>,
    ) -> Result<Response<GetTraceResponse>, Status> {
        let id = tx_id(&request.into_inner().tx_id)?;
        let trace = self.shared.ledger.trace(&id).ok_or_else(|| {
            status::error(
                Code::NotFound,
                "TRACE_NOT_FOUND",
                format_args!(
                    "no trace of transaction {id}: unknown here, or older than the traces kept"
                ),
            )
        })?;
        Ok(Response::new(GetTraceResponse {
            trace: Some(message(id, &trace)),
        }))
    }

    type TraceStreamStream = Items<TraceStreamResponse>;

    async fn trace_stream(
        &self,
        request: Request<TraceStreamRequest>,
    ) -> Result<Response<Self::TraceStreamStream>, Status> {
        // Subscribed now: the stream holds every trace completed from this call on.
        let completed = self.shared.ledger.completed_traces();
        stream::start(&self.shared, Caller::of(&request), move |sink| {
            forward(completed, sink)
        })
    }
}

/// Sends each completed trace until the reader goes or falls too far behind.
async fn forward(
    mut completed: broadcast::Receiver<CompletedTrace>,
    sink: Sink<TraceStreamResponse>,
) -> Result<(), Status> {
    loop {
        let done = match completed.recv().await {
            Ok(done) => done,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                return Err(status::error(
                    Code::ResourceExhausted,
                    "STREAM_LAGGED",
                    format_args!(
                        "this stream fell {missed} traces behind, more than the \
                         {COMPLETED_CAPACITY} kept for it, and was ended; reconnect, and \
                         read missed traces with GetTrace"
                    ),
                ));
            }
            Err(broadcast::error::RecvError::Closed) => return Err(shutting_down()),
        };
        let item = TraceStreamResponse {
            trace: Some(message(done.tx_id, &done.trace)),
        };
        if !sink.send(item).await {
            return Ok(());
        }
    }
}

/// A stage as the API's enum value.
pub(super) fn stage(stage: Stage) -> i32 {
    stage as i32 + 1
}

fn message(tx_id: TxId, trace: &runnel_ledger::trace::Trace) -> TransactionTrace {
    TransactionTrace {
        tx_id: tx_id.to_hex(),
        stages: trace
            .stages()
            .into_iter()
            .map(|(at, at_us)| StageStamp {
                stage: stage(at),
                at_us,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::trace::TraceBook;

    #[tokio::test]
    async fn a_reader_too_far_behind_is_ended_with_resource_exhausted() {
        let book = TraceBook::new(COMPLETED_CAPACITY * 2);
        let completed = book.completed();
        for n in 0..=COMPLETED_CAPACITY {
            let id = TxId((n as u64).to_le_bytes().repeat(4).try_into().unwrap());
            book.mark(id, Stage::Notified, 1);
        }
        let (sink, mut rx) = stream::sink(4);
        let ended = forward(completed, sink).await.unwrap_err();
        assert_eq!(ended.code(), Code::ResourceExhausted);
        assert!(ended.message().starts_with("STREAM_LAGGED: "), "{ended:?}");
        assert!(
            rx.try_recv().is_err(),
            "nothing was sent before the lag was seen"
        );
    }
}
