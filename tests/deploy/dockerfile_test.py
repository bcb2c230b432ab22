"""Structure of docker/Dockerfile, the root .dockerignore and build_stage.sh.

No Docker engine runs in CI, so the image is checked as text: a multi-stage
build on Debian bookworm that the classic builder of Debian's docker.io can
run (no BuildKit-only syntax, nothing from outside the context), whose build
stage runs CI's setup script and then docker/build_stage.sh (unit tests only,
RUN_TESTS=0 skips them) and docker/runtime_rootfs.sh, and whose bookworm-slim
runtime stage installs no package, copies that one folder, runs the
binaries as a fixed non-root UID under tini, exposes the gRPC and metrics
ports named by its QUANTD_* defaults, and has a HEALTHCHECK. build_stage.sh
runs with stand-ins for cmake and ctest; with --build-dir, its unit test
selection is checked against the labels of the real ctest tree.
"""

import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import deploy_lib

DOCKERFILE = os.path.join(deploy_lib.DOCKER_DIR, "Dockerfile")
# The classic builder reads only the context root's .dockerignore.
DOCKERIGNORE = os.path.join(deploy_lib.SOURCE_DIR, ".dockerignore")
BUILD_STAGE = os.path.join(deploy_lib.DOCKER_DIR, "build_stage.sh")
RUNTIME_ROOTFS = os.path.join(deploy_lib.DOCKER_DIR, "runtime_rootfs.sh")
# The image's shell scripts, all checked with shellcheck.
SCRIPTS = (BUILD_STAGE, RUNTIME_ROOTFS,
           os.path.join(deploy_lib.SOURCE_DIR, "scripts",
                        "docker_base_images.sh"),
           os.path.join(deploy_lib.SOURCE_DIR, "scripts", "image_test.sh"))
# A ctest build tree (--build-dir) for the unit test selection check.
BUILD_DIR = None

# Syntax only BuildKit understands; the classic builder fails on it (or, for
# parser directives, silently ignores it).
BUILDKIT_ONLY = ("--mount", "--link", "--chmod", "--network", "--security",
                 "--parents", "--exclude", "--checksum", "--keep-git-dir",
                 "--build-context")


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

    def test_build_stage_runs_setup_then_the_build_stage_script(self):
        runs = self.build.args("RUN")
        order = []
        for script in ("scripts/setup.sh", "docker/build_stage.sh"):
            index = next((i for i, r in enumerate(runs) if script in r), None)
            self.assertIsNotNone(index, f"build stage never runs {script}")
            order.append(index)
        self.assertEqual(order, sorted(order))
        # Not CI's whole test command (sanitizers, fuzzing): unit tests only.
        self.assertNotIn("scripts/test.sh", self.build.runs())

    def test_run_tests_build_arg_defaults_to_on_and_reaches_the_script(self):
        args = dict(a.partition("=")[::2] for a in self.build.args("ARG"))
        self.assertEqual(args.get("RUN_TESTS"), "1")
        build_run = next(r for r in self.build.args("RUN")
                         if "docker/build_stage.sh" in r)
        self.assertIn('RUN_TESTS="${RUN_TESTS}"', build_run)
        # The ARG is declared before the RUN that reads it.
        keywords = [(k, a) for k, a in self.build.instructions]
        self.assertLess(keywords.index(("ARG", "RUN_TESTS=1")),
                        keywords.index(("RUN", build_run)))

    def test_uses_no_buildkit_only_syntax(self):
        with open(DOCKERFILE) as f:
            text = f.read()
        first = text.lstrip().splitlines()[0]
        # A `# syntax=` directive would make BuildKit fetch a frontend image.
        self.assertFalse(re.match(r"#\s*(syntax|check)\s*=", first), first)
        for stage in self.stages:
            for keyword, args in stage.instructions:
                for flag in BUILDKIT_ONLY:
                    self.assertNotIn(flag, args, f"{keyword} {args}")
                # Heredocs (RUN <<EOF, COPY <<EOF) are BuildKit's.
                self.assertNotIn("<<", args, f"{keyword} {args}")

    def test_every_stage_and_copy_source_is_an_image_or_an_earlier_stage(self):
        # No named build context (--build-context) stands in for a stage.
        seen = set()
        for stage in self.stages:
            self.assertTrue(stage.base in seen or ":" in stage.base
                            or stage.base == "scratch", stage.base)
            for args in stage.args("COPY"):
                for word in args.split():
                    if word.startswith("--from="):
                        self.assertIn(word[len("--from="):], seen, args)
            seen.add(stage.name)

    def test_copies_only_paths_inside_the_context_that_exist(self):
        with open(DOCKERIGNORE) as f:
            patterns = [l.strip() for l in f
                        if l.strip() and not l.startswith("#")]
        for stage in self.stages:
            for keyword in ("COPY", "ADD"):
                for args in stage.args(keyword):
                    words = [w for w in args.split()
                             if not w.startswith("--")]
                    if "--from=" in args:
                        continue
                    for source in words[:-1]:
                        norm = os.path.normpath(source)
                        self.assertFalse(os.path.isabs(source), source)
                        self.assertFalse(norm.startswith(".."), source)
                        self.assertTrue(os.path.exists(os.path.join(
                            deploy_lib.SOURCE_DIR, norm)), source)
                        if norm != ".":
                            self.assertFalse(
                                dockerignore_excludes(patterns, norm), source)

    def test_every_script_the_build_runs_is_in_the_repository(self):
        for run in self.build.args("RUN"):
            for word in shlex.split(run):
                if word.startswith(("scripts/", "docker/")):
                    path = os.path.join(deploy_lib.SOURCE_DIR, word)
                    self.assertTrue(os.access(path, os.X_OK),
                                    f"{word} is missing or not executable")

    def test_runtime_copies_one_rootfs_from_the_build_stage(self):
        # The binaries, tini and their libraries: one COPY, one layer.
        copies = [a.split() for a in self.runtime.args("COPY")
                  if "--from=" in a]
        self.assertEqual(len(copies), 1)
        self.assertEqual(copies[0][0], "--from=build")
        source, dest = copies[0][1:]
        self.assertEqual(dest, "/")
        build_run = next(r for r in self.build.args("RUN")
                         if "docker/runtime_rootfs.sh" in r)
        words = shlex.split(build_run)
        i = words.index("docker/runtime_rootfs.sh")
        self.assertEqual(words[i + 2].rstrip("/"), source.rstrip("/"))
        # The installed binaries of build_stage.sh are its input.
        self.assertIn(f"docker/build_stage.sh {words[i + 1]}", build_run)
        # The base packages list is written before anything is installed.
        base_list = words[i + 3]
        first_run = " ".join(self.build.args("RUN")[0].split())
        self.assertTrue(first_run.startswith("dpkg-query -W"), first_run)
        self.assertIn(f"> {base_list} && scripts/setup.sh", first_run)

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
        # Installed in the build stage, laid out by runtime_rootfs.sh.
        self.assertIn("tini", apt_install_packages(self.build.runs()))
        with open(RUNTIME_ROOTFS) as f:
            self.assertIn("/usr/bin/tini", f.read())
        self.assertEqual(self.runtime.args("STOPSIGNAL"), ["SIGTERM"])

    def test_healthcheck_runs_quantctl_health_on_the_grpc_port(self):
        health = self.runtime.args("HEALTHCHECK")
        self.assertEqual(len(health), 1)
        options, _, command = health[0].partition("CMD ")
        self.assertIn("--start-period=", options)
        argv = json.loads(command)
        self.assertIn("/usr/local/bin/quantctl health --server", " ".join(argv))
        self.assertIn("${QUANTD_PORT}", " ".join(argv))

    def test_runtime_installs_no_package(self):
        # Its libraries come from the build stage (runtime_rootfs.sh): no
        # apt lists, caches or dpkg state of its own.
        for word in ("apt-get", "apt ", "dpkg -i"):
            self.assertNotIn(word, self.runtime.runs())

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


def build_stage_selection():
    """The label regex that build_stage.sh gives ctest -L."""
    with open(BUILD_STAGE) as f:
        return re.search(r"^readonly UNIT_LABELS='([^']*)'$", f.read(),
                         re.M).group(1)


class BuildStageScriptTest(unittest.TestCase):
    """docker/build_stage.sh with stand-ins for cmake and ctest on PATH."""

    def run_script(self, env_extra, ctest_rc=0):
        with tempfile.TemporaryDirectory() as tmp:
            fake_bin = os.path.join(tmp, "bin")
            os.mkdir(fake_bin)
            log = os.path.join(tmp, "calls")
            for tool in ("cmake", "ctest"):
                rc = ctest_rc if tool == "ctest" else 0
                path = os.path.join(fake_bin, tool)
                with open(path, "w") as f:
                    f.write("#!/bin/sh\n"
                            f'printf "%s\\n" "{tool} $*" >> "{log}"\n'
                            f"exit {rc}\n")
                os.chmod(path, 0o755)
            env = dict(os.environ, PATH=fake_bin + ":" + os.environ["PATH"],
                       JOBS="3")
            env.pop("RUN_TESTS", None)
            env.update(env_extra)
            proc = subprocess.run([BUILD_STAGE, os.path.join(tmp, "out")],
                                  env=env, capture_output=True, text=True,
                                  check=False)
            calls = []
            if os.path.exists(log):
                with open(log) as f:
                    calls = [shlex.split(l) for l in f.read().splitlines()]
            return proc, calls

    @staticmethod
    def with_tool(calls, tool):
        return [c[1:] for c in calls if c[0] == tool]

    def configure_args(self, calls):
        return next(c for c in self.with_tool(calls, "cmake") if "-S" in c)

    def test_default_builds_with_tests_and_runs_the_unit_test_labels(self):
        proc, calls = self.run_script({})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("-DQUANTD_BUILD_TESTS=ON", self.configure_args(calls))
        ctest = self.with_tool(calls, "ctest")
        self.assertEqual(len(ctest), 1)
        args = ctest[0]
        self.assertEqual(args[args.index("-L") + 1], build_stage_selection())
        self.assertEqual(args[args.index("-FA") + 1], ".*")
        self.assertIn("--no-tests=error", args)
        self.assertEqual(args[args.index("-j") + 1], "3")

    def test_run_tests_0_builds_the_two_binaries_and_runs_no_test(self):
        proc, calls = self.run_script({"RUN_TESTS": "0"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("-DQUANTD_BUILD_TESTS=OFF", self.configure_args(calls))
        self.assertEqual(self.with_tool(calls, "ctest"), [])
        builds = [c for c in self.with_tool(calls, "cmake") if "--build" in c]
        self.assertEqual(len(builds), 1)
        target = builds[0][builds[0].index("--target") + 1:]
        self.assertEqual(target, ["quantd", "quantctl"])

    def test_installs_the_server_and_cli_components_stripped(self):
        for run_tests in ("0", "1"):
            proc, calls = self.run_script({"RUN_TESTS": run_tests})
            self.assertEqual(proc.returncode, 0, proc.stderr)
            installs = [c for c in self.with_tool(calls, "cmake")
                        if "--install" in c]
            components = sorted(c[c.index("--component") + 1]
                                for c in installs)
            self.assertEqual(components, ["cli", "server"])
            for c in installs:
                self.assertIn("--strip", c)
                self.assertTrue(c[c.index("--prefix") + 1].endswith("/out"))

    def test_a_failing_unit_test_stops_the_build_before_installing(self):
        proc, calls = self.run_script({"RUN_TESTS": "1"}, ctest_rc=8)
        self.assertNotEqual(proc.returncode, 0)
        self.assertFalse(any("--install" in c for c in calls))

    def test_rejects_a_run_tests_value_other_than_0_or_1(self):
        proc, calls = self.run_script({"RUN_TESTS": "yes"})
        self.assertEqual(proc.returncode, 2)
        self.assertIn("RUN_TESTS must be 0 or 1", proc.stderr)
        self.assertEqual(calls, [])

    def test_scripts_pass_shellcheck(self):
        shellcheck = shutil.which("shellcheck")
        if shellcheck is None:
            self.skipTest("shellcheck is not installed")
        for script in SCRIPTS:
            if not os.path.exists(script):
                continue
            self.assertTrue(os.access(script, os.X_OK), script)
            proc = subprocess.run([shellcheck, "-x", script],
                                  capture_output=True, text=True,
                                  check=False)
            self.assertEqual(proc.returncode, 0, proc.stdout)


def cc_test_blocks(cmake_text):
    """{test target: (sources, labels)} of the quantd_cc_test() calls."""
    blocks = {}
    for body in re.findall(r"quantd_cc_test\((.*?)\)\s*$", cmake_text,
                           re.S | re.M):
        words = re.sub(r"#[^\n]*", "", body).split()
        current, fields = None, {}
        for word in words:
            if word in ("NAME", "SRCS", "DEPS", "LABELS", "TIMEOUT",
                        "FIXTURE", "COST"):
                current = word
                fields.setdefault(word, [])
            elif current:
                fields[current].append(word)
        blocks[fields["NAME"][0]] = (fields.get("SRCS", []),
                                     fields.get("LABELS", []))
    return blocks


def ctest_tests(selection):
    """[(test name, labels)] that ctest would run in BUILD_DIR."""
    proc = subprocess.run(
        ["ctest", "--test-dir", BUILD_DIR, "--show-only=json-v1"] + selection,
        capture_output=True, text=True, check=True)
    tests = []
    for test in json.loads(proc.stdout)["tests"]:
        labels = next((p["value"] for p in test.get("properties", [])
                       if p["name"] == "LABELS"), [])
        tests.append((test["name"], labels))
    return tests


class UnitTestSelectionTest(unittest.TestCase):
    """The image's tests need nothing outside the repository."""

    def test_every_test_reading_shared_fixtures_is_labelled(self):
        # A test source that reads ../shared/fixtures (directly or through
        # tpc_test_util.h's FixturePath) builds only into tests labelled
        # core_shared_fixtures, which the image leaves out.
        readers = []
        for path in glob.glob(os.path.join(deploy_lib.SOURCE_DIR, "tests",
                                           "**", "*.cc"), recursive=True):
            with open(path, errors="replace") as f:
                text = f.read()
            if "../shared" in text or "FixturePath(" in text:
                readers.append(path)
        self.assertTrue(readers)
        for path in readers:
            folder = os.path.dirname(path)
            cmake = os.path.join(folder, "CMakeLists.txt")
            with open(cmake) as f:
                blocks = cc_test_blocks(f.read())
            targets = [(name, labels) for name, (srcs, labels)
                       in blocks.items() if os.path.basename(path) in srcs]
            rel = os.path.relpath(path, deploy_lib.SOURCE_DIR)
            if rel.startswith(os.path.join("tests", "e2e")):
                continue  # e2e: not a unit test label at all
            self.assertTrue(targets, f"{rel}: no quantd_cc_test builds it")
            for name, labels in targets:
                self.assertEqual(labels, ["core_shared_fixtures"],
                                 f"{name} ({rel})")
                self.assertNotRegex(labels[0], build_stage_selection())

    def test_selection_in_a_ctest_tree_has_only_unit_tests(self):
        if BUILD_DIR is None:
            self.skipTest("no --build-dir given")
        if not any("core" in labels for _, labels in ctest_tests([])):
            # gtest cases are discovered from built binaries only.
            self.skipTest(f"the unit test binaries in {BUILD_DIR} are not built")
        tests = ctest_tests(["-L", build_stage_selection(), "-FA", ".*"])
        labels_seen = set()
        for test, labels in tests:
            labels_seen.update(labels)
            for label in labels:
                self.assertIn(label, ("core", "server", "farm"),
                              f"{test} has label {label}")
        # Discovered gtest cases from each unit label, not just placeholders.
        self.assertEqual(labels_seen, {"core", "server", "farm"})
        self.assertGreater(len(tests), 100)


if __name__ == "__main__":
    if "--build-dir" in sys.argv:
        i = sys.argv.index("--build-dir")
        BUILD_DIR = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    deploy_lib.main()
