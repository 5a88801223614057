//! Reads for members only (`read_access = "members"`): a real node on loopback over TLS,
//! read by callers with no identity, with a TLS client certificate that is no member's,
//! with a member's own certificate over mutual TLS, and with read grants, good and forged.

use std::path::Path;

use runnel_ledger::identity::{NetworkIdentities, Role, Signer, TLS_CA_FILE};
use runnel_ledger::proto::{
    CommitStatusRequest, ContractEventsRequest, DeliverBlocksRequest, GetNetworkInfoRequest,
    ListContractsRequest, TraceStreamRequest,
};
use runnel_ledger::tx;
use runnel_server::proto::deliver_client::DeliverClient;
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::proto::query_client::QueryClient;
use runnel_server::proto::trace_client::TraceClient;
use runnel_server::readers::{READ_GRANT_HEADER, READ_GRANT_LIFETIME_MAX_MS, signed_grant};
use runnel_server::{ApiConfig, ClientAuth, ReadAccess};
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Identity};
use tonic::{Code, Request, Status};

use crate::api::assert_status;
use crate::api_tls::{server_tls, tls_file};
use crate::node::Node;

/// A node of Org1 and Org2 over TLS whose reads are for members, asking for (not
/// requiring) client certificates from Org1's TLS CA or the network's CAs.
async fn members_node() -> Node {
    let api = |dir: &Path| ApiConfig {
        read_access: ReadAccess::Members,
        tls: Some(
            server_tls(dir)
                .with_client_auth(ClientAuth::Optional, tls_file(dir, "Org1", TLS_CA_FILE)),
        ),
        ..ApiConfig::default()
    };
    Node::serve(&["Org1", "Org2"], api, false).await
}

/// A read grant header value for `creator`'s certificate, signed by `signer`.
fn grant(creator: &Signer, signer: &Signer, channel: &str, start_ms: u64, life_ms: u64) -> Vec<u8> {
    let mut signed = signed_grant(creator, channel, start_ms, life_ms);
    if !std::ptr::eq(creator, signer) {
        // Re-sign the same grant with another key: a forgery.
        use prost::Message as _;
        let mut decoded = runnel_ledger::proto::SignedReadGrant::decode(signed.as_slice()).unwrap();
        decoded.signature = signer
            .sign(&tx::read_grant_message(&tx::sha256(&decoded.grant)))
            .to_vec();
        signed = decoded.encode_to_vec();
    }
    signed
}

/// One call of each kind of read, with `grant` in its header if given: the status of
/// each, in order (Query.ListContracts, Deliver.Blocks, Trace.TraceStream,
/// Gateway.CommitStatus, Gateway.ContractEvents).
async fn reads(channel: &Channel, grant: Option<&[u8]>) -> Vec<Result<(), Status>> {
    fn with<T>(message: T, grant: Option<&[u8]>) -> Request<T> {
        let mut request = Request::new(message);
        if let Some(grant) = grant {
            request
                .metadata_mut()
                .insert_bin(READ_GRANT_HEADER, MetadataValue::from_bytes(grant));
        }
        request
    }
    let unknown_tx = "ab".repeat(32);
    vec![
        QueryClient::new(channel.clone())
            .list_contracts(with(ListContractsRequest::default(), grant))
            .await
            .map(drop),
        DeliverClient::new(channel.clone())
            .blocks(with(DeliverBlocksRequest::default(), grant))
            .await
            .map(drop),
        TraceClient::new(channel.clone())
            .trace_stream(with(TraceStreamRequest::default(), grant))
            .await
            .map(drop),
        // A wait for a transaction that never comes: cut short, it still shows whether
        // the call was let in (DEADLINE_EXCEEDED) or refused at once.
        {
            let mut call = with(
                CommitStatusRequest {
                    tx_id: unknown_tx,
                    wait_for: 0,
                },
                grant,
            );
            call.set_timeout(std::time::Duration::from_millis(300));
            match GatewayClient::new(channel.clone())
                .commit_status(call)
                .await
            {
                // The node's deadline, or the client's own that fired first.
                Err(status)
                    if matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled)
                        && status.metadata().get("runnel-error-code").is_none() =>
                {
                    Ok(())
                }
                other => other.map(drop),
            }
        },
        GatewayClient::new(channel.clone())
            .contract_events(with(
                ContractEventsRequest {
                    contract: "kv".into(),
                    start: None,
                },
                grant,
            ))
            .await
            .map(drop),
    ]
}

fn assert_refused(results: &[Result<(), Status>], name: &str, why: &str) {
    assert_eq!(results.len(), 5);
    for result in results {
        assert_status(result.as_ref().expect_err(why), Code::Unauthenticated, name);
    }
}

fn assert_served(results: &[Result<(), Status>], why: &str) {
    for result in results {
        if let Err(status) = result {
            panic!("{why}: {status:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_members_every_read_needs_an_identity_of_the_network() {
    let node = members_node().await;
    let anyone = node.tls_channel().await;

    // The channel's name is open to all: a grant must name it.
    let info = QueryClient::new(anyone.clone())
        .get_network_info(GetNetworkInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    let channel = info.channel;

    assert_refused(
        &reads(&anyone, None).await,
        "IDENTITY_REQUIRED",
        "no identity",
    );

    // A TLS client certificate proves a TLS CA issued it, not that its holder is a
    // member of the network.
    let transport_only = node
        .channel_with(node.pem("Org1", TLS_CA_FILE), |tls| {
            tls.identity(node.client_identity("Org1"))
        })
        .await
        .unwrap();
    assert_refused(
        &reads(&transport_only, None).await,
        "IDENTITY_REQUIRED",
        "a TLS CA's client certificate",
    );

    // A member's own certificate, over mutual TLS.
    let identities = node.path().join("identities/Org2");
    let member = node
        .channel_with(node.pem("Org1", TLS_CA_FILE), |tls| {
            tls.identity(Identity::from_pem(
                std::fs::read(identities.join("client.pem")).unwrap(),
                std::fs::read(identities.join("client.key")).unwrap(),
            ))
        })
        .await
        .unwrap();
    assert_served(
        &reads(&member, None).await,
        "a member's certificate over mTLS",
    );

    // A read grant, over a connection without a client certificate.
    let client = node.client();
    let now = tx::now_ms();
    let good = grant(&client, &client, &channel, now - 1000, 60_000);
    assert_served(&reads(&anyone, Some(&good)).await, "a read grant");
    // Again: remembered, and still good.
    assert_served(&reads(&anyone, Some(&good)).await, "the same grant again");

    // Forgeries and grants that do not hold.
    let other_org = node.identity("Org2", Role::Client);
    let outsider = {
        let network = NetworkIdentities::generate(&["Org1"], time::Duration::days(1)).unwrap();
        Signer::new(&network.orgs[0].client).unwrap()
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "signed by another member's key",
            grant(&client, &other_org, &channel, now - 1000, 60_000),
        ),
        (
            "for another channel",
            grant(&client, &client, "elsewhere", now - 1000, 60_000),
        ),
        (
            "ended",
            grant(&client, &client, &channel, now - 120_000, 60_000),
        ),
        (
            "starting in an hour",
            grant(&client, &client, &channel, now + 3_600_000, 60_000),
        ),
        (
            "valid for longer than a node takes",
            grant(
                &client,
                &client,
                &channel,
                now - 1000,
                READ_GRANT_LIFETIME_MAX_MS + 1,
            ),
        ),
        (
            "from a CA outside the network",
            grant(&outsider, &outsider, &channel, now - 1000, 60_000),
        ),
        ("not a grant", b"\x01\x02garbage".to_vec()),
        ("too big", vec![0x0a; 10 << 10]),
    ];
    for (why, bad) in cases {
        assert_refused(&reads(&anyone, Some(&bad)).await, "BAD_READ_GRANT", why);
    }

    // The transport's own TLS client certificate does not help a forged grant.
    let forged = grant(&client, &other_org, &channel, now - 1000, 60_000);
    assert_refused(
        &reads(&transport_only, Some(&forged)).await,
        "BAD_READ_GRANT",
        "a forged grant over a TLS client certificate",
    );

    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_reader_holds_its_share_of_the_streams_over_all_its_connections() {
    let api = |dir: &Path| ApiConfig {
        read_access: ReadAccess::Members,
        streams_per_identity_max: 2,
        tls: Some(server_tls(dir)),
        ..ApiConfig::default()
    };
    let node = Node::serve(&["Org1", "Org2"], api, false).await;
    let anyone = node.tls_channel().await;
    let channel = QueryClient::new(anyone.clone())
        .get_network_info(GetNetworkInfoRequest {})
        .await
        .unwrap()
        .into_inner()
        .channel;
    let now = tx::now_ms();
    let org1 = node.client();
    let mine = grant(&org1, &org1, &channel, now - 1000, 60_000);
    let org2 = node.identity("Org2", Role::Client);
    let theirs = grant(&org2, &org2, &channel, now - 1000, 60_000);
    let open = |grant: Vec<u8>| {
        let node = &node;
        async move {
            // A connection of its own each time.
            let connection = node.tls_channel().await;
            let mut request = Request::new(DeliverBlocksRequest::default());
            request
                .metadata_mut()
                .insert_bin(READ_GRANT_HEADER, MetadataValue::from_bytes(&grant));
            DeliverClient::new(connection).blocks(request).await
        }
    };
    let held = [
        open(mine.clone()).await.unwrap(),
        open(mine.clone()).await.unwrap(),
    ];
    let refused = open(mine.clone()).await.unwrap_err();
    assert_status(&refused, Code::ResourceExhausted, "TOO_MANY_STREAMS");
    assert!(refused.message().contains("this identity"), "{refused:?}");
    // Another member is served meanwhile, and the reader again once it closes one.
    let other = open(theirs).await.expect("another reader's share");
    drop(held);
    let deadline = tokio::time::Instant::now() + crate::node::WAIT;
    loop {
        match open(mine.clone()).await {
            Ok(_) => break,
            Err(status) if tokio::time::Instant::now() < deadline => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(status) => panic!("the shares never came back: {status:?}"),
        }
    }
    drop(other);
    node.stop().await;
}
