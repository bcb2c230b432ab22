"""The real quantd binary starts with each overlay's configuration.

Everything the pod would get is reproduced locally: the QUANTD_* variables
of the rendered `quantd-flags` ConfigMap, QUANTD_WORKERS as the downward API
computes it from the CPU limit, and the TPC ConfigMap laid out the way the
kubelet mounts it (`..data` symlinks). Only the ports become 0 (the server
logs the ones it picked). Then, as Kubernetes would: the liveness ("") and
readiness (quantd.v1.QuantizationService) health services answer SERVING,
/metrics serves the documented families, and SIGTERM drains and exits 0
within terminationGracePeriodSeconds. For prod-tls, with a throwaway CA and
a localhost certificate as the Secret, the three exec probes (the real
`quantctl health` with the probe's own arguments) pass and plaintext is
refused.
Skipped (exit 77) until the quantd target exists in the build.

Usage: server_config_test.py --quantd PATH --quantctl PATH [unittest args]
"""

import json
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

import deploy_lib

QUANTD_BINARY = None  # from --quantd
QUANTCTL_BINARY = None  # from --quantctl
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

    def start(self, overlay, secrets=None):
        """Starts quantd as the overlay's pod would run it.

        `secrets` maps a Secret name to its data (file name -> text).
        Returns (server, 'listening' log record, pod spec, local_path) where
        local_path maps a path inside the pod to the local one.
        """
        _, objects = deploy_lib.render(
            os.path.join(deploy_lib.K8S_DIR, "overlays", overlay))
        rendered = deploy_lib.Rendered(objects)
        deployment = rendered.get("Deployment", "quantd")
        pod = deployment["spec"]["template"]["spec"]
        container = next(c for c in pod["containers"] if c["name"] == "quantd")
        env = {"PATH": "/usr/bin:/bin"}
        for source in container["envFrom"]:
            env.update(rendered.configmap_data(source["configMapRef"]["name"]))
        for item in container.get("env", []):
            if "value" in item:
                env[item["name"]] = item["value"]
        env["QUANTD_WORKERS"] = str(
            _cpu_ceil(container["resources"]["limits"]["cpu"]))
        env["QUANTD_PORT"] = "0"
        env["QUANTD_METRICS_PORT"] = "0"

        tmp = tempfile.mkdtemp(prefix=f"quantd-{overlay}-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp], check=False)
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {}
        for mount in container["volumeMounts"]:
            volume = volumes[mount["name"]]
            local = os.path.join(tmp, mount["mountPath"].strip("/"))
            os.makedirs(local)
            if "configMap" in volume:
                mount_configmap(
                    rendered.configmap_data(volume["configMap"]["name"]), local)
            elif "secret" in volume:
                mount_configmap(secrets[volume["secret"]["secretName"]], local)
            mounts[mount["mountPath"]] = local

        def local_path(path):
            for inside, outside in mounts.items():
                if path == inside or path.startswith(inside + "/"):
                    return outside + path[len(inside):]
            return path

        env = {k: local_path(v) for k, v in env.items()}
        env["TMPDIR"] = mounts["/tmp"]

        server = RunningServer(env)
        self.addCleanup(server.kill)
        listening = server.wait_for("listening")
        return server, listening, pod, local_path

    def stop(self, server, pod):
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

    def check_overlay(self, overlay):
        server, listening, pod, _ = self.start(overlay)
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
        self.stop(server, pod)

    def test_dev_configuration_serves_and_drains(self):
        self.check_overlay("dev")

    def test_prod_configuration_serves_and_drains(self):
        self.check_overlay("prod")

    def test_prod_tls_probes_pass_over_tls(self):
        if not QUANTCTL_BINARY:
            self.skipTest("quantctl is not built in this tree")
        if shutil.which("openssl") is None:
            self.skipTest("openssl (the CLI) is not installed")
        with tempfile.TemporaryDirectory() as certs:
            secret = make_tls_secret(certs)
        server, listening, pod, local_path = self.start(
            "prod-tls", secrets={"quantd-tls": secret})
        port = listening["port"]
        self.assertEqual(listening["tls"], "server")
        container = next(c for c in pod["containers"] if c["name"] == "quantd")
        for name in ("startupProbe", "livenessProbe", "readinessProbe"):
            with self.subTest(probe=name):
                argv = [QUANTCTL_BINARY] + [
                    local_path(a.replace(":50051", f":{port}"))
                    for a in container[name]["exec"]["command"][1:]]
                proc = subprocess.run(argv, capture_output=True, text=True,
                                      check=False, timeout=30)
                self.assertEqual(proc.returncode, 0,
                                 proc.stdout + proc.stderr)
        # Plaintext is refused: TLS is really on.
        import grpc
        with self.assertRaises(grpc.RpcError):
            health_check(int(port), "")
        self.stop(server, pod)


def make_tls_secret(directory):
    """A CA and a server certificate for localhost, as a kubernetes.io/tls
    Secret's data (tls.crt, tls.key, ca.crt)."""
    def openssl(*args):
        subprocess.run(["openssl"] + list(args), cwd=directory, check=True,
                       capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=quantd test CA", "-keyout", "ca.key",
            "-out", "ca.crt")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=quantd",
            "-keyout", "tls.key", "-out", "tls.csr")
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey",
            "ca.key", "-CAcreateserial", "-days", "1", "-extfile", "san.ext",
            "-out", "tls.crt")
    data = {}
    for name in ("tls.crt", "tls.key", "ca.crt"):
        with open(os.path.join(directory, name)) as f:
            data[name] = f.read()
    return data


if __name__ == "__main__":
    for option in ("--quantd", "--quantctl"):
        if option in sys.argv:
            i = sys.argv.index(option)
            globals()[option[2:].upper() + "_BINARY"] = sys.argv[i + 1]
            del sys.argv[i:i + 2]
    if not QUANTD_BINARY or not os.access(QUANTD_BINARY, os.X_OK):
        print("SKIPPED: quantd is not built in this tree yet.")
        sys.exit(deploy_lib.SKIP)
    deploy_lib.require_tool("kubectl")
    deploy_lib.main()
