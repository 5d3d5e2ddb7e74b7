//! Generates the query service's messages and tonic stubs from `proto/trawl/query/v1/query.proto`
//! with a vendored `protoc`, so a fresh machine needs no protobuf compiler.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/trawl/query/v1/query.proto";
    println!("cargo:rerun-if-changed={proto}");
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_with_config(config, &[proto], &["proto"])?;
    Ok(())
}
