"""`cmake --install` and the CPack .deb (cmake/install.cmake).

Installs the built tree into a temporary prefix and checks the files, runs
the installed binaries and imports the installed Python client; then builds
the .deb with `cpack -G DEB` into a temporary folder and checks its file list
and its Depends (dpkg-shlibdeps). Usage: install_test.py --build-dir DIR
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import deploy_lib

BUILD_DIR = None
PYTHONDIR = "lib/python3/dist-packages"
# Every file a complete install must hold, relative to the prefix.
EXPECTED = (
    "bin/quantd",
    "bin/quantctl",
    "share/quantd/tpc/example_cpu.json",
    "share/doc/quantd/README.md",
    "share/doc/quantd/farm.md",
    f"{PYTHONDIR}/quantd/__init__.py",
    f"{PYTHONDIR}/quantd/grpc_client.py",
    f"{PYTHONDIR}/quantd/v1/quantization_service_pb2_grpc.py",
    f"{PYTHONDIR}/quantd/_health/health_pb2.py",
)


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, check=False,
                          **kwargs)


def project_version():
    """CMAKE_PROJECT_VERSION from the build tree's cache."""
    with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("CMAKE_PROJECT_VERSION:"):
                return line.strip().partition("=")[2]
    raise AssertionError("CMAKE_PROJECT_VERSION not in CMakeCache.txt")


class InstallTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.prefix = os.path.join(cls.tmp.name, "prefix")
        cls.proc = run(["cmake", "--install", BUILD_DIR, "--prefix",
                        cls.prefix])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_install_succeeds(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)

    def test_installs_binaries_tpc_docs_and_python_client(self):
        for rel in EXPECTED:
            self.assertTrue(os.path.isfile(os.path.join(self.prefix, rel)),
                            f"{rel} not installed")
        for name in ("quantd", "quantctl"):
            self.assertTrue(os.access(os.path.join(self.prefix, "bin", name),
                                      os.X_OK), name)

    def test_installed_quantd_prints_the_project_version(self):
        proc = run([os.path.join(self.prefix, "bin", "quantd"), "--version"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"quantd {project_version()}", proc.stdout)

    def test_installed_quantctl_prints_the_project_version(self):
        proc = run([os.path.join(self.prefix, "bin", "quantctl"), "version"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(project_version(), proc.stdout)

    def test_installed_python_client_imports_from_the_prefix_alone(self):
        env = dict(os.environ,
                   PYTHONPATH=os.path.join(self.prefix, PYTHONDIR),
                   PYTHONDONTWRITEBYTECODE="1")
        proc = run(["/usr/bin/python3", "-c",
                    "import quantd, quantd.grpc_client as c;"
                    "from quantd.v1 import job_pb2;"
                    "from quantd._health import health_pb2;"
                    "print(c.__file__)"],
                   env=env, cwd=self.tmp.name)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # Imported from the prefix, not from the source or build tree.
        self.assertTrue(proc.stdout.strip().startswith(self.prefix),
                        proc.stdout)

    def test_installed_tpc_files_pass_quantctl_tpc_validate(self):
        # The installed TPC folder is a valid --tpc_dir: `quantctl tpc
        # validate` accepts every file in it.
        tpc_dir = os.path.join(self.prefix, "share", "quantd", "tpc")
        for name in sorted(os.listdir(tpc_dir)):
            proc = run([os.path.join(self.prefix, "bin", "quantctl"), "tpc",
                        "validate", os.path.join(tpc_dir, name)])
            self.assertEqual(proc.returncode, 0,
                             f"{name}: {proc.stdout}{proc.stderr}")


class DebPackageTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps"):
            if shutil.which(tool) is None:
                raise unittest.SkipTest(f"{tool} is not installed")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.proc = run(["cpack", "-G", "DEB", "--config",
                        os.path.join(BUILD_DIR, "CPackConfig.cmake"),
                        "-B", cls.tmp.name])
        cls.debs = [os.path.join(cls.tmp.name, f)
                    for f in os.listdir(cls.tmp.name) if f.endswith(".deb")]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def deb(self):
        self.assertEqual(self.proc.returncode, 0,
                         self.proc.stdout + self.proc.stderr)
        self.assertEqual(len(self.debs), 1, self.debs)
        return self.debs[0]

    def field(self, name):
        proc = run(["dpkg-deb", "-f", self.deb(), name])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout.strip()

    def test_one_deb_named_after_the_project_version(self):
        self.assertEqual(self.field("Package"), "quantd")
        self.assertEqual(self.field("Version"), project_version())
        self.assertTrue(os.path.basename(self.deb()).startswith(
            f"quantd_{project_version()}_"))

    def test_deb_holds_every_installed_file_under_usr(self):
        proc = run(["dpkg-deb", "-c", self.deb()])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        paths = {line.split()[-1].lstrip(".") for line in
                 proc.stdout.splitlines()}
        for rel in EXPECTED:
            self.assertIn(f"/usr/{rel}", paths)

    def test_deb_depends_on_the_grpc_runtime_and_python_client_libraries(self):
        depends = [d.strip().split()[0]
                   for d in self.field("Depends").split(",")]
        # From dpkg-shlibdeps (the binaries' libraries) and the Python
        # client's imports.
        for package in ("libc6", "python3-grpcio", "python3-protobuf"):
            self.assertIn(package, depends)
        for prefix in ("libgrpc++", "libprotobuf", "libabsl"):
            self.assertTrue(any(d.startswith(prefix) for d in depends),
                            f"no {prefix}* in {depends}")


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    args, rest = parser.parse_known_args()
    return args, rest


if __name__ == "__main__":
    ARGS, REST = parse_args()
    BUILD_DIR = os.path.abspath(ARGS.build_dir)
    sys.argv = [sys.argv[0]] + REST
    deploy_lib.main()
