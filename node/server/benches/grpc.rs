//! End-to-end figures through the node's API: a `Ledger` served over gRPC on loopback,
//! clients that sign their own proposals and transactions (as applications do) and call
//! Endorse, then Submit waiting for durability in the same call, over real HTTP/2
//! connections.
//!
//! - latency at 1 client (closed loop), submit to durable status;
//! - sustained throughput with many closed-loop clients.
//!
//! Run: `./scripts/bench.sh grpc` or
//! `cargo bench -p runnel-server --bench grpc -- [latency-secs] [throughput-secs] [clients]
//! [connections]` (defaults 10, 30, 64, and one connection per 16 clients, shared as an
//! application's threads share its channel; give as many as clients for one each).

/// The allocator the `runnel` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use prost::Message;
use runnel_ledger::identity::{NetworkKeys, Role, Signer};
use runnel_ledger::ledger::{Ledger, LedgerConfig};
use runnel_ledger::proto::{EndorseRequest, SubmitRequest, TxPhase, ValidationCode};
use runnel_ledger::tx;
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::{ApiConfig, ReadAccess, Server};
use tonic::transport::Channel;

/// Clients that share a connection unless the fourth argument says otherwise (as
/// `runnel bench` does).
const CLIENTS_PER_CONNECTION: usize = 16;

/// Value written by every transaction: 1 KB.
const VALUE_BYTES: usize = 1024;

/// One kv insert through the API: endorse, sign, submit, wait until durable.
async fn put(
    gateway: &mut GatewayClient<Channel>,
    signer: &Signer,
    channel: &str,
    key: String,
    value: &[u8],
) {
    let proposal = tx::new_proposal(
        channel,
        "kv",
        "put",
        vec![key.into_bytes(), value.to_vec()],
        signer,
    );
    let endorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(tx::sign_proposal(signer, &proposal)),
        })
        .await
        .expect("endorsed")
        .into_inner();
    let signed = tx::sign_transaction_bytes(signer, endorsed.transaction);
    // Submit waits for durability itself: one round trip instead of Submit + CommitStatus.
    let status = gateway
        .submit(SubmitRequest {
            transaction: signed.encode_to_vec(),
            wait_for: TxPhase::Committed as i32,
        })
        .await
        .expect("submitted")
        .into_inner()
        .status
        .expect("status");
    assert_eq!(status.code, ValidationCode::Valid as i32);
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let latency_secs = args.first().copied().unwrap_or(10);
    let throughput_secs = args.get(1).copied().unwrap_or(30);
    let clients = args.get(2).copied().unwrap_or(64) as usize;
    let connections = args
        .get(3)
        .map_or(clients.div_ceil(CLIENTS_PER_CONNECTION), |&n| n as usize)
        .clamp(1, clients.max(1));

    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = LedgerConfig::default();
    config.runtime.instances_max = 256;
    let ledger = Arc::new(Ledger::open(dir.path(), config).expect("ledger opens"));
    let kv = runnel_wasm_build::wasm("kv").expect("kv builds");
    ledger.deploy("kv", "1", &kv, "").expect("kv deploys");
    let signer = NetworkKeys::load(dir.path())
        .expect("identities")
        .signer("Org1", Role::Client)
        .expect("a client")
        .clone();
    let channel_name = ledger.channel().to_string();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = runtime
        .block_on(Server::bind(
            ledger.clone(),
            ApiConfig {
                listen: "127.0.0.1:0".parse().expect("address"),
                read_access: ReadAccess::Open,
                ..ApiConfig::default()
            },
        ))
        .expect("binds");
    let url = format!("http://{}", server.local_addr());
    let serving = runtime.spawn(server.serve(async {
        let _ = stopped.await;
    }));
    let connect = move || {
        let url = url.clone();
        async move {
            GatewayClient::new(
                Channel::from_shared(url)
                    .expect("url")
                    .connect()
                    .await
                    .expect("connects"),
            )
        }
    };
    let value = vec![b'v'; VALUE_BYTES];

    println!("== gRPC on loopback, 1 client, submit -> durable status (kv insert, 1 KB value)");
    let latencies = runtime.block_on(async {
        let mut gateway = connect().await;
        // Warm up: connection, compile caches, sled trees.
        for i in 0..200 {
            put(
                &mut gateway,
                &signer,
                &channel_name,
                format!("warm-{i}"),
                &value,
            )
            .await;
        }
        let mut latencies = Vec::new();
        let start = Instant::now();
        let mut i = 0u64;
        while start.elapsed() < Duration::from_secs(latency_secs) {
            let t = Instant::now();
            put(
                &mut gateway,
                &signer,
                &channel_name,
                format!("one-{i}"),
                &value,
            )
            .await;
            latencies.push(t.elapsed());
            i += 1;
        }
        latencies
    });
    runnel_testing::bench::report("1 client", latencies);

    if throughput_secs > 0 {
        println!(
            "== gRPC, {clients} closed-loop clients over {connections} connections, \
             {throughput_secs} s"
        );
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let shared: Vec<_> = runtime.block_on(async {
            let mut shared = Vec::with_capacity(connections);
            for _ in 0..connections {
                shared.push(connect().await);
            }
            shared
        });
        let tasks: Vec<_> = (0..clients)
            .map(|c| {
                let (done, stop, signer, value) =
                    (done.clone(), stop.clone(), signer.clone(), value.clone());
                let channel_name = channel_name.clone();
                let mut gateway = shared[c % connections].clone();
                runtime.spawn(async move {
                    let mut latencies = Vec::new();
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        put(
                            &mut gateway,
                            &signer,
                            &channel_name,
                            format!("c{c}-{i}"),
                            &value,
                        )
                        .await;
                        latencies.push(t.elapsed());
                        done.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                    latencies
                })
            })
            .collect();
        let (elapsed, total) = runnel_testing::bench::watch(throughput_secs, &done);
        stop.store(true, Ordering::Relaxed);
        let latencies: Vec<Duration> = runtime.block_on(async {
            let mut all = Vec::new();
            for task in tasks {
                all.extend(task.await.expect("client"));
            }
            all
        });
        println!(
            "committed {total} tx in {:.1} s: {:.0} tx/s",
            elapsed.as_secs_f64(),
            total as f64 / elapsed.as_secs_f64()
        );
        runnel_testing::bench::report(
            &format!("latency under load ({clients} clients)"),
            latencies,
        );
    }
    let _ = stop_server.send(());
    let _ = runtime.block_on(serving);
    ledger.close();
}
