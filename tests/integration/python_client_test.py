#!/usr/bin/python3
"""The Python client (clients/python) against a real quantd on port 0.

Run by ctest with Debian's /usr/bin/python3 (python3-grpcio), PYTHONPATH
holding <build>/python (generated stubs) and clients/python.
"""

import hashlib
import json
import os
import signal
import subprocess
import unittest


from quantd import QuantdError
from quantd.grpc_client import GrpcClient as Client
from quantd.v1 import job_pb2
from quantd.v1 import quantization_service_pb2 as svc_pb2


def start_quantd(*args):
    binary = os.path.join(os.environ["QUANTD_BINARY_DIR"], "server", "quantd")
    if not os.path.exists(binary):
        raise RuntimeError(f"{binary} not built")
    proc = subprocess.Popen(
        [binary, "--port=0", "--metrics_port=-1", *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:  # blocks on the pipe, not on a timer
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("msg") == "listening":
            return proc, int(entry["port"])
    proc.wait()
    raise RuntimeError("quantd exited before listening")


def canonical_bytes(result):
    """The result's bytes without its one wall-clock field (per-stage timings
    in report.json and report.html), serialized deterministically (map fields
    in key order). Everything else must match byte for byte."""
    result = job_pb2.QuantizeResult.FromString(result.SerializeToString())
    report = json.loads(result.report_json)
    report.pop("timings_seconds", None)
    result.report_json = json.dumps(report, sort_keys=True)
    html = result.report_html
    begin = html.find("<h2>Timings</h2>")
    if begin >= 0:
        end = html.find("</table>", begin)
        html = html[:begin] + (html[end + len("</table>"):] if end >= 0 else "")
    result.report_html = html
    return result.SerializeToString(deterministic=True)


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, port = start_quantd("--workers=2")
        cls.client = Client(f"127.0.0.1:{port}")
        cls.info = cls.client.server_info()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.proc.send_signal(signal.SIGTERM)
        cls.proc.stdout.read()
        assert cls.proc.wait() == 0

    def test_health_is_serving(self):
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("quantd.v1.QuantizationService"),
                         "SERVING")

    def test_server_info_reports_workers(self):
        self.assertEqual(self.info.workers, 2)

    def test_list_tpcs_includes_imx500(self):
        ids = [t.id for t in self.client.list_tpcs()]
        self.assertIn("imx500@4.0", ids)
        self.assertIn("tflite@1.0", ids)

    def test_get_tpc_returns_mct_json(self):
        tpc = self.client.get_tpc("imx500@4.0")
        self.assertEqual(tpc.summary.id, "imx500@4.0")
        parsed = json.loads(tpc.mct_json)
        self.assertEqual(len(parsed["operator_set"]),
                         len(tpc.tpc.operator_set))

    def test_unknown_tpc_is_not_found_listing_known(self):
        with self.assertRaises(QuantdError) as ctx:
            self.client.get_tpc("nosuch@1.0")
        self.assertEqual(ctx.exception.code, "NOT_FOUND")
        self.assertIn("imx500@4.0", ctx.exception.details)

    def test_malformed_request_names_the_field(self):
        with self.assertRaises(QuantdError) as ctx:
            list(self.client.events(job_pb2.QuantizeRequest()))
        self.assertEqual(ctx.exception.code, "INVALID_ARGUMENT")
        self.assertIn("onnx_model", ctx.exception.details)

    def test_upload_is_content_addressed(self):
        content = os.urandom(3000)
        first = self.client.upload(svc_pb2.UPLOAD_KIND_MODEL, content,
                                   chunk_bytes=1024)
        self.assertEqual(first.sha256, hashlib.sha256(content).hexdigest())
        self.assertFalse(first.already_present)
        again = self.client.upload(svc_pb2.UPLOAD_KIND_MODEL, content)
        self.assertTrue(again.already_present)

    def test_full_job_matches_cpp_client(self):
        if not self.info.quantize_available:
            self.skipTest("quantd built without the pipeline")
        request = job_pb2.QuantizeRequest()
        with open(os.environ["QUANTD_PY_JOB_REQUEST"], "rb") as f:
            request.ParseFromString(f.read())
        events = list(self.client.events(request, timeout=300))
        self.assertTrue(events[0].HasField("accepted"))
        self.assertTrue(events[-1].HasField("result"))
        # Oracle: the result the in-process pipeline gave for the same
        # request (written by the C++ jobs test helper).
        expected = job_pb2.QuantizeResult()
        with open(os.environ["QUANTD_PY_JOB_RESULT"], "rb") as f:
            expected.ParseFromString(f.read())
        self.assertEqual(canonical_bytes(events[-1].result),
                         canonical_bytes(expected))


if __name__ == "__main__":
    unittest.main()
