//! Compiles `proto/leasehold/v1/*.proto` with protox (pure Rust), so building
//! Leasehold needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "../../proto";
    let files = [
        "lease", "lock", "cluster", "raft", "common", "fenced", "events",
    ]
    .map(|name| format!("{root}/leasehold/v1/{name}.proto"));
    for file in &files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, [root])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
