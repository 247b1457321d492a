"""A foreign gRPC client against a real Leasehold server, as another
language's user would meet it: no generated Leasehold code, only PyPI's
grpcio, grpcio-status, grpcio-health-checking and grpcio-reflection.

Usage: interop.py HOST:PORT (run by crates/cli/tests/t160_grpc_interop.rs;
the packages are in crates/cli/tests/python/requirements.txt).

1. Reflection lists the public services (and health) and not the internal
   RaftTransport, in v1alpha and in v1; the Leasehold messages are built at
   run time from the descriptors reflection serves.
2. Real errors (LeaseNotFound, Busy, InvalidArgument) are read with
   `grpc_status.rpc_status.from_call`: a google.rpc.Status with the call's
   code and message, an ErrorInfo with the reason, domain and fields, and
   the leasehold.v1.ErrorDetail packed as Any.
3. grpc.health.v1.Health answers SERVING for the server and a public service.

Prints one "ok:" line per check and a last "interop: N checks passed" line;
any failed check raises (exit status 1, with the traceback on stderr).
"""

import sys

import grpc
from google.protobuf import descriptor_pool, message_factory
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from grpc_status import rpc_status

CALL_TIMEOUT_S = 10
DOMAIN = "leasehold.v1"
ERROR_DETAIL_TYPE_URL = "type.googleapis.com/leasehold.v1.ErrorDetail"
PUBLIC_SERVICES = {
    "leasehold.v1.Lease",
    "leasehold.v1.Lock",
    "leasehold.v1.Cluster",
    "leasehold.v1.Watch",
    "leasehold.v1.FencedStore",
    "grpc.health.v1.Health",
}
INTERNAL_SERVICE = "leasehold.v1.RaftTransport"

checks = 0


def ok(what):
    global checks
    checks += 1
    print(f"ok: {what}", flush=True)


class Leasehold:
    """Generic calls to the server, with message classes from reflection."""

    def __init__(self, channel):
        self.channel = channel
        self.database = ProtoReflectionDescriptorDatabase(channel)
        self.pool = descriptor_pool.DescriptorPool(self.database)

    def message(self, name):
        return message_factory.GetMessageClass(
            self.pool.FindMessageTypeByName(f"leasehold.v1.{name}")
        )

    def call(self, service, method, request):
        """Calls leasehold.v1.SERVICE/METHOD with the request as given."""
        method_descriptor = self.pool.FindServiceByName(
            f"leasehold.v1.{service}"
        ).FindMethodByName(method)
        reply = message_factory.GetMessageClass(method_descriptor.output_type)
        stub = self.channel.unary_unary(
            f"/leasehold.v1.{service}/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=reply.FromString,
        )
        return stub(request, timeout=CALL_TIMEOUT_S)

    def grant(self, ttl_ms=30_000):
        return self.call("Lease", "Grant", self.message("GrantRequest")(ttl_ms=ttl_ms)).lease

    def acquire(self, lease, name):
        request = self.message("AcquireRequest")(lease=lease, name=name)
        return self.call("Lock", "Acquire", request)


def check_reflection(leasehold):
    listed = set(leasehold.database.get_services())
    assert PUBLIC_SERVICES <= listed, f"v1alpha lists {listed}"
    assert INTERNAL_SERVICE not in listed, f"v1alpha lists {listed}"
    ok(f"reflection v1alpha lists the public services: {sorted(listed)}")

    # Not found either as an error answer (KeyError) or, as tonic-reflection
    # answers, as the stream's status.
    try:
        leasehold.database.FindFileContainingSymbol(INTERNAL_SERVICE)
        raise AssertionError(f"reflection describes {INTERNAL_SERVICE}")
    except KeyError:
        pass
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.NOT_FOUND, f"{error}"
    ok(f"reflection does not describe {INTERNAL_SERVICE}")

    # v1 has the same messages on the wire as v1alpha, under another path.
    stream = leasehold.channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    responses = list(stream(iter([request]), timeout=CALL_TIMEOUT_S))
    listed = {s.name for s in responses[0].list_services_response.service}
    assert PUBLIC_SERVICES <= listed, f"v1 lists {listed}"
    assert INTERNAL_SERVICE not in listed, f"v1 lists {listed}"
    ok(f"reflection v1 lists the public services: {sorted(listed)}")


def expect_error(leasehold, what, call, code, reason, metadata):
    """Runs `call`, which must fail with `code`, and reads its details as
    any gRPC rich-error reader does."""
    try:
        call()
    except grpc.RpcError as error:
        assert error.code() == code, f"{what}: code {error.code()}, wanted {code}"
        status = rpc_status.from_call(error)  # raises if code/message differ
        assert status is not None, f"{what}: no google.rpc.Status in the details"
        assert status.code == error.code().value[0], f"{what}: {status}"
        assert status.message == error.details(), f"{what}: {status}"
        infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
        assert len(infos) == 1, f"{what}: ErrorInfo in {status.details}"
        info = error_details_pb2.ErrorInfo()
        infos[0].Unpack(info)
        assert (info.reason, info.domain) == (reason, DOMAIN), f"{what}: {info}"
        for key, value in metadata.items():
            assert info.metadata.get(key) == value, f"{what}: metadata {key} in {info}"
        packed = [d for d in status.details if d.type_url == ERROR_DETAIL_TYPE_URL]
        assert len(packed) == 1, f"{what}: no ErrorDetail Any in {status.details}"
        detail = leasehold.message("ErrorDetail")()
        packed[0].Unpack(detail)
        assert detail.reason == reason, f"{what}: {detail}"
        assert detail.message == status.message, f"{what}: {detail}"
        trailers = dict(error.trailing_metadata() or ())
        assert trailers.get("leasehold-reason") == reason, f"{what}: {trailers}"
        ok(f"{what}: {code.name}, ErrorInfo {reason} {dict(info.metadata)}, ErrorDetail packed")
        return detail
    raise AssertionError(f"{what}: the call succeeded")


def check_errors(leasehold):
    release = leasehold.message("ReleaseRequest")(lease=987654321, name="interop/a", token=1)
    expect_error(
        leasehold,
        "release under an unknown lease",
        lambda: leasehold.call("Lock", "Release", release),
        grpc.StatusCode.NOT_FOUND,
        "LeaseNotFound",
        {"lease": "987654321"},
    )

    holder = leasehold.grant()
    token = leasehold.acquire(holder, "interop/held").token
    other = leasehold.grant()
    detail = expect_error(
        leasehold,
        "acquire of a held lock without waiting",
        lambda: leasehold.acquire(other, "interop/held"),
        grpc.StatusCode.FAILED_PRECONDITION,
        "Busy",
        {"holder_token": str(token)},
    )
    assert detail.holder_token == token, f"ErrorDetail {detail}, token {token}"

    detail = expect_error(
        leasehold,
        "acquire of an over-long name",
        lambda: leasehold.acquire(holder, "a" * 600),
        grpc.StatusCode.INVALID_ARGUMENT,
        "InvalidArgument",
        {"field": "name", "limit": "NAME_BYTES_MAX"},
    )
    assert (detail.field, detail.limit) == ("name", "NAME_BYTES_MAX"), f"{detail}"


def check_health(channel):
    health = health_pb2_grpc.HealthStub(channel)
    serving = health_pb2.HealthCheckResponse.SERVING
    for service in ["", "leasehold.v1.Lock"]:
        request = health_pb2.HealthCheckRequest(service=service)
        answer = health.Check(request, timeout=CALL_TIMEOUT_S)
        assert answer.status == serving, f"health of {service!r}: {answer}"
        ok(f"health of {service!r} is SERVING")


def main():
    (target,) = sys.argv[1:]
    with grpc.insecure_channel(target) as channel:
        leasehold = Leasehold(channel)
        check_reflection(leasehold)
        check_errors(leasehold)
        check_health(channel)
    print(f"interop: {checks} checks passed", flush=True)


if __name__ == "__main__":
    main()
