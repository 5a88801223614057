//! Generates the read/write-set types from node/proto, the single source of the API.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "../node/proto";
    let file = "../node/proto/runnel/v1/rwset.proto";
    println!("cargo:rerun-if-changed={file}");
    prost_build::Config::new()
        .protoc_executable(protoc_bin_vendored::protoc_bin_path()?)
        .type_attribute(".runnel.v1.Version", "#[derive(PartialOrd, Ord)]")
        .compile_protos(&[file], &[proto_root])?;
    Ok(())
}
