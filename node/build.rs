//! Generates the transaction, block and API types, and the API's gRPC service and client
//! code, from node/proto in one pass. The read/write-set messages they embed are
//! generated once, in runnel-runtime, and referred to from here.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "proto";
    let files = [
        "proto/runnel/v1/transaction.proto",
        "proto/runnel/v1/block.proto",
        "proto/runnel/v1/api.proto",
        "proto/runnel/v1/ordering.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rerun-if-changed=proto/runnel/v1/rwset.proto");
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let mut builder = tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .emit_rerun_if_changed(false)
        // Undecodable requests are the caller's error: src/api/codec.rs.
        .codec_path("crate::api::codec::ProtoCodec");
    for message in [
        "Version",
        "KvRead",
        "RangeRead",
        "KvWrite",
        "NsRwSet",
        "ContractEvent",
        "SimulationPayload",
    ] {
        builder = builder.extern_path(
            format!(".runnel.v1.{message}"),
            format!("::runnel_runtime::proto::{message}"),
        );
    }
    builder.compile_with_config(config, &files, &[proto_root])?;
    Ok(())
}
