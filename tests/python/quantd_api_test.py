#!/usr/bin/python3
"""The quantd Python package: quantd.quantize in-process, quantd.Client
against a real quantd on port 0, and the package as `cmake --install` lays
it out.

Run by ctest (tests/python/CMakeLists.txt) with Debian's /usr/bin/python3,
PYTHONPATH=<build>/clients/python and QUANTD_BINARY_DIR=<build>.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import quantd

TPC = "imx500@4.1"
ONNX_INT4 = 22  # TensorProto.INT4 (ONNX 1.16; Debian's onnx is 1.12)
INPUT = "x"


def make_model():
    """x [1,3,8,8] -> conv1 (3x3, 8 channels) -> Relu -> conv2 (1x1, 4
    channels) -> y. Fixed-seed weights."""
    rng = np.random.default_rng(7)
    w1 = rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    b1 = rng.normal(0, 0.1, (8,)).astype(np.float32)
    w2 = rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32)
    b2 = rng.normal(0, 0.1, (4,)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", [INPUT, "w1", "b1"], ["c1"], name="conv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="conv2"),
    ]
    graph = helper.make_graph(
        nodes, "pyapi",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT,
                                       [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


MODEL = make_model()


def make_bn_model():
    """x [1,3,8,8] -> conv (3x3, 4 channels) -> BatchNormalization -> Relu
    -> y: a model data generation can calibrate without samples."""
    rng = np.random.default_rng(5)
    w = rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)
    bn = [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in (
        ("scale", [0.9, 0.5, 1.1, 0.7]), ("bias", [0.1, -0.2, 0.0, 0.05]),
        ("mean", [0.5, -0.3, 0.2, 0.0]), ("var", [0.3, 1.5, 0.8, 0.5]))]
    nodes = [
        helper.make_node("Conv", [INPUT, "w"], ["c"], name="conv",
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["c", "scale", "bias", "mean", "var"], ["bn"],
                         name="bn"),
        helper.make_node("Relu", ["bn"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "pyapi_bn",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT,
                                       [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(w, "w")] + bn)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


BN_MODEL = make_bn_model()
GENERATED = "3,iterations=4,lr=0.05,seed=2"


def samples(count, seed=1):
    """A generator of calibration samples, {input name: array}."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield {INPUT: rng.normal(0, 1, (1, 3, 8, 8)).astype(np.float32)}


def weight_integers(qdq_bytes, conv_name):
    """The integers of the quantized weights feeding `conv_name` in a QDQ
    model: the initializer behind the DequantizeLinear on its input 1."""
    model = onnx.load_from_string(qdq_bytes)
    graph = model.graph
    conv = next(n for n in graph.node if n.name == conv_name)
    producer = {o: n for n in graph.node for o in n.output}
    dq = producer[conv.input[1]]
    assert dq.op_type == "DequantizeLinear", dq.op_type
    init = next(i for i in graph.initializer if i.name == dq.input[0])
    if init.data_type != ONNX_INT4:
        return numpy_helper.to_array(init)
    # ONNX INT4 (onnx 1.12's numpy_helper predates it): two values a byte,
    # the first in the low nibble, two's complement.
    raw = np.frombuffer(init.raw_data, np.uint8)
    nibbles = np.stack([raw & 0xF, raw >> 4], axis=1).reshape(-1)
    values = nibbles.astype(np.int8)
    values[values >= 8] -= 16
    return values[:int(np.prod(init.dims))].reshape(init.dims)


def layer(report, node):
    return next(l for l in report["layers"] if l["node"] == node)


class InProcessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.events = []
        cls.result = quantd.quantize(
            MODEL, calibration=samples(8), tpc=TPC,
            bits_override={"name:conv1": 4}, threads=2,
            progress=cls.events.append)

    def test_qdq_model_loads_in_onnx(self):
        model = onnx.load_from_string(self.result.qdq_model)
        ops = {n.op_type for n in model.graph.node}
        self.assertIn("QuantizeLinear", ops)
        self.assertIn("DequantizeLinear", ops)

    def test_report_bits_are_what_was_asked(self):
        report = self.result.report
        self.assertEqual(layer(report, "conv1")["weights_bits"], 4)
        self.assertEqual(layer(report, "conv2")["weights_bits"], 8)
        self.assertEqual(report["tpc"], TPC)

    def test_qdq_weights_fit_the_asked_bits(self):
        # Independent of the report: 4-bit signed integers are in [-8, 7];
        # an 8-bit symmetric kernel reaches beyond that.
        w1 = weight_integers(self.result.qdq_model, "conv1").astype(int)
        self.assertEqual(w1.shape, (8, 3, 3, 3))
        w2 = weight_integers(self.result.qdq_model, "conv2").astype(int)
        self.assertGreaterEqual(w1.min(), -8)
        self.assertLessEqual(w1.max(), 7)
        self.assertGreater(np.abs(w2).max(), 8)

    def test_progress_reaches_the_callback_in_stage_order(self):
        stages = [e.stage for e in self.events]
        self.assertIn("calibrate", stages)
        self.assertLess(stages.index("calibrate"), stages.index("export"))
        for e in self.events:
            self.assertIsInstance(e, quantd.Progress)
            self.assertGreaterEqual(e.fraction, 0.0)
            self.assertLessEqual(e.fraction, 1.0)

    def test_save_writes_the_quantctl_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            paths = self.result.save(out)
            self.assertEqual(
                sorted(os.listdir(out)),
                sorted(["model.qdq.onnx", "quantized_graph.pb",
                        "quantized_graph.json", "report.json",
                        "report.html"]))
            self.assertEqual(len(paths), 5)
            with open(os.path.join(out, "model.qdq.onnx"), "rb") as f:
                self.assertEqual(f.read(), self.result.qdq_model)
            with open(os.path.join(out, "report.json")) as f:
                self.assertEqual(json.load(f), self.result.report)
            with open(os.path.join(out, "quantized_graph.pb"), "rb") as f:
                self.assertEqual(
                    type(self.result.quantized_graph).FromString(f.read()),
                    self.result.quantized_graph)

    def test_repr_html_shows_the_report(self):
        page = self.result._repr_html_()
        self.assertIn("<iframe srcdoc=", page)
        self.assertIn(TPC, page)
        self.assertIn("conv1", page)

    def test_mp_weights_fraction_is_met(self):
        r = quantd.quantize(MODEL, calibration=list(samples(4)), tpc=TPC,
                            mp={"weights": 0.75}, threads=1)
        used = r.report["resource_utilization"]["weights_memory_bytes"]
        base = r.report["baseline_8bit"]["weights_memory_bytes"]
        # 8-bit kernels: 8*3*3*3 + 4*8*1*1 = 248 weights of one byte.
        self.assertEqual(base, 248)
        self.assertLessEqual(used, 0.75 * base)


class JobOptionsTest(unittest.TestCase):
    """The keyword arguments are the job options of quantctl and batch
    manifests, from their one table (clients/batch/job_options.h)."""

    def test_keywords_are_quantctls_flags(self):
        quantctl = os.path.join(os.environ["QUANTD_BINARY_DIR"], "clients",
                                "quantctl", "quantctl")
        help_text = subprocess.run(
            [quantctl, "quantize", "--help"], env=plain_env(),
            capture_output=True, text=True).stdout
        keywords = [o[0] for o in quantd.job_options()]
        self.assertIn("keep_float", keywords)
        for keyword in keywords:
            if keyword == "generated_calibration":  # --calib generated:N
                self.assertIn("--calib DIR|generated:N", help_text)
                continue
            self.assertIn("--" + keyword.replace("_", "-"), help_text)

    def test_version_is_quantctls(self):
        quantctl = os.path.join(os.environ["QUANTD_BINARY_DIR"], "clients",
                                "quantctl", "quantctl")
        line = subprocess.run([quantctl, "--version"], env=plain_env(),
                              capture_output=True, text=True).stdout
        self.assertEqual(
            line, "quantctl %s (commit %s)\n" % (quantd.__version__,
                                                  quantd.__commit__))

    def test_non_finite_float_keyword_names_it(self):
        with self.assertRaises(quantd.QuantdError) as ctx:
            quantd.quantize(MODEL, calibration=samples(1), tpc=TPC,
                            target_sqnr=float("nan"))
        self.assertEqual(ctx.exception.code, "INVALID_ARGUMENT")
        self.assertIn("target_sqnr", ctx.exception.message)

    def test_keep_float_leaves_the_node_float(self):
        r = quantd.quantize(MODEL, calibration=samples(2), tpc=TPC,
                            keep_float=["name:conv2"])
        self.assertEqual(layer(r.report, "conv2")["weights_bits"], 0)
        self.assertEqual(layer(r.report, "conv1")["weights_bits"], 8)

    def test_generated_calibration_needs_no_samples(self):
        events = []
        result = quantd.quantize(BN_MODEL, None, tpc=TPC,
                                 generated_calibration=GENERATED,
                                 progress=events.append)
        onnx.checker.check_model(onnx.load_from_string(result.qdq_model))
        stages = [e.stage for e in events]
        self.assertLess(stages.index("generate"), stages.index("calibrate"))

    def test_no_calibration_without_generated_is_a_type_error(self):
        with self.assertRaises(TypeError):
            quantd.quantize(BN_MODEL, None, tpc=TPC)

    def test_unknown_keyword_is_a_type_error(self):
        with self.assertRaises(TypeError) as ctx:
            quantd.quantize(MODEL, calibration=samples(1), tpc=TPC,
                            weight_bits=4)
        self.assertIn("weights_bits", str(ctx.exception))

    def test_bad_value_names_the_keyword(self):
        with self.assertRaises(quantd.QuantdError) as ctx:
            quantd.quantize(MODEL, calibration=samples(1), tpc=TPC,
                            weights_bits=99)
        self.assertEqual(ctx.exception.code, "INVALID_ARGUMENT")
        self.assertIn("weights_bits: '99'", ctx.exception.message)


class InProcessErrorTest(unittest.TestCase):
    def assertInvalid(self, ctx, *fragments):
        self.assertEqual(ctx.exception.code, "INVALID_ARGUMENT")
        for f in fragments:
            self.assertIn(f, ctx.exception.message)

    def test_wrong_input_name_names_the_sample(self):
        bad = [{"nosuch": np.zeros((1, 3, 8, 8), np.float32)}]
        with self.assertRaises(quantd.QuantdError) as ctx:
            quantd.quantize(MODEL, calibration=bad, tpc=TPC)
        self.assertInvalid(ctx, "calibration_samples[0]", "nosuch")

    def test_nan_in_a_sample_names_the_input(self):
        def with_nan():
            yield from samples(2)
            a = np.zeros((1, 3, 8, 8), np.float32)
            a[0, 1, 2, 3] = np.nan
            yield {INPUT: a}

        with self.assertRaises(quantd.QuantdError) as ctx:
            quantd.quantize(MODEL, calibration=with_nan(), tpc=TPC)
        self.assertInvalid(ctx, "calibration_samples[2]", f"'{INPUT}'")

    def test_bad_mp_target_names_the_option(self):
        with self.assertRaises(quantd.QuantdError) as ctx:
            quantd.quantize(MODEL, calibration=samples(1), tpc=TPC,
                            mp={"nosuch": 0.5})
        self.assertInvalid(ctx, "mp", "nosuch")

    def test_unknown_tpc_is_not_found(self):
        with self.assertRaises(quantd.QuantdError) as ctx:
            quantd.quantize(MODEL, calibration=samples(1), tpc="nosuch@1.0")
        self.assertEqual(ctx.exception.code, "NOT_FOUND")
        self.assertIn("imx500@4.1", ctx.exception.message)

    def test_callback_exception_cancels_and_propagates(self):
        class Stop(Exception):
            pass

        def progress(p):
            raise Stop(p.stage)

        with self.assertRaises(Stop):
            quantd.quantize(MODEL, calibration=samples(2), tpc=TPC,
                            progress=progress)

    def test_ctrl_c_cancels_the_job(self):
        def progress(p):
            os.kill(os.getpid(), signal.SIGINT)

        with self.assertRaises(KeyboardInterrupt):
            quantd.quantize(MODEL, calibration=samples(2), tpc=TPC,
                            progress=progress)


def plain_env():
    """This environment without the ASan runtime preloaded for the module
    (tests/python/CMakeLists.txt): for programs that are not Python, among
    them quantd, which links its own."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def start_quantd(*args):
    binary = os.path.join(os.environ["QUANTD_BINARY_DIR"], "server", "quantd")
    proc = subprocess.Popen(
        [binary, "--port=0", "--metrics_port=-1", *args], env=plain_env(),
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


def stop_quantd(proc):
    proc.send_signal(signal.SIGTERM)
    proc.stdout.read()
    proc.stdout.close()
    proc.wait()


class RemoteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.token_file = os.path.join(cls.tmp.name, "token")
        with open(cls.token_file, "w") as f:
            f.write("\n  s3cret-token \n")
        cls.proc, port = start_quantd("--workers=1",
                                      f"--auth_token_file={cls.token_file}")
        cls.target = f"127.0.0.1:{port}"
        cls.client = quantd.Client(cls.target, token_file=cls.token_file)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        stop_quantd(cls.proc)
        cls.tmp.cleanup()

    def test_same_bytes_as_in_process_with_progress(self):
        options = dict(tpc=TPC, bits_override={"name:conv1": 4}, threads=2)
        local = quantd.quantize(MODEL, calibration=samples(4), **options)
        events = []
        remote = self.client.quantize(MODEL, calibration=samples(4),
                                      progress=events.append, timeout=300,
                                      **options)
        self.assertEqual(remote.qdq_model, local.qdq_model)
        self.assertEqual(layer(remote.report, "conv1")["weights_bits"], 4)
        # The server paces progress (at most one event per 50 ms): a job
        # this short shows its last stage only.
        self.assertIn("report", [e.stage for e in events])

    def test_generated_calibration_same_bytes_as_in_process(self):
        local = quantd.quantize(BN_MODEL, None, tpc=TPC,
                                generated_calibration=GENERATED)
        events = []
        remote = self.client.quantize(BN_MODEL, None, tpc=TPC,
                                      generated_calibration=GENERATED,
                                      progress=events.append, timeout=300)
        self.assertEqual(remote.qdq_model, local.qdq_model)
        # Progress is paced (a stage this short may go unannounced); the
        # report times every stage the server ran.
        self.assertIn("generate", remote.report["timings_seconds"])

    def test_bad_input_raises_the_same_error_type(self):
        bad = [{"nosuch": np.zeros((1, 3, 8, 8), np.float32)}]
        with self.assertRaises(quantd.QuantdError) as ctx:
            self.client.quantize(MODEL, calibration=bad, tpc=TPC, timeout=60)
        self.assertEqual(ctx.exception.code, "INVALID_ARGUMENT")
        self.assertIn("nosuch", ctx.exception.message)

    def test_missing_token_is_unauthenticated(self):
        with quantd.Client(self.target) as anonymous:
            with self.assertRaises(quantd.QuantdError) as ctx:
                anonymous.quantize(MODEL, calibration=samples(1), tpc=TPC,
                                   timeout=60)
        self.assertEqual(ctx.exception.code, "UNAUTHENTICATED")


def make_certificates(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate
    (throwaway, openssl CLI)."""
    script = (
        "set -e\n"
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca"
        " -keyout ca.key -out ca.pem\n"
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext\n"
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost"
        " -keyout server.key -out server.csr\n"
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key"
        " -CAcreateserial -days 1 -extfile san.ext -out server.pem\n"
        "openssl req -newkey rsa:2048 -nodes -subj /CN=client"
        " -keyout client.key -out client.csr\n"
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key"
        " -CAcreateserial -days 1 -out client.pem\n")
    subprocess.run(["sh", "-c", script], cwd=d, check=True,
                   capture_output=True, env=plain_env())
    return lambda name: os.path.join(d, name)


class MutualTlsTest(unittest.TestCase):
    def test_quantize_over_mutual_tls(self):
        with tempfile.TemporaryDirectory() as d:
            path = make_certificates(d)
            proc, port = start_quantd(
                "--workers=1", f"--tls_cert={path('server.pem')}",
                f"--tls_key={path('server.key')}",
                f"--tls_client_ca={path('ca.pem')}")
            try:
                with quantd.Client(f"127.0.0.1:{port}",
                                   tls_ca=path("ca.pem"),
                                   tls_cert=path("client.pem"),
                                   tls_key=path("client.key")) as c:
                    r = c.quantize(MODEL, calibration=samples(2), tpc=TPC,
                                   timeout=300)
            finally:
                stop_quantd(proc)
        onnx.load_from_string(r.qdq_model)
        self.assertEqual(r.tpc, TPC)


class InstallTest(unittest.TestCase):
    def test_installed_package_imports_and_runs(self):
        build = os.environ["QUANTD_BINARY_DIR"]
        with tempfile.TemporaryDirectory() as prefix:
            subprocess.run(["cmake", "--install", build, "--component",
                            "python", "--prefix", prefix],
                           check=True, stdout=subprocess.DEVNULL,
                           env=plain_env())
            found = [os.path.join(root) for root, dirs, _ in os.walk(prefix)
                     if "quantd" in dirs]
            self.assertEqual(len(found), 1, found)
            env = dict(os.environ, PYTHONPATH=found[0])
            code = ("import sys, quantd, numpy as np\n"
                    "m = open(sys.argv[1], 'rb').read()\n"
                    "r = quantd.quantize(m, tpc=sys.argv[2], calibration=[{'x':"
                    " np.ones((1, 3, 8, 8), np.float32)}])\n"
                    "print(quantd.__file__, len(r.qdq_model) > 0)\n")
            model = os.path.join(prefix, "m.onnx")
            with open(model, "wb") as f:
                f.write(MODEL)
            out = subprocess.run([sys.executable, "-c", code, model, TPC],
                                 env=env, check=True, capture_output=True,
                                 text=True, cwd=prefix).stdout.split()
        self.assertTrue(out[0].startswith(found[0]), out)
        self.assertEqual(out[1], "True")


if __name__ == "__main__":
    unittest.main()
