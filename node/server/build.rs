//! Generates the API's, the ordering service's and the ordering cluster's gRPC server and client code from
//! node/proto. Their messages are runnel-api's (runnel_api::proto), generated there.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "../proto";
    let files = [
        "../proto/runnel/v1/api.proto",
        "../proto/runnel/v1/ordering.proto",
        "../proto/runnel/v1/cluster.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .emit_rerun_if_changed(false)
        // Undecodable requests are the caller's error: src/codec.rs.
        .codec_path("crate::codec::ProtoCodec")
        .extern_path(".runnel.v1", "::runnel_ledger::proto")
        .compile_with_config(config, &files, &[proto_root])?;
    Ok(())
}
