"""quantd.Client: the quantd.quantize call on a quantd server."""

from quantd import _request
from quantd.errors import QuantdError
from quantd.grpc_client import GrpcClient
from quantd.progress import Progress
from quantd.result import Result


def _read(path):
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def _read_token(path):
    """The first non-empty line of a token file (the server's format)."""
    for line in _read(path).decode().splitlines():
        if line.strip():
            return line.strip()
    raise QuantdError("INVALID_ARGUMENT", f"token_file: {path} is empty")


class Client(GrpcClient):
    """A quantd server: the same quantize() as quantd.quantize, remote.

    target: "host:port" (or "dns:///name:port": round robin over replicas).
    token_file: a file whose first line is the bearer token (quantd
        --auth_token_file); token: the token itself.
    tls_ca: CA certificate (PEM file) to check the server with; tls_cert
        and tls_key: this client's certificate and key for mutual TLS.
    server_name: the name to check the certificate against, if not the
        target's host. timeout: seconds for calls other than quantize().
    Also: health(), list_tpcs(), get_tpc(name), server_info(), upload(),
    events(request) (every JobEvent of a job) and close() / `with`.
    """

    def __init__(self, target, token_file=None, tls_ca=None, tls_cert=None,
                 tls_key=None, *, token=None, server_name=None,
                 timeout=30.0, **options):
        if token_file is not None:
            token = _read_token(token_file)
        if (tls_cert is None) != (tls_key is None):
            raise QuantdError("INVALID_ARGUMENT",
                              "tls_cert and tls_key: give both or neither")
        super().__init__(target, use_tls=tls_ca is not None,
                         root_certificates=_read(tls_ca),
                         certificate_chain=_read(tls_cert),
                         private_key=_read(tls_key), token=token,
                         server_name=server_name, timeout=timeout, **options)

    def quantize(self, model, calibration, *, tpc, evaluation=None,
                 progress=None, timeout=None, request_id="", **options):
        """quantd.quantize on the server; returns a quantd.Result.

        Same arguments and job options as quantd.quantize; progress is
        called with a quantd.Progress per progress event, timeout (seconds)
        bounds the whole job. Raises quantd.QuantdError with the server's
        status code.
        """
        request = _request.build_request(
            model, calibration, tpc=tpc, evaluation=evaluation,
            request_id=request_id, **options)
        warnings, result = [], None
        for event in self.events(request, timeout=timeout):
            kind = event.WhichOneof("event")
            if kind == "progress" and progress is not None:
                p = event.progress
                progress(Progress(p.stage, p.fraction, p.message))
            elif kind == "warning":
                warnings.append(event.warning.message)
            elif kind == "result":
                result = event.result
        if result is None:
            raise QuantdError("INTERNAL", "the job's stream ended without a "
                              "result")
        return Result(result, warnings)
