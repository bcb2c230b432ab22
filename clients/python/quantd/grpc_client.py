"""quantd's gRPC calls: jobs as event streams, uploads, TPCs, health.

quantd.Client (remote.py) adds the quantize() of quantd.quantize on top.
"""

import hashlib

import grpc

from quantd._health import health_pb2, health_pb2_grpc
from quantd._request import sample_from_arrays
from quantd.errors import QuantdError, from_rpc_error
from quantd.v1 import job_pb2, quantization_service_pb2 as svc_pb2
from quantd.v1 import quantization_service_pb2_grpc as svc_grpc
from quantd.v1 import tensor_pb2

SERVICE_NAME = "quantd.v1.QuantizationService"
_MIB = 1 << 20


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


class GrpcClient:
    """A connection to quantd (one channel, reused by every call).

    target: "host:port" or "dns:///name:port" (round_robin over replicas).
    TLS: pass root_certificates (PEM bytes; None = system roots with
    use_tls=True) and, for mutual TLS, private_key and certificate_chain.
    token: bearer token sent as `authorization: Bearer <token>`.
    """

    def __init__(self, target, *, use_tls=False, root_certificates=None,
                 private_key=None, certificate_chain=None, token=None,
                 server_name=None, max_message_bytes=64 * _MIB,
                 timeout=30.0):
        options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.keepalive_time_ms", 30000),
            ("grpc.keepalive_timeout_ms", 10000),
            ("grpc.lb_policy_name", "round_robin"),
        ]
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        if use_tls or root_certificates or certificate_chain:
            creds = grpc.ssl_channel_credentials(
                root_certificates=root_certificates,
                private_key=private_key,
                certificate_chain=certificate_chain)
            self._channel = grpc.secure_channel(target, creds, options)
        else:
            self._channel = grpc.insecure_channel(target, options)
        self._stub = svc_grpc.QuantizationServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._max_message_bytes = max_message_bytes
        self.timeout = timeout

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- jobs -------------------------------------------------------------

    def events(self, request=None, *, onnx_model=None, tpc=None,
               samples=None, request_id="", timeout=None,
               inline_limit_bytes=None, export=None):
        """Runs a job and yields its JobEvents in order.

        The first event is `accepted`; the last carries `result` (when the
        server sent the result in chunks, they are yielded as they come and
        then one event with the reassembled, sha256-verified result).
        Pass a QuantizeRequest, or onnx_model (bytes), tpc ("name@version")
        and samples (Sample messages or {input name: numpy array} dicts);
        export lists the ONNX formats ("qdq", "mctq"; default QDQ only).
        Raises QuantdError on failure. Models or samples too large for one
        message are sent through UploadModel first.
        """
        if request is None:
            request = job_pb2.QuantizeRequest(request_id=request_id)
            if onnx_model is not None:
                request.onnx_model = onnx_model
            if tpc is not None:
                request.tpc.name = tpc
            for s in samples or []:
                request.calibration_samples.append(
                    s if isinstance(s, tensor_pb2.Sample)
                    else sample_from_arrays(s))
            for name in export or []:
                request.export_options.formats.append(
                    job_pb2.ExportFormat.Value(
                        "EXPORT_FORMAT_" + name.strip().upper()))
        else:
            copy = job_pb2.QuantizeRequest()
            copy.CopyFrom(request)
            request = copy
        limit = inline_limit_bytes or (self._max_message_bytes - _MIB)
        if request.ByteSize() > limit and request.onnx_model:
            receipt = self.upload(svc_pb2.UPLOAD_KIND_MODEL,
                                  request.onnx_model, timeout=timeout)
            request.ClearField("onnx_model")
            request.model_ref = receipt.sha256
        if request.ByteSize() > limit and len(request.calibration_samples):
            sample_set = svc_pb2.SampleSet(
                samples=list(request.calibration_samples))
            receipt = self.upload(svc_pb2.UPLOAD_KIND_SAMPLES,
                                  sample_set.SerializeToString(),
                                  timeout=timeout)
            del request.calibration_samples[:]
            request.samples_ref = receipt.sha256

        stream = self._stub.Quantize(request, timeout=timeout,
                                     metadata=self._metadata)
        chunks, digest, total, last = [], None, 0, None
        try:
            for event in stream:
                if event.HasField("result_chunk"):
                    c = event.result_chunk
                    if c.offset != sum(len(x) for x in chunks):
                        raise QuantdError("DATA_LOSS",
                                          "result_chunk.offset out of order")
                    digest, total = c.sha256, c.total_size
                    chunks.append(c.data)
                last = event
                yield event
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        if chunks:
            data = b"".join(chunks)
            if len(data) != total or _sha256(data) != digest:
                raise QuantdError("DATA_LOSS",
                                  "result chunks do not match size/sha256")
            final = job_pb2.JobEvent(job_id=last.job_id,
                                     request_id=last.request_id)
            final.result.ParseFromString(data)
            yield final

    def quantize_result(self, request=None, on_event=None, **kwargs):
        """Runs a job and returns its QuantizeResult."""
        result = None
        for event in self.events(request, **kwargs):
            if on_event:
                on_event(event)
            if event.HasField("result"):
                result = event.result
        if result is None:
            raise QuantdError("INTERNAL",
                              "stream ended without a result")
        return result

    def upload(self, kind, content, *, chunk_bytes=None, timeout=None):
        """Uploads bytes in chunks; returns the UploadReceipt."""
        # Below 1 MiB: any server (--max_message_mb >= 1) accepts a chunk.
        chunk_bytes = chunk_bytes or max(
            1024, min(self._max_message_bytes - 65536, _MIB - 65536))
        digest = _sha256(content)

        def chunks():
            for offset in range(0, max(len(content), 1), chunk_bytes):
                chunk = svc_pb2.UploadChunk(
                    offset=offset, data=content[offset:offset + chunk_bytes])
                if offset == 0:
                    chunk.kind = kind
                    chunk.total_size = len(content)
                    chunk.sha256 = digest
                yield chunk

        return self._call(self._stub.UploadModel, chunks(), timeout)

    # -- registry and server ------------------------------------------------

    def list_tpcs(self):
        return list(self._call(self._stub.ListTpcs,
                               svc_pb2.ListTpcsRequest()).tpcs)

    def get_tpc(self, name):
        return self._call(self._stub.GetTpc, svc_pb2.GetTpcRequest(name=name))

    def validate_tpc(self, tpc=None, mct_json=None):
        request = svc_pb2.ValidateTpcRequest()
        if mct_json is not None:
            request.mct_json = mct_json
        else:
            request.tpc.CopyFrom(tpc)
        return self._call(self._stub.ValidateTpc, request)

    def server_info(self):
        return self._call(self._stub.GetServerInfo,
                          svc_pb2.GetServerInfoRequest())

    def health(self, service=""):
        """"SERVING", "NOT_SERVING", ... for `service` ("" = the server)."""
        response = self._call(self._health.Check,
                              health_pb2.HealthCheckRequest(service=service))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(
            response.status)

    def _call(self, method, request, timeout=None):
        try:
            return method(request, timeout=timeout or self.timeout,
                          metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
