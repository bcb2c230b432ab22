"""Structure of docker/Dockerfile, its .dockerignore and install_binaries.sh.

No Docker engine runs in CI, so the image is checked as text: a multi-stage
build on Debian bookworm whose build stage runs the same scripts as CI
(setup, build, test command) and whose bookworm-slim runtime stage runs the
binaries as a fixed non-root UID under tini, exposes the gRPC and metrics
ports named by its QUANTD_* defaults, and has a HEALTHCHECK.
"""

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import unittest

import deploy_lib

DOCKERFILE = os.path.join(deploy_lib.DOCKER_DIR, "Dockerfile")
DOCKERIGNORE = os.path.join(deploy_lib.DOCKER_DIR, "Dockerfile.dockerignore")
INSTALL_BINARIES = os.path.join(deploy_lib.DOCKER_DIR, "install_binaries.sh")


def parse_dockerfile(text):
    """Returns [(INSTRUCTION, arguments)] with continuations joined.

    Comment lines inside a continued instruction are dropped, as Docker does.
    Heredocs are not supported (the Dockerfile uses none).
    """
    instructions, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if current and line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        keyword, _, args = current.strip().partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        current = ""
    if current:
        raise AssertionError("Dockerfile ends inside a continued line")
    return instructions


class Stage:

    def __init__(self, base, name):
        self.base, self.name, self.instructions = base, name, []

    def args(self, keyword):
        return [a for k, a in self.instructions if k == keyword]

    def runs(self):
        return " ;; ".join(self.args("RUN"))


def parse_stages(instructions):
    """Splits the instructions into stages, resolving global ARG defaults."""
    global_args, stages = {}, []
    for keyword, args in instructions:
        if keyword == "ARG" and not stages:
            name, _, default = args.partition("=")
            global_args[name] = default
        elif keyword == "FROM":
            words = args.split()
            base = words[0]
            for name, value in global_args.items():
                base = base.replace("${%s}" % name, value)
            alias = words[2] if len(words) == 3 and words[1].upper() == "AS" \
                else None
            stages.append(Stage(base, alias))
        else:
            stages[-1].instructions.append((keyword, args))
    return stages


def apt_install_packages(run):
    """Package names of the `apt-get install` in a RUN line."""
    words = shlex.split(run)
    start = words.index("install") + 1
    packages = []
    for word in words[start:]:
        if word in ("&&", ";", "||"):
            break
        if not word.startswith("-"):
            packages.append(word)
    return packages


def env_defaults(stage):
    """ENV key=value pairs of a stage (the `ENV a=1 b=2` form)."""
    env = {}
    for args in stage.args("ENV"):
        for word in shlex.split(args):
            key, _, value = word.partition("=")
            env[key] = value
    return env


class DockerfileTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(DOCKERFILE) as f:
            cls.stages = parse_stages(parse_dockerfile(f.read()))
        cls.build = next(s for s in cls.stages if s.name == "build")
        cls.runtime = cls.stages[-1]

    def test_build_stage_is_debian_bookworm(self):
        self.assertEqual(self.build.base, "debian:bookworm")

    def test_runtime_stage_is_the_last_and_bookworm_slim(self):
        self.assertEqual(self.runtime.base, "debian:bookworm-slim")
        self.assertEqual(self.runtime.name, "runtime")

    def test_build_stage_runs_setup_then_build_then_the_test_command(self):
        runs = self.build.args("RUN")
        order = []
        for script in ("scripts/setup.sh", "scripts/build.sh",
                       "scripts/test.sh"):
            index = next((i for i, r in enumerate(runs) if script in r), None)
            self.assertIsNotNone(index, f"build stage never runs {script}")
            order.append(index)
        self.assertEqual(order, sorted(order))

    def test_build_stage_tests_with_the_shared_fixtures_mounted(self):
        # Tests read $QUANTD_SOURCE_DIR/../shared/fixtures.
        workdir = self.build.args("WORKDIR")[0]
        test_run = next(r for r in self.build.args("RUN")
                        if "scripts/test.sh" in r)
        shared = os.path.normpath(os.path.join(workdir, "..", "shared"))
        self.assertIn(f"--mount=type=bind,from=shared,target={shared}",
                      test_run)
        self.assertTrue(any(s.name == "shared" for s in self.stages))

    def test_every_script_the_build_runs_is_in_the_repository(self):
        for run in self.build.args("RUN"):
            for word in shlex.split(run):
                if word.startswith(("scripts/", "docker/")):
                    path = os.path.join(deploy_lib.SOURCE_DIR, word)
                    self.assertTrue(os.access(path, os.X_OK),
                                    f"{word} is missing or not executable")

    def test_runtime_copies_only_the_binaries_from_the_build_stage(self):
        copies = [a for a in self.runtime.args("COPY") if "--from=" in a]
        self.assertEqual(len(copies), 1)
        self.assertIn("--from=build", copies[0])
        self.assertIn("/usr/local/bin/", copies[0])

    def test_runtime_runs_as_a_fixed_non_root_uid(self):
        user = self.runtime.args("USER")
        self.assertEqual(len(user), 1)
        uid, _, gid = user[0].partition(":")
        # Numeric, so Kubernetes' runAsNonRoot can verify it.
        self.assertTrue(uid.isdigit() and gid.isdigit())
        self.assertNotEqual(int(uid), 0)
        self.assertNotEqual(int(gid), 0)
        self.assertIn(f"useradd --system --uid {uid} --gid {gid}",
                      self.runtime.runs())
        deployment = deploy_lib.load_yaml_file(
            os.path.join(deploy_lib.K8S_DIR, "base", "deployment.yaml"))
        pod_sc = deployment["spec"]["template"]["spec"]["securityContext"]
        self.assertEqual(pod_sc["runAsUser"], int(uid))
        self.assertEqual(pod_sc["runAsGroup"], int(gid))
        # USER comes after every RUN that needs root.
        keywords = [k for k, _ in self.runtime.instructions]
        last_run = len(keywords) - 1 - keywords[::-1].index("RUN")
        self.assertGreater(keywords.index("USER"), last_run)

    def test_exposes_the_ports_its_flag_defaults_name(self):
        exposed = " ".join(self.runtime.args("EXPOSE")).split()
        env = env_defaults(self.runtime)
        self.assertEqual(sorted(exposed), sorted(
            [env["QUANTD_PORT"], env["QUANTD_METRICS_PORT"]]))
        self.assertEqual(env["QUANTD_PORT"], "50051")
        self.assertEqual(env["QUANTD_METRICS_PORT"], "9464")

    def test_server_listens_on_every_interface(self):
        # quantd's default is loopback: EXPOSE would reach nothing.
        self.assertIn(env_defaults(self.runtime)["QUANTD_LISTEN_ADDRESS"],
                      ("0.0.0.0", "[::]"))

    def test_tpc_dir_default_is_populated_in_the_image(self):
        env = env_defaults(self.runtime)
        tpc_dir = env["QUANTD_TPC_DIR"].rstrip("/")
        sources = [a.split() for a in self.runtime.args("COPY")
                   if "--from=" not in a]
        dests = {words[-1].rstrip("/"): words[0] for words in sources}
        self.assertIn(tpc_dir, dests)
        self.assertTrue(os.listdir(os.path.join(deploy_lib.SOURCE_DIR,
                                                dests[tpc_dir])))

    def test_entrypoint_is_tini_in_exec_form(self):
        entrypoint = self.runtime.args("ENTRYPOINT")
        self.assertEqual(len(entrypoint), 1)
        argv = json.loads(entrypoint[0])  # exec form is a JSON array
        self.assertEqual(argv, ["/usr/bin/tini", "--", "/usr/local/bin/quantd"])
        self.assertIn("tini", apt_install_packages(self.runtime.runs()))
        self.assertEqual(self.runtime.args("STOPSIGNAL"), ["SIGTERM"])

    def test_healthcheck_runs_quantctl_health_on_the_grpc_port(self):
        health = self.runtime.args("HEALTHCHECK")
        self.assertEqual(len(health), 1)
        options, _, command = health[0].partition("CMD ")
        self.assertIn("--start-period=", options)
        argv = json.loads(command)
        self.assertIn("/usr/local/bin/quantctl health --server", " ".join(argv))
        self.assertIn("${QUANTD_PORT}", " ".join(argv))

    def test_runtime_installs_no_build_tools_and_drops_apt_lists(self):
        runs = self.runtime.runs()
        packages = apt_install_packages(runs)
        self.assertTrue(packages)
        for package in packages:
            self.assertFalse(package.endswith("-dev"), package)
            self.assertNotIn(package, ("build-essential", "cmake", "clang",
                                       "git", "ninja-build", "npm"))
        self.assertIn("--no-install-recommends", runs)
        self.assertIn("rm -rf /var/lib/apt/lists/*", runs)

    def test_runtime_build_fails_on_a_missing_shared_library(self):
        self.assertIn('ldd /usr/local/bin/quantd /usr/local/bin/quantctl',
                      self.runtime.runs())
        self.assertIn('grep -F "not found"', self.runtime.runs())


def dockerignore_excludes(patterns, path):
    """True when a .dockerignore excludes `path` (or one of its parents).

    fnmatch's `*` also crosses '/', so it matches at least what Docker's
    does: "not excluded" here means not excluded by Docker either.
    """
    parts = path.split("/")
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        for i in range(1, len(parts) + 1):
            if fnmatch.fnmatchcase("/".join(parts[:i]), pattern):
                excluded = not negate
                break
    return excluded


class DockerignoreTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(DOCKERIGNORE) as f:
            cls.patterns = [l.strip() for l in f
                            if l.strip() and not l.startswith("#")]

    def test_keeps_the_sources_scripts_and_git(self):
        tracked = subprocess.run(
            ["git", "-C", deploy_lib.SOURCE_DIR, "ls-files"],
            capture_output=True, text=True, check=True).stdout.split()
        self.assertTrue(tracked)
        for path in tracked + [".git/HEAD"]:
            self.assertFalse(dockerignore_excludes(self.patterns, path), path)

    def test_drops_build_trees_and_node_modules(self):
        for path in ("build/CMakeCache.txt", "build-deploy/build.ninja",
                     "tools/ort/node_modules/onnxruntime-node/package.json",
                     "node_modules/x", "tests/deploy/__pycache__/a.pyc"):
            self.assertTrue(dockerignore_excludes(self.patterns, path), path)


class InstallBinariesTest(unittest.TestCase):

    def make_tree(self, root, files):
        for rel in files:
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # A real ELF file, so `install -s` (strip) has something to do.
            subprocess.run(["cp", "/bin/true", path], check=True)

    def run_script(self, build, out):
        return subprocess.run([INSTALL_BINARIES, build, out],
                              capture_output=True, text=True, check=False)

    def test_installs_each_binary_found_by_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            build = os.path.join(tmp, "build")
            self.make_tree(build, ["server/quantd", "clients/quantctl/quantctl",
                                   "server/CMakeFiles/quantd"])
            proc = self.run_script(build, os.path.join(tmp, "out"))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            for name in ("quantd", "quantctl"):
                path = os.path.join(tmp, "out", "bin", name)
                self.assertTrue(os.access(path, os.X_OK), name)

    def test_fails_naming_a_binary_that_is_missing(self):
        with tempfile.TemporaryDirectory() as tmp:
            build = os.path.join(tmp, "build")
            self.make_tree(build, ["clients/quantctl/quantctl"])
            proc = self.run_script(build, os.path.join(tmp, "out"))
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("'quantd'", proc.stderr)

    def test_fails_when_a_name_is_ambiguous(self):
        with tempfile.TemporaryDirectory() as tmp:
            build = os.path.join(tmp, "build")
            self.make_tree(build, ["server/quantd", "server/old/quantd",
                                   "clients/quantctl/quantctl"])
            proc = self.run_script(build, os.path.join(tmp, "out"))
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("found 2", proc.stderr)

    def test_script_passes_shellcheck(self):
        shellcheck = shutil.which("shellcheck")
        if shellcheck is None:
            self.skipTest("shellcheck is not installed")
        proc = subprocess.run([shellcheck, INSTALL_BINARIES],
                              capture_output=True, text=True, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout)


if __name__ == "__main__":
    deploy_lib.main()
