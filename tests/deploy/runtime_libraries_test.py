"""The Dockerfile's runtime packages provide every shared library the binaries
load.

The oracle is this Debian machine: `ldd` lists what the built binaries load,
`dpkg-query -S` names the package that ships each library, and the Depends of
the runtime stage's packages (plus what debian:bookworm-slim already has: the
Priority required set and apt) must cover them. A package name that Debian
does not know would fail `apt-get install` in the image build, so every name
must also be known to dpkg or apt here.

Usage: runtime_libraries_test.py BINARY... [-- unittest args]
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

import deploy_lib
import dockerfile_test

BINARIES = []  # from the command line


def shared_libraries(binary):
    """Resolved paths of the shared libraries `binary` loads (ldd)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True,
                         check=True).stdout
    missing = [l.split()[0] for l in out.splitlines() if "not found" in l]
    if missing:
        raise AssertionError(f"{binary}: unresolved libraries {missing}")
    return sorted(set(re.findall(r"=>\s+(/\S+)", out)))


def owning_packages(paths):
    """{path: Debian package that ships it} (merged-/usr aware), one query."""
    candidates = {}
    for path in paths:
        real = os.path.realpath(path)
        forms = [path, real]
        for p in (path, real):
            forms.append(p[len("/usr"):] if p.startswith("/usr/")
                         else "/usr" + p)
        candidates[path] = forms
    everything = sorted({f for forms in candidates.values() for f in forms})
    out = subprocess.run(["dpkg-query", "-S"] + everything, capture_output=True,
                         text=True, check=False).stdout
    shipped = {}
    for line in out.splitlines():
        package, sep, shipped_path = line.partition(": ")
        if sep and shipped_path.strip() in everything:
            shipped[shipped_path.strip()] = package.split(",")[0].split(":")[0]
    owners = {}
    for path, forms in candidates.items():
        owner = next((shipped[f] for f in forms if f in shipped), None)
        if owner is None:
            raise AssertionError(f"no Debian package ships {path}")
        owners[path] = owner
    return owners


class Dpkg:
    """The installed-package database, read once."""

    def __init__(self):
        out = subprocess.run(
            ["dpkg-query", "-W", "-f",
             "${Package}\t${Status}\t${Priority}\t${Depends}\t"
             "${Pre-Depends}\n"],
            capture_output=True, text=True, check=True).stdout
        self.installed, self.priority, self.relations = set(), {}, {}
        for line in out.splitlines():
            name, status, priority, depends, pre_depends = line.split("\t")
            if not status.endswith(" installed"):
                continue
            self.installed.add(name)
            self.priority[name] = priority
            self.relations[name] = depends + "," + pre_depends

    def closure(self, packages):
        """`packages` and all they Depend/Pre-Depend on, as installed here."""
        seen, todo = set(), [p for p in packages if p in self.installed]
        while todo:
            package = todo.pop()
            if package in seen:
                continue
            seen.add(package)
            for alternative in self.relations[package].split(","):
                for choice in alternative.split("|"):
                    name = choice.strip().split(" ")[0].split(":")[0]
                    if name in self.installed:
                        todo.append(name)
                        break
        return seen

    def slim_base(self):
        """What debian:bookworm-slim has before any install: required + apt."""
        return self.closure([p for p, prio in self.priority.items()
                             if prio == "required"] + ["apt"])

    def known(self, package):
        if package in self.installed:
            return True
        proc = subprocess.run(
            ["apt-cache", "show", "--no-all-versions", package],
            capture_output=True, text=True, check=False)
        return proc.returncode == 0 and "Package: " in proc.stdout


def simulate_install(packages, base_packages, tmp_dir):
    """apt-get's own resolver installing `packages` on a system that has only
    `base_packages` (their stanzas of the dpkg status file). Returns
    (returncode, packages apt would install, output)."""
    with open("/var/lib/dpkg/status") as f:
        stanzas = f.read().split("\n\n")
    keep = [st for st in stanzas
            if re.match(r"Package: (\S+)", st)
            and re.match(r"Package: (\S+)", st).group(1) in base_packages]
    status = os.path.join(tmp_dir, "status")
    with open(status, "w") as f:
        f.write("\n\n".join(keep) + "\n")
    proc = subprocess.run(
        ["apt-get", "-s", "-o", f"Dir::State::status={status}",
         "-o", "Debug::NoLocking=1", "install", "--no-install-recommends"]
        + list(packages), capture_output=True, text=True, check=False)
    installed = set(re.findall(r"^Inst (\S+)", proc.stdout, re.MULTILINE))
    return proc.returncode, installed, proc.stdout + proc.stderr


class RuntimeLibrariesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(dockerfile_test.DOCKERFILE) as f:
            stages = dockerfile_test.parse_stages(
                dockerfile_test.parse_dockerfile(f.read()))
        cls.runtime_packages = dockerfile_test.apt_install_packages(
            stages[-1].runs())
        cls.dpkg = Dpkg()

    def test_binaries_were_given_and_built(self):
        self.assertIn("quantctl", [os.path.basename(b) for b in BINARIES])
        for binary in BINARIES:
            self.assertTrue(os.access(binary, os.X_OK),
                            f"{binary} is not built (build before ctest)")

    def test_every_runtime_package_name_is_a_debian_package(self):
        for package in self.runtime_packages:
            self.assertTrue(self.dpkg.known(package),
                            f"'{package}': not installed, not in apt's lists")

    def test_runtime_packages_provide_every_loaded_library(self):
        provided = self.dpkg.closure(self.runtime_packages)
        provided |= self.dpkg.slim_base()
        for binary in BINARIES:
            owners = owning_packages(shared_libraries(binary))
            for library, package in sorted(owners.items()):
                with self.subTest(binary=os.path.basename(binary),
                                  library=library):
                    self.assertTrue(
                        package in provided,
                        f"{library} comes from '{package}': add it to the "
                        "runtime stage's apt-get install in docker/Dockerfile")

    def test_runtime_packages_install_on_a_slim_base(self):
        # apt's resolver against bookworm's package lists, starting from
        # what the slim image has: what it would install must ship every
        # library the binaries load.
        policy = subprocess.run(["apt-cache", "policy", "tini"],
                                capture_output=True, text=True, check=False)
        if ("Candidate" not in policy.stdout
                or "Candidate: (none)" in policy.stdout):
            self.skipTest("apt has no package lists here (run apt-get update)")
        base = self.dpkg.slim_base()
        with tempfile.TemporaryDirectory() as tmp:
            rc, installed, output = simulate_install(self.runtime_packages,
                                                     base, tmp)
        self.assertEqual(rc, 0, output[-3000:])
        for package in self.runtime_packages:
            self.assertIn(package, installed | base)
        for binary in BINARIES:
            owners = owning_packages(shared_libraries(binary))
            for library, package in sorted(owners.items()):
                with self.subTest(binary=os.path.basename(binary),
                                  library=library):
                    self.assertTrue(package in installed | base,
                                    f"{library} ({package}) would be missing")


if __name__ == "__main__":
    args = sys.argv[1:]
    split = args.index("--") if "--" in args else len(args)
    BINARIES = args[:split]
    sys.argv = sys.argv[:1] + args[split + 1:]
    for tool in ("ldd", "dpkg-query"):
        deploy_lib.require_tool(tool)
    deploy_lib.main()
