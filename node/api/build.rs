//! Generates every message type of node/proto in one pass and, with the `client`
//! feature, the gRPC client of every service (the servers are runnel-server's).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "../proto";
    let files = [
        "../proto/runnel/v1/rwset.proto",
        "../proto/runnel/v1/transaction.proto",
        "../proto/runnel/v1/block.proto",
        "../proto/runnel/v1/api.proto",
        "../proto/runnel/v1/ordering.proto",
        "../proto/runnel/v1/cluster.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    config.type_attribute(".runnel.v1.Version", "#[derive(PartialOrd, Ord)]");
    // Raft's entries carry transactions: shared, not copied, from the message decoded.
    config.bytes([".runnel.v1.RaftEntry.data", ".runnel.v1.RaftSnapshot.data"]);
    if std::env::var_os("CARGO_FEATURE_CLIENT").is_some() {
        tonic_prost_build::configure()
            .build_server(false)
            .build_client(true)
            .emit_rerun_if_changed(false)
            .compile_with_config(config, &files, &[proto_root])?;
    } else {
        config.compile_protos(&files, &[proto_root])?;
    }
    Ok(())
}
