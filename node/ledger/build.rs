//! Generates the transaction, block, API and ordering message types from node/proto in
//! one pass (messages only: the gRPC services are the server crate's). The read/write-set
//! messages they embed are generated once, in runnel-runtime, and referred to from here.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "../proto";
    let files = [
        "../proto/runnel/v1/transaction.proto",
        "../proto/runnel/v1/block.proto",
        "../proto/runnel/v1/api.proto",
        "../proto/runnel/v1/ordering.proto",
        "../proto/runnel/v1/cluster.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rerun-if-changed=../proto/runnel/v1/rwset.proto");
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    for message in [
        "Version",
        "KvRead",
        "RangeRead",
        "KvWrite",
        "NsRwSet",
        "ContractEvent",
        "SimulationPayload",
    ] {
        config.extern_path(
            format!(".runnel.v1.{message}"),
            format!("::runnel_runtime::proto::{message}"),
        );
    }
    // Raft's entries carry transactions: shared, not copied, from the message decoded.
    config.bytes([".runnel.v1.RaftEntry.data", ".runnel.v1.RaftSnapshot.data"]);
    config.compile_protos(&files, &[proto_root])?;
    Ok(())
}
