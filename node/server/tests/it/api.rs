//! The node's API end to end: a real server on loopback over a real ledger in a temporary
//! directory, called through the generated tonic clients, raw gRPC frames, and plain
//! HTTP/1.1 for gRPC-web and CORS.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use http_body_util::{BodyExt, Full};
use prost::Message;
use runnel_ledger::identity::{Role, Signer};
use runnel_ledger::proto::contract_events_request::Start;
use runnel_ledger::proto::{
    CommitStatusRequest, ContractEventsRequest, ContractEventsResponse, DeliverBlocksRequest,
    DeliverTransactionsRequest, DeployContractRequest, DeployRequest, EndorseBatchRequest,
    EndorseRequest, EvaluateRequest, EventCheckpoint, GetBlockRequest, GetInclusionProofRequest,
    GetKeyHistoryRequest, GetKeyRequest, GetNetworkInfoRequest, GetNetworkInfoResponse,
    GetTraceRequest, GetTransactionRequest, ListContractsRequest, OrderingMode, SignedProposal,
    SignedTransaction, Stage, SubmitRequest, TraceStreamRequest, Transaction, TxPhase,
    ValidationCode,
};
use runnel_ledger::tx;
use runnel_server::proto::admin_client::AdminClient;
use runnel_server::proto::deliver_client::DeliverClient;
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::proto::query_client::QueryClient;
use runnel_server::proto::trace_client::TraceClient;
use runnel_server::{ADMIN_QUEUE_MAX, ApiConfig};
use tokio_stream::StreamExt;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;
use tonic::{Code, Status};

use runnel_testing::{kv_wasm, token_wasm};

use crate::node::{Node, WAIT, open_api};

const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------------------------
// A node on loopback

impl Node {
    async fn start(orgs: &[&str], api: ApiConfig) -> Node {
        Node::serve(orgs, |_| api, false).await
    }

    async fn default() -> Node {
        Node::start(&["Org1"], open_api()).await
    }

    async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    async fn gateway(&self) -> GatewayClient<Channel> {
        GatewayClient::new(self.channel().await)
            .max_decoding_message_size(64 * MIB)
            .max_encoding_message_size(64 * MIB)
    }

    async fn query(&self) -> QueryClient<Channel> {
        QueryClient::new(self.channel().await)
    }

    async fn deploy(&self, name: &'static str, code: &'static [u8]) {
        self.with_ledger(move |ledger| ledger.deploy(name, "1", code, "").unwrap())
            .await;
    }

    fn proposal(
        &self,
        signer: &Signer,
        contract: &str,
        function: &str,
        args: &[&[u8]],
    ) -> SignedProposal {
        let args = args.iter().map(|a| a.to_vec()).collect();
        let proposal = tx::new_proposal(self.ledger.channel(), contract, function, args, signer);
        tx::sign_proposal(signer, &proposal)
    }

    /// Endorse, sign, submit and wait for commit, through the API; the tx id and seq.
    async fn invoke(
        &self,
        signer: &Signer,
        contract: &str,
        function: &str,
        args: &[&[u8]],
    ) -> (String, u64) {
        let mut gateway = self.gateway().await;
        let endorsed = gateway
            .endorse(EndorseRequest {
                endorsing_orgs: Vec::new(),
                proposal: Some(self.proposal(signer, contract, function, args)),
            })
            .await
            .unwrap()
            .into_inner();
        let submitted = gateway
            .submit(SubmitRequest {
                transaction: sign(signer, &endorsed.transaction),
                ..SubmitRequest::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(submitted.tx_id, endorsed.tx_id);
        let status = gateway
            .commit_status(CommitStatusRequest {
                tx_id: submitted.tx_id.clone(),
                wait_for: TxPhase::Committed as i32,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(status.code(), ValidationCode::Valid);
        (submitted.tx_id, submitted.seq)
    }
}

/// The creator's signature over exactly the transaction bytes the node returned.
fn sign(signer: &Signer, transaction: &[u8]) -> Vec<u8> {
    let message = tx::transaction_message(&tx::sha256(transaction));
    SignedTransaction {
        transaction: transaction.to_vec(),
        signature: signer.sign(&message).to_vec(),
    }
    .encode_to_vec()
}

pub(crate) fn assert_status(status: &Status, code: Code, name: &str) {
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status.message().starts_with(&format!("{name}: ")),
        "{status:?}"
    );
    assert_eq!(
        status
            .metadata()
            .get("runnel-error-code")
            .and_then(|v| v.to_str().ok()),
        Some(name),
        "{status:?}"
    );
}

fn validation_header(status: &Status) -> Option<&str> {
    status
        .metadata()
        .get("runnel-validation-code")
        .and_then(|v| v.to_str().ok())
}

async fn next<T>(stream: &mut tonic::Streaming<T>) -> T {
    tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("the stream sends in time")
        .expect("the stream goes on")
        .unwrap()
}

// ---------------------------------------------------------------------------------------
// Raw frames: bytes that are not the message the method expects

#[derive(Debug, Clone, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(buf.copy_to_bytes(buf.remaining()).to_vec()))
    }
}

async fn raw_call(node: &Node, path: &'static str, body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let mut grpc = tonic::client::Grpc::new(node.channel().await);
    grpc.ready().await.unwrap();
    grpc.unary(
        tonic::Request::new(body),
        http::uri::PathAndQuery::from_static(path),
        RawCodec,
    )
    .await
    .map(|response| response.into_inner())
}

// ---------------------------------------------------------------------------------------
// Gateway

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_signs_endorses_submits_and_waits_through_the_gateway() {
    let node = Node::default().await;
    node.deploy("kv", kv_wasm()).await;
    let client = node.client();
    let mut gateway = node.gateway().await;

    let endorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(node.proposal(&client, "kv", "put", &[b"colour", b"blue"])),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(endorsed.result, b"null");
    let transaction = Transaction::decode(endorsed.transaction.as_slice()).unwrap();
    assert_eq!(transaction.endorsements.len(), 1);

    // Registered before the transaction exists: it waits, then answers.
    let mut waiting = node.gateway().await;
    let tx_id = endorsed.tx_id.clone();
    let validated = tokio::spawn(async move {
        waiting
            .commit_status(CommitStatusRequest {
                tx_id,
                wait_for: TxPhase::Validated as i32,
            })
            .await
    });
    let submitted = gateway
        .submit(SubmitRequest {
            transaction: sign(&client, &endorsed.transaction),
            ..SubmitRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(submitted.tx_id, endorsed.tx_id);
    assert_eq!(submitted.seq, 2, "after the deploy");
    let validated = tokio::time::timeout(WAIT, validated)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .into_inner();
    assert_eq!(
        (validated.code(), validated.seq),
        (ValidationCode::Valid, 2)
    );

    let committed = gateway
        .commit_status(CommitStatusRequest {
            tx_id: submitted.tx_id.clone(),
            wait_for: TxPhase::Unspecified as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(committed.phase(), TxPhase::Committed);
    assert_eq!(committed.code(), ValidationCode::Valid);
    assert!(committed.timestamp_ms > 0);
    // The waiting call was answered by the status it was woken with; the ledger, read
    // now, says the same.
    assert_eq!(
        (&validated.tx_id, validated.seq, validated.timestamp_ms),
        (&committed.tx_id, committed.seq, committed.timestamp_ms)
    );

    let value = gateway
        .evaluate(EvaluateRequest {
            proposal: Some(node.proposal(&client, "kv", "get", &[b"colour"])),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(value.result, b"\"blue\"");

    // Every stage of the flow is in the trace, in order.
    let trace = TraceClient::new(node.channel().await)
        .get_trace(GetTraceRequest {
            tx_id: submitted.tx_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .trace
        .unwrap();
    let stages: Vec<Stage> = trace.stages.iter().map(|s| s.stage()).collect();
    assert_eq!(
        stages,
        [
            Stage::EndorseStart,
            Stage::EndorseEnd,
            Stage::Received,
            Stage::Ordered,
            Stage::Delivered,
            Stage::Verified,
            Stage::Validated,
            Stage::Committed,
            Stage::Notified
        ]
    );
    assert!(trace.stages.windows(2).all(|w| w[0].at_us <= w[1].at_us));

    // Submit can wait itself: one round trip answers with the durable status.
    let endorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(node.proposal(&client, "kv", "put", &[b"colour", b"green"])),
        })
        .await
        .unwrap()
        .into_inner();
    let submitted = gateway
        .submit(SubmitRequest {
            transaction: sign(&client, &endorsed.transaction),
            wait_for: TxPhase::Committed as i32,
        })
        .await
        .unwrap()
        .into_inner();
    let status = submitted.status.expect("the status asked for");
    assert_eq!(
        (
            status.tx_id.as_str(),
            status.code(),
            status.phase(),
            status.seq
        ),
        (
            endorsed.tx_id.as_str(),
            ValidationCode::Valid,
            TxPhase::Committed,
            submitted.seq
        )
    );
    let value = gateway
        .evaluate(EvaluateRequest {
            proposal: Some(node.proposal(&client, "kv", "get", &[b"colour"])),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(value.result, b"\"green\"", "durable, so visible");
    // Without wait_for, no status; a wait_for that is no phase is refused, unordered.
    let endorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(node.proposal(&client, "kv", "put", &[b"colour", b"red"])),
        })
        .await
        .unwrap()
        .into_inner();
    let refused = gateway
        .submit(SubmitRequest {
            transaction: sign(&client, &endorsed.transaction),
            wait_for: 42,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    let plain = gateway
        .submit(SubmitRequest {
            transaction: sign(&client, &endorsed.transaction),
            ..SubmitRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(plain.status.is_none());
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_transaction_is_already_exists_with_duplicate_txid() {
    let node = Node::default().await;
    node.deploy("kv", kv_wasm()).await;
    let client = node.client();
    let mut gateway = node.gateway().await;
    let proposal = node.proposal(&client, "kv", "put", &[b"k", b"v"]);
    let endorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(proposal.clone()),
        })
        .await
        .unwrap()
        .into_inner();
    let signed = sign(&client, &endorsed.transaction);
    gateway
        .submit(SubmitRequest {
            transaction: signed.clone(),
            ..SubmitRequest::default()
        })
        .await
        .unwrap();
    gateway
        .commit_status(CommitStatusRequest {
            tx_id: endorsed.tx_id.clone(),
            wait_for: TxPhase::Committed as i32,
        })
        .await
        .unwrap();

    let replayed = gateway
        .submit(SubmitRequest {
            transaction: signed,
            ..SubmitRequest::default()
        })
        .await
        .unwrap_err();
    assert_status(&replayed, Code::AlreadyExists, "DUPLICATE_TXID");
    assert_eq!(validation_header(&replayed), Some("DUPLICATE_TXID"));
    assert!(replayed.message().contains(&endorsed.tx_id), "{replayed:?}");

    // The same proposal again is refused before anything runs.
    let reendorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(proposal),
        })
        .await
        .unwrap_err();
    assert_status(&reendorsed, Code::AlreadyExists, "DUPLICATE_TXID");
    // Nothing was ordered twice.
    let info = node
        .query()
        .await
        .get_network_info(GetNetworkInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.ordered_height, 2);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_wait_ends_at_the_nodes_longest_wait_whatever_the_clients_deadline() {
    let node = Node::start(
        &["Org1"],
        ApiConfig {
            commit_wait_max: std::time::Duration::from_millis(300),
            commit_waits_per_connection_max: 1,
            ..open_api()
        },
    )
    .await;
    let mut gateway = node.gateway().await;
    // A transaction that never comes, asked about without a deadline, twice: the first
    // wait ends at the node's bound and gives its connection's one place back.
    for _ in 0..2 {
        let status = gateway
            .commit_status(CommitStatusRequest {
                tx_id: "cd".repeat(32),
                wait_for: 0,
            })
            .await
            .unwrap_err();
        assert_status(&status, Code::DeadlineExceeded, "WAIT_TIMEOUT");
    }
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_call_bigger_than_a_proposal_is_refused_from_its_frame_header() {
    // The Gateway service takes 32 MiB messages, for Submit; Endorse, Evaluate and the
    // Admin calls carry one proposal (8 MiB at most) and refuse more before reading it.
    let node = Node::start(&["Org1"], open_api()).await;
    let big = 9 * MIB;
    for path in [
        "/runnel.v1.Gateway/Endorse",
        "/runnel.v1.Gateway/Evaluate",
        "/runnel.v1.Admin/DeployContract",
    ] {
        let status = raw_call(&node, path, vec![0; big]).await.unwrap_err();
        assert_status(&status, Code::ResourceExhausted, "MESSAGE_TOO_LARGE");
        assert!(status.message().contains(path), "{status:?}");
    }
    // Submit takes it in, and finds it is no transaction.
    let status = raw_call(&node, "/runnel.v1.Gateway/Submit", vec![0xff; big])
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    // A proposal call under the limit reaches the endorser.
    let status = raw_call(&node, "/runnel.v1.Gateway/Evaluate", vec![0xff; 7])
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    node.stop().await;
}

/// Every method has its own limit, checked from the frame header before any of the
/// request is read, and a repeated field's entries are counted before it is decoded.
/// Before: `EndorseBatch` took 32 MiB (≈1 GB decoded for empty proposals, before its
/// count was checked), `Endorse` 8 MiB of empty organisation names (≈100 MB decoded),
/// and `Query` calls 1 MiB whatever they carry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_is_bounded_before_its_request_is_decoded() {
    let node = Node::start(&["Org1"], open_api()).await;
    let too_large = |status: &Status, path: &str| {
        assert_status(status, Code::ResourceExhausted, "MESSAGE_TOO_LARGE");
        assert!(status.message().contains(path), "{status:?}");
    };
    // A batch of proposals takes no more than one proposal's bytes.
    let status = raw_call(&node, "/runnel.v1.Endorser/EndorseBatch", vec![0; 9 * MIB])
        .await
        .unwrap_err();
    too_large(&status, "/runnel.v1.Endorser/EndorseBatch");
    // Methods whose requests hold a number, an id or a name take 64 KiB.
    for path in [
        "/runnel.v1.Gateway/CommitStatus",
        "/runnel.v1.Gateway/ContractEvents",
        "/runnel.v1.Deliver/Transactions",
        "/runnel.v1.Query/GetBlock",
        "/runnel.v1.Query/GetTransaction",
        "/runnel.v1.Query/GetNetworkInfo",
        "/runnel.v1.Trace/GetTrace",
    ] {
        let status = raw_call(&node, path, vec![0; 100 << 10]).await.unwrap_err();
        too_large(&status, path);
    }
    // Past their count, repeated entries are refused unread, however small.
    let batch = EndorseBatchRequest {
        proposals: vec![SignedProposal::default(); 257],
    };
    let status = raw_call(
        &node,
        "/runnel.v1.Endorser/EndorseBatch",
        batch.encode_to_vec(),
    )
    .await
    .unwrap_err();
    assert_status(&status, Code::ResourceExhausted, "TOO_MANY_ITEMS");
    let orgs = EndorseRequest {
        proposal: None,
        endorsing_orgs: vec![String::new(); 65],
    };
    let status = raw_call(&node, "/runnel.v1.Gateway/Endorse", orgs.encode_to_vec())
        .await
        .unwrap_err();
    assert_status(&status, Code::ResourceExhausted, "TOO_MANY_ITEMS");
    // Under the count, the request reaches its method.
    let orgs = EndorseRequest {
        proposal: None,
        endorsing_orgs: vec![String::new(); 3],
    };
    let status = raw_call(&node, "/runnel.v1.Gateway/Endorse", orgs.encode_to_vec())
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    // The node goes on serving.
    let status = raw_call(&node, "/runnel.v1.Gateway/Evaluate", vec![0xff; 7])
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_status_and_changes_nothing() {
    let node = Node::start(
        &["Org1"],
        ApiConfig {
            message_bytes_max: MIB,
            ..open_api()
        },
    )
    .await;
    node.deploy("kv", kv_wasm()).await;
    node.deploy("token", token_wasm()).await;
    let client = node.client();
    let mut gateway = node.gateway().await;

    // Bytes that are not a request at all.
    let status = raw_call(&node, "/runnel.v1.Gateway/Evaluate", vec![0xff; 7])
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    // A request whose signed proposal holds garbage.
    let garbage = SignedProposal {
        proposal: vec![0xff; 9],
        signature: vec![0; 64],
    };
    let status = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(garbage),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    assert_eq!(validation_header(&status), Some("BAD_PAYLOAD"));
    let status = gateway
        .evaluate(EvaluateRequest { proposal: None })
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    let status = gateway
        .submit(SubmitRequest {
            transaction: vec![0xff; 11],
            ..SubmitRequest::default()
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");

    // Larger than the server takes.
    let status = raw_call(&node, "/runnel.v1.Gateway/Submit", vec![0; 2 * MIB])
        .await
        .unwrap_err();
    assert!(
        matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted),
        "{status:?}"
    );
    // Services whose requests are small refuse a big one from its frame header, far
    // below the message limit.
    for (path, size) in [
        ("/runnel.v1.Deliver/Transactions", 65 << 10),
        ("/runnel.v1.Trace/GetTrace", 65 << 10),
        ("/runnel.v1.Query/GetKey", MIB + (65 << 10)),
    ] {
        let status = raw_call(&node, path, vec![0; size]).await.unwrap_err();
        assert!(
            matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted),
            "{path}: {status:?}"
        );
    }

    // A forged signature.
    let mut forged = node.proposal(&client, "kv", "put", &[b"k", b"v"]);
    forged.signature[0] ^= 1;
    let status = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(forged),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::Unauthenticated, "BAD_CREATOR_SIGNATURE");
    assert_eq!(validation_header(&status), Some("BAD_CREATOR_SIGNATURE"));
    // A transaction whose creator signature was made over other bytes.
    let endorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(node.proposal(&client, "kv", "put", &[b"k", b"v"])),
        })
        .await
        .unwrap()
        .into_inner();
    let mut tampered = endorsed.transaction.clone();
    tampered.push(0);
    let mut signed = SignedTransaction::decode(sign(&client, &tampered).as_slice()).unwrap();
    signed.transaction = endorsed.transaction;
    let status = gateway
        .submit(SubmitRequest {
            transaction: signed.encode_to_vec(),
            ..SubmitRequest::default()
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::Unauthenticated, "BAD_CREATOR_SIGNATURE");
    // An identity from another network.
    let stranger = runnel_testing::signer("Org1", Role::Client);
    let status = gateway
        .evaluate(EvaluateRequest {
            proposal: Some(node.proposal(&stranger, "kv", "get", &[b"k"])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::Unauthenticated, "BAD_CREATOR");
    // A peer may not invoke.
    let peer = node.identity("Org1", Role::Peer);
    let status = gateway
        .evaluate(EvaluateRequest {
            proposal: Some(node.proposal(&peer, "kv", "get", &[b"k"])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::PermissionDenied, "ACCESS_DENIED");

    // Unknown contract, unknown function, the contract's own error.
    let status = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(node.proposal(&client, "nope", "put", &[b"k", b"v"])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::NotFound, "CONTRACT_NOT_FOUND");
    assert_eq!(validation_header(&status), Some("CONTRACT_NOT_FOUND"));
    let status = gateway
        .evaluate(EvaluateRequest {
            proposal: Some(node.proposal(&client, "kv", "nope", &[])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::NotFound, "FUNCTION_NOT_FOUND");
    let status = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(node.proposal(&client, "token", "mint", &[b"Org1/alice", b"5"])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::FailedPrecondition, "CONTRACT_ERROR");
    assert!(status.message().contains("only role"), "{status:?}");
    assert_eq!(validation_header(&status), None);

    // Ids, names and numbers that are not.
    let status = gateway
        .commit_status(CommitStatusRequest {
            tx_id: "not-an-id".into(),
            wait_for: 0,
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_TX_ID");
    let status = gateway
        .commit_status(CommitStatusRequest {
            tx_id: "ab".repeat(32),
            wait_for: 7,
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_PAYLOAD");
    let status = gateway
        .contract_events(ContractEventsRequest {
            contract: "Not A Name".into(),
            start: None,
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_CONTRACT_NAME");
    let status = node
        .query()
        .await
        .get_transaction(GetTransactionRequest {
            tx_id: "cd".repeat(32),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::NotFound, "TX_NOT_FOUND");
    let status = node
        .query()
        .await
        .get_key(GetKeyRequest {
            namespace: String::new(),
            key: b"k".to_vec(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");

    // Nothing above was ordered: the two deploys only.
    let info = node
        .query()
        .await
        .get_network_info(GetNetworkInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.ordered_height, 2);
    assert_eq!(info.message_bytes_max, MIB as u64);
    node.stop().await;
}

/// Mints through the API as the admin; the seq.
async fn mint(node: &Node, amount: u32) -> u64 {
    let amount = amount.to_string();
    node.invoke(
        &node.admin(),
        "token",
        "mint",
        &[b"Org1/alice", amount.as_bytes()],
    )
    .await
    .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_events_replay_then_go_live_and_resume_from_a_checkpoint() {
    let node = Node::default().await;
    node.deploy("token", token_wasm()).await;
    node.deploy("kv", kv_wasm()).await;
    let mut expected = Vec::new();
    for amount in 1..=3 {
        expected.push(mint(&node, amount).await);
    }
    // A transaction of another contract, and one with no events, between.
    node.invoke(&node.client(), "kv", "put", &[b"k", b"v"])
        .await;

    let mut gateway = node.gateway().await;
    let mut stream = gateway
        .contract_events(ContractEventsRequest {
            contract: "token".into(),
            start: Some(Start::StartSeq(1)),
        })
        .await
        .unwrap()
        .into_inner();
    let mut seen: Vec<ContractEventsResponse> = Vec::new();
    for _ in 0..3 {
        seen.push(next(&mut stream).await);
    }
    // Live, while more are minted behind the stream's back from another thread.
    let minter = {
        let ledger = node.ledger.clone();
        let admin = node.admin();
        tokio::task::spawn_blocking(move || {
            (10..16)
                .map(|amount: u32| {
                    ledger
                        .submit_as(
                            &admin,
                            "token",
                            "mint",
                            &[b"Org1/bob", amount.to_string().as_bytes()],
                        )
                        .unwrap()
                        .seq
                        .0
                })
                .collect::<Vec<u64>>()
        })
    };
    expected.extend(minter.await.unwrap());
    while seen.len() < expected.len() {
        seen.push(next(&mut stream).await);
    }
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, expected, "every event once, in order");
    assert!(seen.iter().all(|e| e.index == 0));
    let event = seen[0].event.as_ref().unwrap();
    assert_eq!(
        (event.contract.as_str(), event.name.as_str()),
        ("token", "Transfer")
    );
    drop(stream);

    // Resume after the fourth event: stored ones from there, then live.
    let checkpoint = &seen[3];
    let mut resumed = gateway
        .contract_events(ContractEventsRequest {
            contract: "token".into(),
            start: Some(Start::After(EventCheckpoint {
                seq: checkpoint.seq,
                index: checkpoint.index,
            })),
        })
        .await
        .unwrap()
        .into_inner();
    let live = mint(&node, 99).await;
    expected.push(live);
    let mut again = Vec::new();
    while again.len() < expected.len() - 4 {
        again.push(next(&mut resumed).await.seq);
    }
    assert_eq!(again, expected[4..].to_vec());

    // From "now": only what commits after the call.
    let mut from_now = gateway
        .contract_events(ContractEventsRequest {
            contract: "token".into(),
            start: None,
        })
        .await
        .unwrap()
        .into_inner();
    let later = mint(&node, 7).await;
    assert_eq!(next(&mut from_now).await.seq, later);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_of_a_quiet_contract_cost_the_reads_they_return() {
    let node = Node::default().await;
    node.deploy("token", token_wasm()).await;
    node.deploy("kv", kv_wasm()).await;
    let mut expected = vec![mint(&node, 1).await];
    // Many transactions of another contract between the quiet one's two events.
    let busy = 300;
    let ledger = node.ledger.clone();
    tokio::task::spawn_blocking(move || {
        for i in 0..busy {
            let key = format!("k{i}");
            ledger.submit("kv", "put", &[key.as_bytes(), b"v"]).unwrap();
        }
    })
    .await
    .unwrap();
    expected.push(mint(&node, 2).await);
    assert!(expected[1] - expected[0] > busy);

    let before = node.ledger.reader().store_reads().records;
    let mut gateway = node.gateway().await;
    let mut stream = gateway
        .contract_events(ContractEventsRequest {
            contract: "token".into(),
            start: Some(Start::StartSeq(1)),
        })
        .await
        .unwrap()
        .into_inner();
    let mut seqs = Vec::new();
    while seqs.len() < expected.len() {
        seqs.push(next(&mut stream).await.seq);
    }
    assert_eq!(seqs, expected);
    // The stream has read the store to its end, and then once more after subscribing:
    // each event is a record of the event index, plus, for a payload kept inside its
    // transaction's bytes, its place and those bytes. Nothing of the transactions between.
    let read = node.ledger.reader().store_reads().records - before;
    assert!(
        read <= 3 * expected.len() as u64,
        "{read} records read for {} events among {busy} other transactions",
        expected.len()
    );
    node.stop().await;
}

// ---------------------------------------------------------------------------------------
// Deliver, Query, Admin, Trace

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliver_streams_stored_then_live_transactions_and_blocks() {
    let node = Node::default().await;
    node.deploy("kv", kv_wasm()).await;
    let client = node.client();
    node.invoke(&client, "kv", "put", &[b"a", b"1"]).await;
    let channel = node.channel().await;
    let mut deliver = DeliverClient::new(channel);
    let mut transactions = deliver
        .transactions(DeliverTransactionsRequest { start_seq: 0 })
        .await
        .unwrap()
        .into_inner();
    let mut blocks = deliver
        .blocks(DeliverBlocksRequest {
            start_block: 1,
            with_transactions: true,
        })
        .await
        .unwrap()
        .into_inner();
    for seq in 1..=2 {
        let tx = next(&mut transactions).await.transaction.unwrap();
        assert_eq!((tx.seq, tx.code()), (seq, ValidationCode::Valid));
    }
    let (live_id, live_seq) = node.invoke(&client, "kv", "put", &[b"b", b"2"]).await;
    let tx = next(&mut transactions).await.transaction.unwrap();
    assert_eq!((tx.seq, tx.tx_id.as_str()), (live_seq, live_id.as_str()));
    assert!(SignedTransaction::decode(tx.transaction.as_slice()).is_ok());

    // Blocks chain and, together, list every transaction once.
    let mut listed = Vec::new();
    let mut previous: Option<Vec<u8>> = None;
    while listed.len() < 3 {
        let block = next(&mut blocks).await.block.unwrap();
        let seal = block.seal.as_ref().unwrap();
        if let Some(previous) = &previous {
            assert_eq!(&seal.previous_hash, previous);
        }
        previous = Some(block.hash.clone());
        listed.extend(block.transactions.iter().map(|tx| tx.seq));
        assert_eq!(
            block.transactions.len() as u64,
            seal.last_seq - seal.first_seq + 1
        );
    }
    assert_eq!(listed, vec![1, 2, 3]);

    let mut query = node.query().await;
    let block = query
        .get_block(GetBlockRequest { number: 1 })
        .await
        .unwrap()
        .into_inner()
        .block
        .unwrap();
    assert_eq!(block.seal.unwrap().number, 1);
    let status = query
        .get_block(GetBlockRequest { number: 1000 })
        .await
        .unwrap_err();
    assert_status(&status, Code::NotFound, "BLOCK_NOT_FOUND");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_read_transactions_keys_history_contracts_and_the_network() {
    let node = Node::start(&["Org1", "Org2"], open_api()).await;
    node.deploy("kv", kv_wasm()).await;
    let client = node.client();
    let (first, first_seq) = node
        .invoke(&client, "kv", "put", &[b"colour", b"blue"])
        .await;
    let (_, second_seq) = node
        .invoke(&client, "kv", "put", &[b"colour", b"red"])
        .await;
    node.invoke(&client, "kv", "delete", &[b"colour"]).await;
    let mut query = node.query().await;

    let detail = query
        .get_transaction(GetTransactionRequest {
            tx_id: first.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (detail.seq, detail.code()),
        (first_seq, ValidationCode::Valid)
    );
    assert_eq!(detail.phase(), TxPhase::Committed);
    let proposal = detail.proposal.unwrap();
    assert_eq!(
        (proposal.contract.as_str(), proposal.function.as_str()),
        ("kv", "put")
    );
    assert_eq!(proposal.args, vec![b"colour".to_vec(), b"blue".to_vec()]);
    let creator = detail.creator.unwrap();
    assert_eq!(
        (creator.org.as_str(), creator.role.as_str()),
        ("Org1", "client")
    );
    let payload = detail.payload.unwrap();
    let kv = payload
        .rwsets
        .iter()
        .find(|set| set.namespace == "kv")
        .unwrap();
    assert_eq!(kv.writes[0].key, b"colour");
    // MAJORITY of two organisations: both peers endorsed.
    let endorsers: Vec<String> = detail
        .endorsements
        .iter()
        .map(|e| e.endorser.as_ref().unwrap().org.clone())
        .collect();
    assert_eq!(endorsers, ["Org1", "Org2"]);

    let key = query
        .get_key(GetKeyRequest {
            namespace: "kv".into(),
            key: b"colour".to_vec(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!key.found, "deleted");
    let history = query
        .get_key_history(GetKeyHistoryRequest {
            namespace: "kv".into(),
            key: b"colour".to_vec(),
            before_seq: 0,
            limit: 2,
        })
        .await
        .unwrap()
        .into_inner()
        .entries;
    assert_eq!(history.len(), 2);
    assert!(history[0].is_delete);
    assert_eq!(
        (history[1].seq, history[1].value.as_slice()),
        (second_seq, &b"red"[..])
    );
    let older = query
        .get_key_history(GetKeyHistoryRequest {
            namespace: "kv".into(),
            key: b"colour".to_vec(),
            before_seq: history[1].seq,
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner()
        .entries;
    assert_eq!(older.len(), 1);
    assert_eq!(older[0].tx_id, first);

    let contracts = query
        .list_contracts(ListContractsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .contracts;
    assert_eq!(contracts.len(), 1);
    assert_eq!(
        (contracts[0].name.as_str(), contracts[0].sequence),
        ("kv", 1)
    );
    let after = query
        .list_contracts(ListContractsRequest {
            start_after: "kv".into(),
            limit: 10,
        })
        .await
        .unwrap()
        .into_inner()
        .contracts;
    assert!(after.is_empty());
    // Both organisations approved kv's definition: the node's deploy is Org2's approval
    // and Org1's commit.
    let approvals = query
        .get_contract_approvals(runnel_server::proto::GetContractApprovalsRequest {
            name: "kv".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(approvals.definition.as_ref().unwrap().sequence, 1);
    let approved: Vec<(u64, &str, bool)> = approvals
        .approvals
        .iter()
        .map(|a| {
            let current = a.definition_hash == approvals.definition_hash;
            (a.sequence, a.org.as_str(), current)
        })
        .collect();
    assert_eq!(approved, [(1, "Org1", true), (1, "Org2", true)]);

    let info = query
        .get_network_info(GetNetworkInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.channel, "main");
    assert_eq!(info.orgs, ["Org1", "Org2"]);
    assert_eq!(info.ordering_mode(), OrderingMode::Streaming);
    // The approval, the commit and three puts.
    assert_eq!(info.committed_height, 5);
    assert!(info.validated_height >= info.committed_height);

    // The first put's inclusion proof, once its block is sealed (seals every 20 ms).
    let mut proof = None;
    for _ in 0..200 {
        match query
            .get_inclusion_proof(GetInclusionProofRequest {
                tx_id: first.clone(),
            })
            .await
        {
            Ok(response) => {
                proof = Some(response.into_inner());
                break;
            }
            Err(status) => assert_status(&status, Code::NotFound, "TX_NOT_SEALED"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let proof = proof.expect("the first put is sealed");
    let block = proof.block.unwrap();
    let sealed = runnel_ledger::block::decode_signed_seal(&block.signed_seal).unwrap();
    assert_eq!(block.hash, sealed.hash.to_vec());
    let inclusion = proof.proof.unwrap();
    assert_eq!(inclusion.seq, first_seq);
    assert_eq!(inclusion.block, sealed.seal.number.0);
    runnel_ledger::block::verify_proof(&inclusion, &proof.transaction, &sealed.seal).unwrap();
    let mut forged = proof.transaction.clone();
    forged[0] ^= 1;
    assert!(runnel_ledger::block::verify_proof(&inclusion, &forged, &sealed.seal).is_err());
    // The orderer's timestamp travels in the proof and is hashed into the leaf.
    assert!(inclusion.timestamp_ms > 0);
    let retimed = runnel_ledger::proto::InclusionProof {
        timestamp_ms: inclusion.timestamp_ms - 1,
        ..inclusion.clone()
    };
    assert!(
        runnel_ledger::block::verify_proof(&retimed, &proof.transaction, &sealed.seal).is_err()
    );
    let status = query
        .get_inclusion_proof(GetInclusionProofRequest {
            tx_id: "ef".repeat(32),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::NotFound, "TX_NOT_SEALED");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_deploys_by_signing_the_proposal_and_the_transaction() {
    let node = Node::default().await;
    let admin = node.admin();
    let request = DeployRequest {
        name: "kv".into(),
        version: "1.0".into(),
        code: kv_wasm().to_vec(),
        ..DeployRequest::default()
    }
    .encode_to_vec();
    let mut admin_api = AdminClient::new(node.channel().await)
        .max_encoding_message_size(64 * MIB)
        .max_decoding_message_size(64 * MIB);

    // A client may not propose a deploy; nor is an invoke a deploy.
    let status = admin_api
        .deploy_contract(DeployContractRequest {
            proposal: Some(node.proposal(&node.client(), "_lifecycle", "deploy", &[&request])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::PermissionDenied, "ACCESS_DENIED");
    let status = admin_api
        .deploy_contract(DeployContractRequest {
            proposal: Some(node.proposal(&admin, "kv", "put", &[b"k", b"v"])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::InvalidArgument, "BAD_REQUEST");

    let prepared = admin_api
        .deploy_contract(DeployContractRequest {
            proposal: Some(node.proposal(&admin, "_lifecycle", "deploy", &[&request])),
        })
        .await
        .unwrap()
        .into_inner();
    let definition = prepared.definition.unwrap();
    assert_eq!((definition.name.as_str(), definition.sequence), ("kv", 1));
    let mut gateway = node.gateway().await;
    gateway
        .submit(SubmitRequest {
            transaction: sign(&admin, &prepared.transaction),
            ..SubmitRequest::default()
        })
        .await
        .unwrap();
    let status = gateway
        .commit_status(CommitStatusRequest {
            tx_id: prepared.tx_id,
            wait_for: TxPhase::Committed as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.code(), ValidationCode::Valid);
    let contracts = node
        .query()
        .await
        .list_contracts(ListContractsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .contracts;
    assert_eq!(contracts, vec![definition]);

    // Deploying the name again is the lifecycle's refusal.
    let status = admin_api
        .deploy_contract(DeployContractRequest {
            proposal: Some(node.proposal(&admin, "_lifecycle", "deploy", &[&request])),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::AlreadyExists, "ALREADY_DEPLOYED");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_admin_calls_is_refused_with_queue_full_and_reads_go_on() {
    let node = Node::default().await;
    let admin = node.admin();
    let channel = node.channel().await;
    // Many more calls at once than the admin thread and its queue hold. Each deploys a
    // contract of its own name, so each is endorsed in full.
    let flood = 8 * (ADMIN_QUEUE_MAX + 1);
    let calls: Vec<_> = (0..flood)
        .map(|i| {
            let request = DeployRequest {
                name: format!("kv{i}"),
                version: "1.0".into(),
                code: kv_wasm().to_vec(),
                ..DeployRequest::default()
            }
            .encode_to_vec();
            let proposal = node.proposal(&admin, "_lifecycle", "deploy", &[&request]);
            let mut client = AdminClient::new(channel.clone())
                .max_encoding_message_size(64 * MIB)
                .max_decoding_message_size(64 * MIB);
            tokio::spawn(async move {
                client
                    .deploy_contract(DeployContractRequest {
                        proposal: Some(proposal),
                    })
                    .await
            })
        })
        .collect();
    // Reads, which run on the blocking pool, are answered meanwhile.
    let info = node
        .query()
        .await
        .get_network_info(GetNetworkInfoRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.channel, node.ledger.channel());
    let (mut endorsed, mut refused) = (0, 0);
    for call in calls {
        match call.await.unwrap() {
            Ok(response) => {
                assert!(response.into_inner().definition.is_some());
                endorsed += 1;
            }
            Err(status) => {
                assert_status(&status, Code::ResourceExhausted, "QUEUE_FULL");
                refused += 1;
            }
        }
    }
    assert!(
        endorsed >= 1 && refused >= 1,
        "{endorsed} endorsed, {refused} refused"
    );
    // Once the flood has passed, an admin call is served again.
    let request = DeployRequest {
        name: "after".into(),
        version: "1.0".into(),
        code: kv_wasm().to_vec(),
        ..DeployRequest::default()
    }
    .encode_to_vec();
    AdminClient::new(channel)
        .max_encoding_message_size(64 * MIB)
        .deploy_contract(DeployContractRequest {
            proposal: Some(node.proposal(&admin, "_lifecycle", "deploy", &[&request])),
        })
        .await
        .unwrap();
    node.stop().await;
}

/// A flood of inclusion-proof requests. Before: each one loaded and hashed its whole
/// block on a thread of the unbounded blocking pool, so a flood held every core. Now: at
/// most `PROOFS_CONCURRENT_MAX` are built at once, the rest are refused at once with
/// `RESOURCE_EXHAUSTED` (`QUEUE_FULL`), other reads are answered meanwhile, and every
/// proof given still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_proof_requests_is_refused_past_its_bound_and_reads_go_on() {
    let node = Node::default().await;
    node.deploy("kv", kv_wasm()).await;
    let ids: Vec<String> = node
        .with_ledger(|ledger| {
            (0..8)
                .map(|i| {
                    let key = format!("k{i}");
                    let committed = ledger.submit("kv", "put", &[key.as_bytes(), b"v"]);
                    committed.unwrap().tx_id.to_string()
                })
                .collect()
        })
        .await;
    // Every one sealed (every 4 transactions or 20 ms).
    let mut query = node.query().await;
    for id in &ids {
        let sealed = async {
            while query
                .get_inclusion_proof(GetInclusionProofRequest { tx_id: id.clone() })
                .await
                .is_err()
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(WAIT, sealed).await.expect("sealed");
    }
    let flood = 64 * runnel_server::PROOFS_CONCURRENT_MAX;
    let channels = [node.channel().await, node.channel().await];
    let calls: Vec<_> = (0..flood)
        .map(|i| {
            let mut client = QueryClient::new(channels[i % 2].clone());
            let tx_id = ids[i % ids.len()].clone();
            tokio::spawn(async move {
                client
                    .get_inclusion_proof(GetInclusionProofRequest { tx_id })
                    .await
            })
        })
        .collect();
    let key = query
        .get_key(GetKeyRequest {
            namespace: "kv".into(),
            key: b"k0".to_vec(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(key.found, "a read is answered during the flood");
    let (mut proven, mut refused) = (0, 0);
    for call in calls {
        match call.await.unwrap() {
            Ok(response) => {
                let response = response.into_inner();
                let sealed =
                    runnel_ledger::block::decode_signed_seal(&response.block.unwrap().signed_seal)
                        .unwrap();
                runnel_ledger::block::verify_proof(
                    &response.proof.unwrap(),
                    &response.transaction,
                    &sealed.seal,
                )
                .unwrap();
                proven += 1;
            }
            Err(status) => {
                assert_status(&status, Code::ResourceExhausted, "QUEUE_FULL");
                refused += 1;
            }
        }
    }
    assert!(
        proven >= 1 && refused >= 1,
        "{proven} proven, {refused} refused"
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_stream_sends_each_completed_transaction() {
    let node = Node::default().await;
    node.deploy("kv", kv_wasm()).await;
    let mut traces = TraceClient::new(node.channel().await)
        .trace_stream(TraceStreamRequest {})
        .await
        .unwrap()
        .into_inner();
    let client = node.client();
    let (api_tx, _) = node.invoke(&client, "kv", "put", &[b"a", b"1"]).await;
    let embedded = node
        .with_ledger(|ledger| ledger.submit("kv", "put", &[b"b", b"2"]).unwrap().tx_id)
        .await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let trace = next(&mut traces).await.trace.unwrap();
        // Complete: from the endorsement to the notification.
        assert_eq!(trace.stages.first().unwrap().stage(), Stage::EndorseStart);
        assert_eq!(trace.stages.last().unwrap().stage(), Stage::Notified);
        assert_eq!(trace.stages.len(), 9);
        ids.push(trace.tx_id);
    }
    assert_eq!(ids, vec![api_tx, embedded.to_hex()]);

    let status = TraceClient::new(node.channel().await)
        .get_trace(GetTraceRequest {
            tx_id: "ef".repeat(32),
        })
        .await
        .unwrap_err();
    assert_status(&status, Code::NotFound, "TRACE_NOT_FOUND");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_streams_are_bounded_and_end_when_the_server_stops() {
    let node = Node::start(
        &["Org1"],
        ApiConfig {
            streams_max: 1,
            commit_waits_max: 1,
            ..open_api()
        },
    )
    .await;
    let mut deliver = DeliverClient::new(node.channel().await);
    let mut open = deliver
        .transactions(DeliverTransactionsRequest { start_seq: 1 })
        .await
        .unwrap()
        .into_inner();
    let status = deliver
        .blocks(DeliverBlocksRequest::default())
        .await
        .unwrap_err();
    assert_status(&status, Code::ResourceExhausted, "TOO_MANY_STREAMS");
    // One call may wait for a status: of two, one waits and the other is refused.
    let wait = |mut gateway: GatewayClient<Channel>, tx_id: String| {
        tokio::spawn(async move {
            let mut request = tonic::Request::new(CommitStatusRequest { tx_id, wait_for: 0 });
            request.set_timeout(WAIT);
            gateway.commit_status(request).await
        })
    };
    let mut first = wait(node.gateway().await, "12".repeat(32));
    let mut second = wait(node.gateway().await, "34".repeat(32));
    let (refused, waiting) = tokio::time::timeout(WAIT, async {
        tokio::select! {
            refused = &mut first => (refused, second),
            refused = &mut second => (refused, first),
        }
    })
    .await
    .unwrap();
    assert_status(
        &refused.unwrap().unwrap_err(),
        Code::ResourceExhausted,
        "TOO_MANY_WAITS",
    );
    // The open stream and the waiting call both end with the server.
    node.stop().await;
    let ended = tokio::time::timeout(WAIT, open.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_status(&ended, Code::Unavailable, "SHUTTING_DOWN");
    let waited = tokio::time::timeout(WAIT, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(waited.code(), Code::Unavailable, "{waited:?}");
}

// ---------------------------------------------------------------------------------------
// gRPC-web and CORS over plain HTTP/1.1

/// One HTTP/1.1 exchange on a fresh connection.
async fn http1(
    addr: SocketAddr,
    request: http::Request<Full<Bytes>>,
) -> (http::response::Parts, Bytes) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let response = tokio::time::timeout(WAIT, sender.send_request(request))
        .await
        .unwrap()
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (parts, body)
}

/// A gRPC-web frame: flag, big-endian length, payload.
fn frame(flag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The frames of a gRPC-web body.
fn frames(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let flag = body.get_u8();
        let len = body.get_u32() as usize;
        out.push((flag, body[..len].to_vec()));
        body.advance(len);
    }
    out
}

fn grpc_web(addr: SocketAddr, path: &str, message: &[u8]) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .header("origin", "http://localhost:5173")
        .body(Full::new(Bytes::from(frame(0, message))))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_over_http1_with_cors() {
    // The page's origin (that of grpc_web's requests) is allowed; no other is.
    let node = Node::start(
        &["Org1"],
        ApiConfig {
            cors_origins: vec!["http://localhost:5173".into()],
            ..open_api()
        },
    )
    .await;

    // A unary call: one message frame, then a trailer frame with the status.
    let (parts, body) = http1(
        node.addr,
        grpc_web(node.addr, "/runnel.v1.Query/GetNetworkInfo", &[]),
    )
    .await;
    assert_eq!(parts.status, 200);
    assert_eq!(parts.headers["content-type"], "application/grpc-web+proto");
    assert_eq!(
        parts.headers["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let exposed = parts.headers["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_string();
    for header in [
        "grpc-status",
        "grpc-message",
        "runnel-error-code",
        "runnel-validation-code",
    ] {
        assert!(exposed.contains(header), "{exposed}");
    }
    let reply = frames(&body);
    assert_eq!(reply.len(), 2, "{reply:?}");
    assert_eq!(reply[0].0, 0);
    let info = GetNetworkInfoResponse::decode(reply[0].1.as_slice()).unwrap();
    assert_eq!(info.channel, "main");
    assert_eq!(reply[1].0, 0x80);
    let trailers = String::from_utf8(reply[1].1.clone()).unwrap();
    assert!(trailers.contains("grpc-status:0"), "{trailers}");

    // An error reaches the browser with its status and codes.
    let request = GetTransactionRequest {
        tx_id: "ab".repeat(32),
    }
    .encode_to_vec();
    let (parts, body) = http1(
        node.addr,
        grpc_web(node.addr, "/runnel.v1.Query/GetTransaction", &request),
    )
    .await;
    assert_eq!(parts.status, 200);
    let mut status_text = String::new();
    for (name, value) in &parts.headers {
        status_text.push_str(&format!("{name}:{}\r\n", value.to_str().unwrap_or("")));
    }
    for (flag, payload) in frames(&body) {
        if flag == 0x80 {
            status_text.push_str(&String::from_utf8(payload).unwrap());
        }
    }
    assert!(status_text.contains("grpc-status:5"), "{status_text}");
    assert!(
        status_text.contains("runnel-error-code:TX_NOT_FOUND"),
        "{status_text}"
    );

    // The browser's preflight before a gRPC-web call.
    let preflight = http::Request::options(format!(
        "http://{}/runnel.v1.Query/GetNetworkInfo",
        node.addr
    ))
    .header("host", node.addr.to_string())
    .header("origin", "http://localhost:5173")
    .header("access-control-request-method", "POST")
    .header(
        "access-control-request-headers",
        "content-type,x-grpc-web,x-user-agent",
    )
    .body(Full::new(Bytes::new()))
    .unwrap();
    let (parts, _) = http1(node.addr, preflight.clone()).await;
    assert!(parts.status.is_success(), "{parts:?}");
    assert_eq!(
        parts.headers["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let methods = parts.headers["access-control-allow-methods"]
        .to_str()
        .unwrap();
    assert!(methods.contains("POST"), "{methods}");
    let headers = parts.headers["access-control-allow-headers"]
        .to_str()
        .unwrap();
    assert!(
        headers.contains("x-grpc-web") || headers == "*",
        "{headers}"
    );
    assert!(parts.headers.contains_key("access-control-max-age"));
    // A page of another origin is not let in, so the browser refuses to send its call.
    let mut elsewhere = preflight.clone();
    elsewhere
        .headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    let (parts, _) = http1(node.addr, elsewhere).await;
    assert!(!parts.headers.contains_key("access-control-allow-origin"));
    node.stop().await;

    // By default no other origin may call: only the pages the node serves itself.
    let node = Node::default().await;
    let (parts, _) = http1(node.addr, preflight).await;
    assert!(
        !parts.headers.contains_key("access-control-allow-origin"),
        "{parts:?}"
    );
    node.stop().await;
}
