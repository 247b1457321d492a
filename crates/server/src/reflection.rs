//! gRPC server reflection (`grpc.reflection.v1` and the older `v1alpha` that
//! some clients still ask first), so `grpcurl` and other generic clients can
//! list, describe and call the public services without the `.proto` files.
//! It describes only what clients may call: the public `leasehold.v1`
//! services ([`leasehold_proto::PUBLIC_FILE_DESCRIPTOR_SET`], built without
//! raft.proto, so the internal `RaftTransport` is neither listed nor found by
//! symbol), `grpc.health.v1.Health`, and reflection itself.

use crate::ServeError;
use tonic_reflection::server::v1::{ServerReflection, ServerReflectionServer};
use tonic_reflection::server::v1alpha;
use tonic_reflection::server::Builder;

/// The builder both versions share: the public descriptor sets.
fn builder() -> Builder<'static> {
    Builder::configure()
        .register_encoded_file_descriptor_set(leasehold_proto::PUBLIC_FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
}

/// The `grpc.reflection.v1` service.
pub(crate) fn v1() -> Result<ServerReflectionServer<impl ServerReflection>, ServeError> {
    builder().build_v1().map_err(invalid)
}

/// The `grpc.reflection.v1alpha` service.
pub(crate) fn v1alpha(
) -> Result<v1alpha::ServerReflectionServer<impl v1alpha::ServerReflection>, ServeError> {
    builder().build_v1alpha().map_err(invalid)
}

/// The descriptor sets are compiled into the binary, so this is a build
/// defect, reported rather than served half-described.
fn invalid(error: tonic_reflection::server::Error) -> ServeError {
    ServeError::Transport(format!(
        "the compiled-in protocol descriptors are invalid for reflection: {error}"
    ))
}
