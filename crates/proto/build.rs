//! Generates the query and meta services' messages and tonic stubs from `proto/` with a
//! vendored `protoc`, so a fresh machine needs no protobuf compiler. The file descriptor set
//! is kept for gRPC reflection.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/trawl/query/v1/query.proto",
        "proto/trawl/meta/v1/meta.proto",
        "proto/logproto/push.proto",
        "proto/vendor/metrics.proto",
        "proto/vendor/metrics_v3.proto",
        "proto/vendor/trace/trace.proto",
        "proto/vendor/trace/idx.proto",
        "proto/pprof/profile.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .file_descriptor_set_path(out.join("trawl_descriptor.bin"))
        .compile_with_config(config, &protos, &["proto"])?;
    // Calls between query nodes: not in the descriptor set, so reflection does not list them.
    let internal = "proto/trawl/worker/v1/scans.proto";
    println!("cargo:rerun-if-changed={internal}");
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_with_config(config, &[internal], &["proto"])?;
    Ok(())
}
