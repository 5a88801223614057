//! The `Cluster` service, as an attacker who can reach an orderer's port meets it: only a
//! member of the cluster, proven by its orderer certificate over mutual TLS, may step the
//! orderer's Raft, and only with messages from its own id to this orderer's, of types one
//! Raft node sends another.

use std::sync::Arc;
use std::time::Duration;

use raft::eraftpb::{Message, MessageType};
use runnel_ledger::identity::{Role, TLS_CA_FILE, TLS_SERVER_CERT_FILE, TLS_SERVER_KEY_FILE};
use runnel_ledger::orderer::{OrderError, Ordered, Orderer, TRANSACTION_BYTES_MAX};
use runnel_orderer::cluster::{ClusterService, Members, STEP_MESSAGES_MAX};
use runnel_orderer::ordering::OrderingServerHandle;
use runnel_orderer::raft::{RaftOrderer, RaftSettings, Transport, wire};
use runnel_server::TlsConfig;
use runnel_server::proto::StepRequest;
use runnel_server::proto::cluster_client::ClusterClient;
use runnel_testing::orderer::{Net, PATIENCE, streaming};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

/// A cluster of one reaches no one.
struct Alone;

impl Transport for Alone {
    fn send(&self, _: Vec<Message>) {}

    fn forward(&self, _: u64, transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        transactions
            .iter()
            .map(|_| Err(OrderError::Unavailable("alone".into())))
            .collect()
    }
}

/// A `Step` stream over `channel`: what is sent on the returned sender goes as its
/// requests; the task ends with the call's answer.
fn open_stream(
    channel: Channel,
) -> (
    tokio::sync::mpsc::Sender<StepRequest>,
    tokio::task::JoinHandle<
        Result<tonic::Response<runnel_server::proto::StepResponse>, tonic::Status>,
    >,
) {
    let (requests, stream) = tokio::sync::mpsc::channel(4);
    let mut client = ClusterClient::new(channel);
    let call = tokio::spawn(async move {
        client
            .step(tokio_stream::wrappers::ReceiverStream::new(stream))
            .await
    });
    (requests, call)
}

fn heartbeat(from: u64, to: u64) -> runnel_server::proto::RaftMessage {
    let mut message = Message::default();
    message.set_msg_type(MessageType::MsgHeartbeat);
    message.from = from;
    message.to = to;
    wire::to_wire(&message)
}

#[test]
fn only_the_cluster_s_orderers_may_step_its_raft_and_only_as_themselves() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    net.ids.write(dir.path(), "main").unwrap();
    let identities = dir.path().join("identities");
    let file = |org: &str, name: &str| identities.join(org).join(name);
    // This orderer is member 1; Org2's orderer is member 2.
    let own = net.signer("Org1", Role::Orderer);
    let other = net.signer("Org2", Role::Orderer);
    let name = |signer: &runnel_ledger::identity::Signer| {
        net.msp.identify(signer.cert_der()).unwrap().name
    };
    let members = Members::new([
        (("Org1".to_string(), name(&own)), 1),
        (("Org2".to_string(), name(&other)), 2),
    ]);
    let mut settings = RaftSettings::new(1, vec![1, 2]);
    settings.tick = Duration::from_millis(20);
    let orderer = Arc::new(
        RaftOrderer::open(
            &dir.path().join("orderer"),
            streaming(10, PATIENCE),
            net.msp.clone(),
            own,
            settings,
            Arc::new(Alone),
        )
        .unwrap(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(OrderingServerHandle::bind(
            orderer.clone(),
            "127.0.0.1:0".parse().unwrap(),
            TRANSACTION_BYTES_MAX,
        ))
        .unwrap()
        .peers_only(net.msp.clone())
        .with_cluster(ClusterService::new(
            orderer.clone(),
            members,
            net.msp.clone(),
        ));
    let url = format!("https://{}", server.local_addr());
    let tls = TlsConfig::new(
        file("Org1", TLS_SERVER_CERT_FILE),
        file("Org1", TLS_SERVER_KEY_FILE),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = runtime.spawn(async move {
        server
            .serve(Some(&tls), async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    let ca = std::fs::read(file("Org1", TLS_CA_FILE)).unwrap();
    let step = |client: Option<(&str, &str)>, messages: Vec<runnel_server::proto::RaftMessage>| {
        let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&ca));
        if let Some((org, name)) = client {
            config = config.identity(Identity::from_pem(
                std::fs::read(file(org, &format!("{name}.pem"))).unwrap(),
                std::fs::read(file(org, &format!("{name}.key"))).unwrap(),
            ));
        }
        let url = url.clone();
        runtime.block_on(async move {
            let channel = Channel::from_shared(url)
                .unwrap()
                .tls_config(config)
                .unwrap()
                .connect()
                .await
                .unwrap();
            ClusterClient::new(channel)
                .max_encoding_message_size(64 << 20)
                .step(tokio_stream::iter([StepRequest { messages }]))
                .await
                .map(|_| ())
        })
    };
    let member_channel = || {
        let config = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&ca))
            .identity(Identity::from_pem(
                std::fs::read(file("Org2", "orderer.pem")).unwrap(),
                std::fs::read(file("Org2", "orderer.key")).unwrap(),
            ));
        let url = url.clone();
        async move {
            Channel::from_shared(url)
                .unwrap()
                .tls_config(config)
                .unwrap()
                .connect()
                .await
                .unwrap()
        }
    };
    let refused = |result: Result<(), tonic::Status>, code: tonic::Code, name: &str| {
        let status = result.expect_err("refused");
        assert_eq!(status.code(), code, "{status:?}");
        let got = status
            .metadata()
            .get("runnel-error-code")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert_eq!(got, name, "{status:?}");
    };

    // No certificate, a client's, a peer's: not members.
    refused(
        step(None, vec![heartbeat(2, 1)]),
        tonic::Code::Unauthenticated,
        "IDENTITY_REQUIRED",
    );
    refused(
        step(Some(("Org2", "client")), vec![heartbeat(2, 1)]),
        tonic::Code::PermissionDenied,
        "ACCESS_DENIED",
    );
    refused(
        step(Some(("Org2", "peer")), vec![heartbeat(2, 1)]),
        tonic::Code::PermissionDenied,
        "ACCESS_DENIED",
    );
    // A member speaking for another member, or to another orderer.
    refused(
        step(Some(("Org2", "orderer")), vec![heartbeat(1, 1)]),
        tonic::Code::PermissionDenied,
        "ACCESS_DENIED",
    );
    refused(
        step(Some(("Org2", "orderer")), vec![heartbeat(2, 3)]),
        tonic::Code::PermissionDenied,
        "ACCESS_DENIED",
    );
    // Types Raft never sends between nodes, or none at all.
    let mut propose = heartbeat(2, 1);
    propose.msg_type = MessageType::MsgPropose as i32;
    let mut unknown = heartbeat(2, 1);
    unknown.msg_type = 77;
    for message in [propose, unknown] {
        refused(
            step(Some(("Org2", "orderer")), vec![message]),
            tonic::Code::InvalidArgument,
            "BAD_REQUEST",
        );
    }
    refused(
        step(
            Some(("Org2", "orderer")),
            vec![heartbeat(2, 1); STEP_MESSAGES_MAX + 1],
        ),
        tonic::Code::InvalidArgument,
        "BAD_REQUEST",
    );
    // The member as itself is heard, and the orderer still works.
    step(Some(("Org2", "orderer")), vec![heartbeat(2, 1)]).expect("a member's own message");
    assert!(orderer.failure().is_none());

    // A stream is checked request by request: one forged request after a good one ends it.
    let forged = runtime.block_on(async {
        let (requests, call) = open_stream(member_channel().await);
        for messages in [vec![heartbeat(2, 1)], vec![heartbeat(3, 1)]] {
            requests.send(StepRequest { messages }).await.unwrap();
        }
        let answer = call.await.unwrap().map(|_| ());
        drop(requests);
        answer
    });
    refused(forged, tonic::Code::PermissionDenied, "ACCESS_DENIED");

    // A member's stream stays open between requests; the orderer stopping ends it, so
    // that it stops at once.
    let (requests, open) = runtime.block_on(async {
        let (requests, open) = open_stream(member_channel().await);
        requests
            .send(StepRequest {
                messages: vec![heartbeat(2, 1)],
            })
            .await
            .unwrap();
        (requests, open)
    });
    let _ = stop.send(());
    runtime
        .block_on(async { tokio::time::timeout(PATIENCE, serving).await })
        .expect("the server stops with a member's stream open")
        .unwrap();
    assert!(runtime.block_on(open).unwrap().is_err(), "the stream ended");
    drop(requests);
}
