"""The real quantd binary starts with each overlay's configuration.

Everything the pod would get is reproduced locally: the QUANTD_* variables
of the rendered `quantd-flags` ConfigMap, QUANTD_WORKERS as the downward API
computes it from the CPU limit, and the TPC ConfigMap laid out the way the
kubelet mounts it (`..data` symlinks). Only the ports become 0 (the server
logs the ones it picked). Then, as Kubernetes would: the liveness ("") and
readiness (quantd.v1.QuantizationService) health services answer SERVING,
/metrics serves the documented families, and SIGTERM drains and exits 0
within terminationGracePeriodSeconds.
Skipped (exit 77) until the quantd target exists in the build.

Usage: server_config_test.py --quantd PATH [unittest args]
"""

import json
import math
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

import deploy_lib

QUANTD_BINARY = None  # from --quantd
READINESS_SERVICE = "quantd.v1.QuantizationService"
SERVING = 1  # grpc.health.v1.HealthCheckResponse.ServingStatus
STARTUP_TIMEOUT_S = 60


def health_check(port, service):
    """grpc.health.v1.Health/Check, messages encoded by hand.

    HealthCheckRequest{string service = 1}: tag 0x0a, length, bytes.
    HealthCheckResponse{ServingStatus status = 1}: tag 0x08, varint (absent
    when 0 = UNKNOWN, as proto3 omits defaults).
    """
    import grpc  # python3-grpcio (Debian), only this test needs it
    encoded = service.encode()
    request = (b"\x0a" + bytes([len(encoded)]) + encoded) if encoded else b""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b)
        response = check(request, timeout=10)
    if not response:
        return 0
    if response[0] != 0x08:
        raise AssertionError(f"unexpected HealthCheckResponse {response!r}")
    return response[1]


def mount_configmap(data, directory):
    """Writes ConfigMap data as the kubelet's atomic writer does."""
    timestamped = os.path.join(directory, "..2026_01_01_00_00_00.000000000")
    os.makedirs(timestamped)
    for name, text in data.items():
        with open(os.path.join(timestamped, name), "w") as f:
            f.write(text)
    os.symlink(os.path.basename(timestamped), os.path.join(directory, "..data"))
    for name in data:
        os.symlink(os.path.join("..data", name), os.path.join(directory, name))


def _cpu_ceil(quantity):
    text = str(quantity)
    cores = int(text[:-1]) / 1000 if text.endswith("m") else float(text)
    return math.ceil(cores)


class RunningServer:
    """quantd started with an environment; its JSON log lines collected."""

    def __init__(self, env):
        self.proc = subprocess.Popen(
            [QUANTD_BINARY], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines = queue.Queue()
        self.log = []
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self):
        for line in self.proc.stdout:
            self.log.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, msg):
        """The first JSON log record with this msg (fails if quantd exits)."""
        while True:
            try:
                line = self.lines.get(timeout=STARTUP_TIMEOUT_S)
            except queue.Empty:
                raise AssertionError(
                    f"no '{msg}' log within {STARTUP_TIMEOUT_S} s:\n"
                    + "".join(self.log))
            if line is None:
                raise AssertionError(
                    f"quantd exited ({self.proc.wait()}) before '{msg}':\n"
                    + "".join(self.log))
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("msg") == msg:
                return record

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.reader.join(timeout=10)
        self.proc.stdout.close()


class ServerConfigTest(unittest.TestCase):

    def start(self, overlay):
        """Starts quantd as the overlay's pod would run it."""
        _, objects = deploy_lib.render(
            os.path.join(deploy_lib.K8S_DIR, "overlays", overlay))
        rendered = deploy_lib.Rendered(objects)
        deployment = rendered.get("Deployment", "quantd")
        pod = deployment["spec"]["template"]["spec"]
        container = next(c for c in pod["containers"] if c["name"] == "quantd")
        env = {"PATH": "/usr/bin:/bin"}
        for source in container["envFrom"]:
            env.update(rendered.configmap_data(source["configMapRef"]["name"]))
        env["QUANTD_WORKERS"] = str(
            _cpu_ceil(container["resources"]["limits"]["cpu"]))
        env["QUANTD_PORT"] = "0"
        env["QUANTD_METRICS_PORT"] = "0"

        tmp = tempfile.mkdtemp(prefix=f"quantd-{overlay}-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp], check=False)
        volumes = {v["name"]: v for v in pod["volumes"]}
        for mount in container["volumeMounts"]:
            volume = volumes[mount["name"]]
            local = os.path.join(tmp, mount["mountPath"].strip("/"))
            os.makedirs(local)
            if "configMap" in volume:
                mount_configmap(
                    rendered.configmap_data(volume["configMap"]["name"]), local)
            for key, value in env.items():
                if value == mount["mountPath"]:
                    env[key] = local
        env["TMPDIR"] = os.path.join(tmp, "tmp")

        server = RunningServer(env)
        self.addCleanup(server.kill)
        listening = server.wait_for("listening")
        return server, listening, pod

    def check_overlay(self, overlay):
        server, listening, pod = self.start(overlay)
        port, metrics_port = int(listening["port"]), int(
            listening["metrics_port"])

        self.assertEqual(health_check(port, ""), SERVING)
        self.assertEqual(health_check(port, READINESS_SERVICE), SERVING)

        with urllib.request.urlopen(
                f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
            metrics = r.read().decode()
        for family in ("quantd_queue_depth", "quantd_workers_busy",
                       "quantd_build_info"):
            self.assertIn(f"# TYPE {family} ", metrics)

        # No job is running, so the drain has nothing to wait for: quantd
        # must exit well within the grace period (60 s at most here).
        grace = min(pod["terminationGracePeriodSeconds"], 60)
        server.proc.send_signal(signal.SIGTERM)
        try:
            code = server.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.fail(f"quantd still running {grace} s after SIGTERM:\n"
                      + "".join(server.log))
        self.assertEqual(code, 0, "".join(server.log))

    def test_dev_configuration_serves_and_drains(self):
        self.check_overlay("dev")

    def test_prod_configuration_serves_and_drains(self):
        self.check_overlay("prod")


if __name__ == "__main__":
    if "--quantd" in sys.argv:
        i = sys.argv.index("--quantd")
        QUANTD_BINARY = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    if not QUANTD_BINARY or not os.access(QUANTD_BINARY, os.X_OK):
        print("SKIPPED: quantd is not built in this tree yet.")
        sys.exit(deploy_lib.SKIP)
    deploy_lib.require_tool("kubectl")
    deploy_lib.main()
