//! Request size limits per method, checked before a request is decoded: every method of
//! every service has its own limit, and a request longer than its method takes is
//! refused from its 5-byte gRPC frame header (a flag and the message's length) before
//! any of it is read: `RESOURCE_EXHAUSTED` / `MESSAGE_TOO_LARGE`. A service's own limit
//! (tonic's) is only the widest of its methods'.
//!
//! A repeated field costs far more decoded than on the wire (an empty entry is 2 bytes
//! there and a whole `Vec` or `String` decoded), so a method with one that callers fill
//! (`EndorseBatch`'s proposals, `Endorse`'s organisations, `BroadcastBatch`'s
//! transactions) also bounds its entries: the middleware counts them in the message's
//! bytes, without decoding any, and refuses one with more
//! (`RESOURCE_EXHAUSTED` / `TOO_MANY_ITEMS`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::BytesMut;
use http_body_util::BodyExt as _;
use tokio_stream::StreamExt as _;
use tonic::Code;

use crate::SMALL_REQUEST_BYTES_MAX;
use crate::status;

/// Bytes of a gRPC frame header: a compression flag and a big-endian length.
const FRAME_HEADER_BYTES: usize = 5;

/// Room for what wraps a signed proposal in a request: the signature and the encoding.
pub const PROPOSAL_ENVELOPE_BYTES: usize = 64 << 10;

/// Room for what wraps a transaction in a request (`Submit`, `Broadcast`).
pub const TRANSACTION_ENVELOPE_BYTES: usize = 64 << 10;

/// Most organisations an `Endorse` request names: more than any network holds (a policy
/// names at most [`crate::policy::POLICY_PRINCIPALS_MAX`] organisations).
pub const ENDORSING_ORGS_MAX: usize = 64;

/// What one method takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The largest request message, in bytes.
    pub bytes_max: usize,
    /// A repeated field whose entries are bounded: its number, and how many at most.
    pub counted: Option<(u32, usize)>,
}

impl Limit {
    fn bytes(bytes_max: usize) -> Limit {
        Limit {
            bytes_max,
            counted: None,
        }
    }

    fn counting(bytes_max: usize, field: u32, max: usize) -> Limit {
        Limit {
            bytes_max,
            counted: Some((field, max)),
        }
    }
}

/// Most transactions one `BroadcastBatch` call carries.
pub const BROADCAST_BATCH_REQUEST_MAX: usize = 256;

/// Most bytes of transactions a peer puts in one `BroadcastBatch` call (a larger
/// transaction goes in a `Broadcast` of its own): far below the orderer's largest
/// message, so that a batch is never refused whole for its size
/// (runnel-orderer's `RemoteOrderer`). The orderer takes no larger batch
/// ([`MethodLimits::ordering`]).
pub const BROADCAST_BATCH_BYTES_MAX: usize = 4 << 20;

/// Each method's limit, by its path (`/runnel.v1.Gateway/Submit`).
#[derive(Debug, Clone)]
pub struct MethodLimits {
    methods: Vec<(&'static str, Limit)>,
}

impl MethodLimits {
    /// The node API's limits, for an endorser that takes proposals of up to
    /// `proposal_bytes_max` and a node that takes messages (transactions) of up to
    /// `message_bytes_max`.
    pub fn api(proposal_bytes_max: usize, message_bytes_max: usize) -> MethodLimits {
        let proposal = proposal_bytes_max.saturating_add(PROPOSAL_ENVELOPE_BYTES);
        let transaction = message_bytes_max.saturating_add(TRANSACTION_ENVELOPE_BYTES);
        let small = Limit::bytes(SMALL_REQUEST_BYTES_MAX);
        let key = Limit::bytes(crate::QUERY_REQUEST_BYTES_MAX);
        // A gateway sends a batch of proposals up to ENDORSE_BATCH_BYTES_MAX, or one
        // proposal alone; each proposal's signature and encoding fit the envelope.
        let batch = crate::endorsing::ENDORSE_BATCH_BYTES_MAX
            .max(proposal_bytes_max)
            .saturating_add(PROPOSAL_ENVELOPE_BYTES);
        MethodLimits {
            methods: vec![
                ("/runnel.v1.Gateway/Evaluate", Limit::bytes(proposal)),
                (
                    "/runnel.v1.Gateway/Endorse",
                    Limit::counting(proposal, 2, ENDORSING_ORGS_MAX),
                ),
                ("/runnel.v1.Gateway/Submit", Limit::bytes(transaction)),
                ("/runnel.v1.Gateway/CommitStatus", small),
                ("/runnel.v1.Gateway/ContractEvents", small),
                ("/runnel.v1.Deliver/Transactions", small),
                ("/runnel.v1.Deliver/Blocks", small),
                ("/runnel.v1.Query/GetBlock", small),
                ("/runnel.v1.Query/GetTransaction", small),
                ("/runnel.v1.Query/GetInclusionProof", small),
                ("/runnel.v1.Query/GetKey", key),
                ("/runnel.v1.Query/GetKeyHistory", key),
                ("/runnel.v1.Query/ListContracts", small),
                ("/runnel.v1.Query/GetNetworkDefinition", small),
                ("/runnel.v1.Query/GetContractApprovals", small),
                ("/runnel.v1.Query/GetNetworkInfo", small),
                ("/runnel.v1.Query/GetStateHash", small),
                (
                    "/runnel.v1.Endorser/EndorseBatch",
                    Limit::counting(batch, 1, crate::endorsing::ENDORSE_BATCH_MAX),
                ),
                ("/runnel.v1.Admin/DeployContract", Limit::bytes(proposal)),
                ("/runnel.v1.Admin/UpgradeContract", Limit::bytes(proposal)),
                ("/runnel.v1.Trace/GetTrace", small),
                ("/runnel.v1.Trace/TraceStream", small),
            ],
        }
    }

    /// An orderer's limits (the `Ordering` service), for transactions of up to
    /// `message_bytes_max`. The `Cluster` service, orderers' own, keeps tonic's.
    pub fn ordering(message_bytes_max: usize) -> MethodLimits {
        let transaction = message_bytes_max.saturating_add(TRANSACTION_ENVELOPE_BYTES);
        let batch = BROADCAST_BATCH_BYTES_MAX
            .saturating_add(TRANSACTION_ENVELOPE_BYTES)
            .min(transaction);
        let small = Limit::bytes(SMALL_REQUEST_BYTES_MAX);
        MethodLimits {
            methods: vec![
                ("/runnel.v1.Ordering/Broadcast", Limit::bytes(transaction)),
                (
                    "/runnel.v1.Ordering/BroadcastBatch",
                    Limit::counting(batch, 1, BROADCAST_BATCH_REQUEST_MAX),
                ),
                ("/runnel.v1.Ordering/Stream", small),
                ("/runnel.v1.Ordering/Heights", small),
            ],
        }
    }

    /// The limit for a call to `path`, if it is one of the methods limited here.
    pub fn for_path(&self, path: &str) -> Option<Limit> {
        self.methods
            .iter()
            .find(|(method, _)| *method == path)
            .map(|(_, limit)| *limit)
    }

    /// Every method limited here.
    pub fn methods(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.methods.iter().map(|(method, _)| *method)
    }
}

/// The middleware: reads a limited call's first frame header and refuses it if the
/// message is longer than its method takes; for a method with a counted field, reads the
/// message (no longer than that) and refuses it if the field has more entries. Everything
/// read goes on to the service untouched.
pub async fn check(
    State(limits): State<Arc<MethodLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(limit) = limits.for_path(request.uri().path()) else {
        return next.run(request).await;
    };
    let (parts, mut body) = request.into_parts();
    let mut read = BytesMut::new();
    let mut failed = None;
    // The header, then for a counted field the whole message.
    let mut wanted = FRAME_HEADER_BYTES;
    let mut checked_length = false;
    while read.len() < wanted {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    read.extend_from_slice(&data);
                }
            }
            Some(Err(error)) => {
                failed = Some(error);
                break;
            }
            None => break,
        }
        if !checked_length && read.len() >= FRAME_HEADER_BYTES {
            checked_length = true;
            let length = u32::from_be_bytes([read[1], read[2], read[3], read[4]]) as usize;
            if length > limit.bytes_max {
                return refuse(
                    "MESSAGE_TOO_LARGE",
                    format_args!(
                        "the request message is {length} bytes; {} takes {} at most",
                        parts.uri.path(),
                        limit.bytes_max
                    ),
                );
            }
            // A compressed message (flag 1) is counted by tonic once decompressed;
            // Runnel's clients never compress.
            if limit.counted.is_some() && read[0] == 0 {
                wanted = FRAME_HEADER_BYTES + length;
            }
        }
    }
    if let Some((field, max)) = limit.counted
        && read.len() >= wanted
        && wanted > FRAME_HEADER_BYTES
    {
        let message = &read[FRAME_HEADER_BYTES..wanted];
        if let Some(count) = count_field(message, field, max)
            && count > max
        {
            return refuse(
                "TOO_MANY_ITEMS",
                format_args!(
                    "the request holds more than {max} entries of field {field}; {} takes \
                     {max} at most",
                    parts.uri.path()
                ),
            );
        }
    }
    // What was read, then the rest (or the error that cut it short).
    let rest = body.into_data_stream();
    let stream = tokio_stream::iter([Ok(read.freeze())])
        .chain(tokio_stream::iter(failed.map(Err)))
        .chain(rest);
    next.run(Request::from_parts(parts, Body::from_stream(stream)))
        .await
}

fn refuse(name: &str, message: std::fmt::Arguments<'_>) -> Response {
    status::response(status::error(Code::ResourceExhausted, name, message))
}

/// How many top-level entries of `field` a protobuf message holds, counting no further
/// than `max + 1`; `None` if its bytes are not protobuf (the decoder then says so).
/// Reads only the keys and lengths: nothing is decoded or copied.
pub fn count_field(message: &[u8], field: u32, max: usize) -> Option<usize> {
    let mut at = 0;
    let mut count = 0;
    while at < message.len() {
        let (key, used) = varint(&message[at..])?;
        at += used;
        let skip = match key & 7 {
            0 => varint(&message[at..])?.1,
            1 => 8,
            2 => {
                let (length, used) = varint(&message[at..])?;
                used.checked_add(usize::try_from(length).ok()?)?
            }
            5 => 4,
            _ => return None,
        };
        at = at.checked_add(skip)?;
        if at > message.len() {
            return None;
        }
        if key >> 3 == u64::from(field) {
            count += 1;
            if count > max {
                break;
            }
        }
    }
    Some(count)
}

/// A protobuf varint at the start of `bytes`, and how many bytes it took.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;

    /// The `rpc` names of each service in a proto file's text.
    fn methods_of(proto: &str, services: &[&str]) -> Vec<String> {
        let mut service = None;
        let mut found = Vec::new();
        for line in proto.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("service ") {
                service = rest.split_whitespace().next().map(str::to_string);
            } else if let (Some(rest), Some(name)) = (line.strip_prefix("rpc "), &service)
                && services.contains(&name.as_str())
            {
                let method = rest.split('(').next().unwrap_or_default().trim();
                found.push(format!("/runnel.v1.{name}/{method}"));
            }
        }
        found
    }

    #[test]
    fn every_method_of_every_service_has_its_own_limit() {
        let api = MethodLimits::api(8 << 20, 32 << 20);
        let text = include_str!("../../proto/runnel/v1/api.proto");
        let methods = methods_of(
            text,
            &["Gateway", "Deliver", "Query", "Endorser", "Admin", "Trace"],
        );
        assert!(methods.len() >= 22, "{methods:?}");
        for method in &methods {
            assert!(api.for_path(method).is_some(), "{method} has no limit");
        }
        assert_eq!(api.methods().count(), methods.len());
        let ordering = MethodLimits::ordering(32 << 20);
        let text = include_str!("../../proto/runnel/v1/ordering.proto");
        for method in methods_of(text, &["Ordering"]) {
            assert!(
                ordering.for_path(&method).is_some(),
                "{method} has no limit"
            );
        }
    }

    #[test]
    fn proposals_transactions_and_small_requests_have_their_own_limits() {
        let limits = MethodLimits::api(8 << 20, 32 << 20);
        let bytes = |path: &str| limits.for_path(path).unwrap().bytes_max;
        let proposal = (8 << 20) + PROPOSAL_ENVELOPE_BYTES;
        assert_eq!(bytes("/runnel.v1.Gateway/Endorse"), proposal);
        assert_eq!(bytes("/runnel.v1.Gateway/Evaluate"), proposal);
        assert_eq!(bytes("/runnel.v1.Admin/DeployContract"), proposal);
        assert_eq!(
            bytes("/runnel.v1.Gateway/Submit"),
            (32 << 20) + TRANSACTION_ENVELOPE_BYTES
        );
        assert_eq!(bytes("/runnel.v1.Query/GetBlock"), SMALL_REQUEST_BYTES_MAX);
        assert_eq!(bytes("/runnel.v1.Endorser/EndorseBatch"), proposal);
        assert!(limits.for_path("/runnel.v1.Gateway/Nothing").is_none());
    }

    #[test]
    fn repeated_entries_are_counted_without_decoding_them() {
        let orgs = crate::proto::EndorseRequest {
            proposal: Some(crate::proto::SignedProposal {
                proposal: vec![1; 300],
                signature: vec![2; 64],
            }),
            endorsing_orgs: vec![String::new(); 100],
        }
        .encode_to_vec();
        assert_eq!(count_field(&orgs, 2, 1000), Some(100));
        assert_eq!(count_field(&orgs, 2, 10), Some(11));
        assert_eq!(count_field(&orgs, 1, 10), Some(1));
        // Not protobuf: left to the decoder.
        assert_eq!(count_field(&[0xff; 3], 1, 10), None);
        assert_eq!(count_field(&[0x0a, 0x05, 1], 1, 10), None);
    }
}
