//! Request size limits per method, where a service's own limit is too wide for some of
//! its methods: `Gateway` takes messages up to `message_bytes_max` because `Submit`
//! carries whole transactions, but `Endorse` and `Evaluate` carry one signed proposal,
//! and the `Admin` calls one too, which the endorser bounds far lower
//! (`proposal_bytes_max`).
//!
//! The check reads the 5-byte gRPC frame header (a flag and the message's length) and
//! refuses a message longer than its method takes before any of it is read, as tonic
//! does for a whole service: `RESOURCE_EXHAUSTED` / `MESSAGE_TOO_LARGE`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use tokio_stream::StreamExt as _;
use tonic::Code;

use crate::status;

/// Bytes of a gRPC frame header: a compression flag and a big-endian length.
const FRAME_HEADER_BYTES: usize = 5;

/// Room for what wraps a signed proposal in a request: the signature and the encoding.
pub const PROPOSAL_ENVELOPE_BYTES: usize = 64 << 10;

/// The largest request message each limited method takes.
#[derive(Debug, Clone)]
pub struct MethodLimits {
    /// `Gateway.Endorse`, `Gateway.Evaluate` and every `Admin` call.
    pub proposal_request_bytes_max: usize,
}

impl MethodLimits {
    /// Limits for a node whose endorser takes proposals of up to `proposal_bytes_max`.
    pub fn new(proposal_bytes_max: usize) -> MethodLimits {
        MethodLimits {
            proposal_request_bytes_max: proposal_bytes_max.saturating_add(PROPOSAL_ENVELOPE_BYTES),
        }
    }

    /// The limit for a call to `path`, if it has one of its own.
    pub fn for_path(&self, path: &str) -> Option<usize> {
        let proposal = matches!(
            path,
            "/runnel.v1.Gateway/Endorse" | "/runnel.v1.Gateway/Evaluate"
        ) || path.starts_with("/runnel.v1.Admin/");
        proposal.then_some(self.proposal_request_bytes_max)
    }
}

/// The middleware: reads a limited call's first frame header and refuses it if the
/// message is longer than its method takes; everything read so far goes on to the
/// service untouched.
pub async fn check(
    State(limits): State<Arc<MethodLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(max) = limits.for_path(request.uri().path()) else {
        return next.run(request).await;
    };
    let (parts, mut body) = request.into_parts();
    let mut head = BytesMut::new();
    let mut read: Vec<Bytes> = Vec::new();
    let mut failed = None;
    while head.len() < FRAME_HEADER_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let take = (FRAME_HEADER_BYTES - head.len()).min(data.len());
                    head.extend_from_slice(&data[..take]);
                    read.push(data);
                }
            }
            Some(Err(error)) => {
                failed = Some(error);
                break;
            }
            None => break,
        }
    }
    if head.len() == FRAME_HEADER_BYTES {
        let length = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if length > max {
            return status::response(status::error(
                Code::ResourceExhausted,
                "MESSAGE_TOO_LARGE",
                format_args!(
                    "the request message is {length} bytes; {} takes {max} at most",
                    parts.uri.path()
                ),
            ));
        }
    }
    // What was read, then the rest (or the error that cut it short).
    let rest = body.into_data_stream();
    let stream = tokio_stream::iter(read.into_iter().map(Ok))
        .chain(tokio_stream::iter(failed.map(Err)))
        .chain(rest);
    next.run(Request::from_parts(parts, Body::from_stream(stream)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposals_have_their_own_limit_and_transactions_the_services() {
        let limits = MethodLimits::new(8 << 20);
        let proposal = (8 << 20) + PROPOSAL_ENVELOPE_BYTES;
        assert_eq!(
            limits.for_path("/runnel.v1.Gateway/Endorse"),
            Some(proposal)
        );
        assert_eq!(
            limits.for_path("/runnel.v1.Gateway/Evaluate"),
            Some(proposal)
        );
        assert_eq!(
            limits.for_path("/runnel.v1.Admin/DeployContract"),
            Some(proposal)
        );
        assert_eq!(limits.for_path("/runnel.v1.Gateway/Submit"), None);
        assert_eq!(limits.for_path("/runnel.v1.Query/GetBlock"), None);
    }
}
