"""docker/compose.yaml: N quantd replicas and a `quantctl batch` farm.

No Docker engine runs in CI, so the file is checked as data: the replicas
build the repository's image and publish no host port; the farm waits for
them to be healthy and runs `quantctl batch` over the service name with the
flags quantctl has, on the example manifest in docker/farm/. With the built
binaries (--quantd, --quantctl, --make-example) the farm's own command runs
against replicas on loopback, on the example model.
Usage: compose_test.py [--quantd BIN] [--quantctl BIN] [--make-example BIN]
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import deploy_lib
import dockerfile_test
import server_config_test

COMPOSE = os.path.join(deploy_lib.DOCKER_DIR, "compose.yaml")
BINARIES = {"quantd": None, "quantctl": None, "make-example": None}
REPLICAS_IN_TEST = 2


def resolve_defaults(value):
    """Substitutes ${VAR:-default} (and ${VAR}) as compose does, env unset."""
    if isinstance(value, dict):
        return {k: resolve_defaults(v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_defaults(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)(?::?-([^}]*))?\}",
                      lambda m: m.group(2) or "", value)
    return value


def image_env():
    """ENV defaults of the image's runtime stage."""
    with open(dockerfile_test.DOCKERFILE) as f:
        stages = dockerfile_test.parse_stages(
            dockerfile_test.parse_dockerfile(f.read()))
    return dockerfile_test.env_defaults(stages[-1])


def flag_value(argv, flag):
    return argv[argv.index(flag) + 1]


class ComposeTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(COMPOSE) as f:
            raw = deploy_lib.yaml.safe_load(f)
        cls.services = resolve_defaults(raw["services"])
        cls.quantd = cls.services["quantd"]
        cls.farm = cls.services["farm"]

    def test_lints_clean(self):
        proc = subprocess.run(
            ["yamllint", "-c", deploy_lib.YAMLLINT_CONFIG, COMPOSE],
            capture_output=True, text=True, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_replicas_build_the_repository_image(self):
        build = self.quantd["build"]
        context = os.path.normpath(os.path.join(deploy_lib.DOCKER_DIR,
                                                build["context"]))
        self.assertEqual(context, os.path.normpath(deploy_lib.SOURCE_DIR))
        self.assertEqual(os.path.join(context, build["dockerfile"]),
                         dockerfile_test.DOCKERFILE)
        self.assertEqual(build["args"]["RUN_TESTS"], "1")

    def test_starts_several_replicas_without_host_ports(self):
        self.assertGreaterEqual(int(self.quantd["deploy"]["replicas"]), 2)
        # A published host port could be bound by one replica only.
        self.assertNotIn("ports", self.quantd)
        self.assertNotIn("container_name", self.quantd)

    def test_workers_match_the_cpu_limit(self):
        limits = self.quantd["deploy"]["resources"]["limits"]
        self.assertEqual(float(limits["cpus"]),
                         float(self.quantd["environment"]["QUANTD_WORKERS"]))

    def test_environment_names_declared_server_flags(self):
        declared = set()
        server_dir = os.path.join(deploy_lib.SOURCE_DIR, "server")
        for name in os.listdir(server_dir):
            if name.endswith(".cc"):
                with open(os.path.join(server_dir, name)) as f:
                    declared |= set(re.findall(r"ABSL_FLAG\([^,]+,\s*(\w+)",
                                               f.read()))
        for variable in self.quantd["environment"]:
            self.assertTrue(variable.startswith("QUANTD_"), variable)
            self.assertIn(variable[len("QUANTD_"):].lower(), declared)

    def test_stop_grace_period_exceeds_the_image_drain(self):
        grace = self.quantd["stop_grace_period"]
        self.assertTrue(grace.endswith("s"), grace)
        self.assertGreater(int(grace[:-1]),
                           int(image_env()["QUANTD_DRAIN_SECONDS"]))

    def test_farm_uses_the_same_image_and_waits_for_healthy_replicas(self):
        self.assertEqual(self.farm["image"], self.quantd["image"])
        self.assertEqual(self.farm["depends_on"]["quantd"]["condition"],
                         "service_healthy")
        self.assertNotIn("healthcheck", self.quantd)  # the image's applies

    def test_farm_runs_quantctl_batch_over_every_replica(self):
        self.assertEqual(self.farm["entrypoint"][-1], "/usr/local/bin/quantctl")
        self.assertIn("/usr/bin/tini", self.farm["entrypoint"])
        command = self.farm["command"]
        self.assertEqual(command[0], "batch")
        # One dns:/// target: every replica address, round_robin.
        self.assertEqual(flag_value(command, "--servers"),
                         f"dns:///quantd:{image_env()['QUANTD_PORT']}")
        self.assertEqual(self.farm.get("restart"), "no")

    def test_farm_reads_and_writes_inside_its_mounted_folder(self):
        host, target = self.farm["volumes"][0].split(":")[:2]
        host_dir = os.path.normpath(os.path.join(deploy_lib.DOCKER_DIR, host))
        command = self.farm["command"]
        manifest = flag_value(command, "--manifest")
        out = flag_value(command, "--out")
        for path in (manifest, out):
            self.assertTrue(path.startswith(target + "/"), path)
        self.assertTrue(os.path.isfile(os.path.join(
            host_dir, os.path.relpath(manifest, target))))
        uid, _, gid = self.farm["user"].partition(":")
        self.assertTrue(uid.isdigit() and gid.isdigit())

    def test_example_manifest_jobs_are_complete_and_unique(self):
        ids = []
        with open(os.path.join(deploy_lib.DOCKER_DIR, "farm",
                               "manifest.jsonl")) as f:
            for line in f:
                job = json.loads(line)
                for field in ("id", "model", "calib", "tpc"):
                    self.assertIn(field, job)
                ids.append(job["id"])
        self.assertEqual(len(ids), len(set(ids)))
        self.assertGreaterEqual(len(ids), REPLICAS_IN_TEST)

    def test_farm_flags_exist_in_quantctl(self):
        quantctl = BINARIES["quantctl"]
        if not quantctl:
            self.skipTest("no --quantctl")
        usage = ""
        for argv in ([quantctl, "batch", "--help"], [quantctl, "--help"]):
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  check=False, timeout=60)
            usage += proc.stdout + proc.stderr
        for word in self.farm["command"]:
            if word.startswith("--"):
                self.assertIn(word, usage)


class FarmRunTest(unittest.TestCase):
    """The farm's command against replicas on loopback, on the example."""

    def setUp(self):
        if not all(BINARIES.values()):
            self.skipTest("needs --quantd, --quantctl and --make-example")
        server_config_test.QUANTD_BINARY = BINARIES["quantd"]
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.servers = []
        self.addCleanup(lambda: [s.kill() for s in self.servers])

    def start_replica(self):
        env = dict(os.environ, QUANTD_PORT="0", QUANTD_METRICS_PORT="0",
                   QUANTD_WORKERS="1")
        server = server_config_test.RunningServer(env)
        self.servers.append(server)
        return int(server.wait_for("listening")["port"])

    def test_farm_command_runs_every_example_job(self):
        with open(COMPOSE) as f:
            farm = resolve_defaults(
                deploy_lib.yaml.safe_load(f)["services"]["farm"])
        farm_dir = os.path.join(self.tmp.name, "farm")
        os.makedirs(farm_dir)
        shutil.copy(os.path.join(deploy_lib.DOCKER_DIR, "farm",
                                 "manifest.jsonl"), farm_dir)
        subprocess.run([BINARIES["make-example"],
                        os.path.join(farm_dir, "example")],
                       check=True, capture_output=True, timeout=120)
        ports = [self.start_replica() for _ in range(REPLICAS_IN_TEST)]
        argv = [a.replace("/farm/", farm_dir + "/") for a in farm["command"]]
        # The compose network's dns:/// name becomes the loopback replicas.
        argv[argv.index("--servers") + 1] = ",".join(
            f"127.0.0.1:{p}" for p in ports)
        proc = subprocess.run([BINARIES["quantctl"]] + argv,
                              capture_output=True, text=True, check=False,
                              timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(os.path.join(farm_dir, "manifest.jsonl")) as f:
            ids = [json.loads(line)["id"] for line in f]
        for job_id in ids:
            self.assertTrue(os.path.isfile(os.path.join(
                farm_dir, "out", job_id, "model.qdq.onnx")), job_id)


if __name__ == "__main__":
    for name in BINARIES:
        option = "--" + name
        if option in sys.argv:
            i = sys.argv.index(option)
            BINARIES[name] = sys.argv[i + 1]
            del sys.argv[i:i + 2]
    deploy_lib.main()
